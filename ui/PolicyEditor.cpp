// SPDX-License-Identifier: Apache-2.0
#include "PolicyEditor.h"

#include "SecretsDialog.h"
#include "StatusText.h"
#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "policy/Policy.h"
#include "policy/PolicyDiff.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QSaveFile>
#include <QScopedValueRollback>
#include <QTabWidget>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace airlock::ui {

namespace {
QStringList decisions()
{
    return {QStringLiteral("allow"), QStringLiteral("ask"), QStringLiteral("deny")};
}

// A decision chooser with "inherited" (the key left out of this layer) first.
QComboBox *decisionBox(const QStringList &decisions)
{
    auto *box = new QComboBox;
    box->addItem(QObject::tr("(inherited)"), QString());
    for (const QString &d : decisions)
        box->addItem(d, d);
    return box;
}
} // namespace

PolicyEditor::PolicyEditor(DaemonClient &client, const QString &sandbox, QWidget *parent)
    : QDialog(parent)
    , m_client(client)
    , m_sandbox(sandbox)
    , m_mode(new QLabel)
    , m_unknown(decisionBox({QStringLiteral("deny"), QStringLiteral("ask")}))
    , m_allow(new HostListEditor(tr("Allowed destinations"), true))
    , m_deny(new HostListEditor(tr("Denied destinations (deny beats allow)"), false))
    , m_commandDefault(decisionBox({QStringLiteral("allow"), QStringLiteral("ask"), QStringLiteral("deny")}))
    , m_rules(new RowListEditor(
          {{tr("Decision"), RowColumn::Choice, decisions(), tr("allow, ask or deny: the strictest matching rule wins")},
              {tr("Command (words, each may be a glob)"), RowColumn::Text, {},
                  tr("The words a command starts with: pip install, git *, rm -rf")},
              {tr("Exact"), RowColumn::Check, {}, tr("Checked: the whole command word for word, no globs")}},
          {QStringLiteral("ask"), QString(), QString()}))
    , m_grants(new RowListEditor(
          {{tr("Secret"), RowColumn::Choice, {}, tr("A secret from your store (its value is never shown)")},
              {tr("As"), RowColumn::Choice, {QStringLiteral("env"), QStringLiteral("file")},
                  tr("An environment variable, or a read-only file")},
              {tr("Variable or path"), RowColumn::Text, {},
                  tr("The variable's name (API_KEY), or the file's absolute path")}},
          {QString(), QStringLiteral("env"), QString()}))
    , m_tools(
          new RowListEditor({{tr("Tool"), RowColumn::Text, {}, tr("A tool declared on this host (airlockctl tool ls)")},
                                {tr("Decision"), RowColumn::Choice, decisions(),
                                    tr("allow, ask or deny; a tool no layer names is denied")},
                                {tr("Argument constraints (arg=glob; …)"), RowColumn::Text, {},
                                    tr("Globs each argument must match: to=*@example.com; subject=*")},
                                {tr("What it does"), RowColumn::Shown, {}, tr("The tool's description, as declared")}},
              {QString(), QStringLiteral("ask"), QString(), QString()}))
    , m_effective(new QTreeWidget)
    , m_fixed(new QTreeWidget)
    , m_json(new QPlainTextEdit)
    , m_tabs(new QTabWidget)
    , m_diff(new QPlainTextEdit)
    , m_try(new QLineEdit)
    , m_tryAnswer(new QLabel)
    , m_tryTimer(new QTimer(this))
    , m_apply(new QPushButton(tr("Apply")))
    , m_status(new QLabel)
{
    setWindowTitle(sandbox.isEmpty() ? tr("Your defaults for new sandboxes")
                                     : tr("Policy of %1").arg(display::escaped(sandbox, 80)));
    resize(860, 720);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);

    // Network: the lists apply to the next connection; the mode is fixed while the sandbox runs.
    auto *network = new QWidget;
    auto *networkLayout = new QVBoxLayout(network);
    auto *lists = new QHBoxLayout;
    lists->addWidget(m_allow);
    lists->addWidget(m_deny);
    networkLayout->addLayout(lists, 1);
    auto *unknownRow = new QHBoxLayout;
    unknownRow->addWidget(new QLabel(tr("Destinations no rule names:")));
    unknownRow->addWidget(m_unknown);
    unknownRow->addStretch(1);
    networkLayout->addLayout(unknownRow);

    auto *commands = new QWidget;
    auto *commandsLayout = new QVBoxLayout(commands);
    auto *defaultRow = new QHBoxLayout;
    defaultRow->addWidget(new QLabel(tr("An agent's command no rule matches:")));
    defaultRow->addWidget(m_commandDefault);
    defaultRow->addStretch(1);
    commandsLayout->addLayout(defaultRow);
    auto *rulesHelp = new QLabel(
        tr("Rules match the start of each command a string would run, word by word; the strictest matching rule "
           "wins (deny beats ask beats allow), so their order does not matter. Greyed rows are in force from "
           "another layer: Override copies one here to make it stricter."));
    rulesHelp->setWordWrap(true);
    commandsLayout->addWidget(rulesHelp);
    commandsLayout->addWidget(m_rules, 1);

    auto *credentials = new QWidget;
    auto *credentialsLayout = new QVBoxLayout(credentials);
    auto *grantsHelp = new QLabel(
        tr("A secret from your store (pick one, or New secret…) given to every execution as an environment "
           "variable, or as a read-only file (files are fixed while the sandbox runs). Values are never shown."));
    grantsHelp->setWordWrap(true);
    credentialsLayout->addWidget(grantsHelp);
    credentialsLayout->addWidget(m_grants, 1);

    auto *tools = new QWidget;
    auto *toolsLayout = new QVBoxLayout(tools);
    auto *toolsHelp = new QLabel(
        tr("Host tools this sandbox may call (airlock-tool NAME inside), one row each: a tool no layer names is "
           "denied. Override a greyed row to choose its decision here, and globs each argument must match."));
    toolsHelp->setWordWrap(true);
    toolsLayout->addWidget(toolsHelp);
    toolsLayout->addWidget(m_tools, 1);

    // Everything in force, with the layer it comes from: built-in, your defaults, the preset, this sandbox.
    for (QTreeWidget *view : {m_effective, m_fixed}) {
        view->setHeaderLabels({tr("Setting"), tr("Value"), tr("Set by")});
        view->setRootIsDecorated(false);
        view->setUniformRowHeights(true);
    }
    auto *fixed = new QWidget;
    auto *fixedLayout = new QVBoxLayout(fixed);
    auto *fixedHelp = new QLabel(sandbox.isEmpty()
            ? tr("The rest of your defaults, with the layer each value comes from; edit them in the JSON tab.")
            : tr("Mounts, limits, the network mode and the exec check are fixed when a sandbox is created: "
                 "to change them, duplicate the sandbox with another policy."));
    fixedHelp->setWordWrap(true);
    fixedLayout->addWidget(fixedHelp);
    fixedLayout->addWidget(m_fixed, 1);

    auto *json = new QWidget;
    auto *jsonLayout = new QVBoxLayout(json);
    m_json->setReadOnly(true);
    m_json->setFont(mono);
    jsonLayout->addWidget(new QLabel(tr("This sandbox's own layer, as it would be applied:")));
    jsonLayout->addWidget(m_json, 1);
    auto *fileRow = new QHBoxLayout;
    auto *importButton = new QPushButton(tr("Import…"));
    auto *exportButton = new QPushButton(tr("Export…"));
    fileRow->addWidget(importButton);
    fileRow->addWidget(exportButton);
    fileRow->addStretch(1);
    jsonLayout->addLayout(fileRow);
    connect(importButton, &QPushButton::clicked, this, [this] {
        const QString path
            = QFileDialog::getOpenFileName(this, tr("Import a policy layer"), {}, tr("Policies (*.json)"));
        QString error;
        if (!path.isEmpty() && !importFile(path, &error))
            m_status->setText(error);
    });
    connect(exportButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export this layer"),
            (m_sandbox.isEmpty() ? QStringLiteral("defaults") : m_sandbox) + QStringLiteral(".policy.json"),
            tr("Policies (*.json)"));
        QString error;
        if (!path.isEmpty())
            m_status->setText(exportFile(path, &error) ? tr("Exported to %1").arg(path) : error);
    });

    m_tabs->addTab(network, tr("Network"));
    m_tabs->addTab(commands, tr("Commands"));
    m_tabs->addTab(credentials, tr("Credentials"));
    m_tabs->addTab(tools, tr("Tools"));
    m_tabs->addTab(fixed, tr("Filesystem && limits"));
    m_tabs->addTab(m_effective, tr("Everything in force"));
    m_tabs->addTab(json, tr("JSON"));

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_mode); // the preset, explained, and what greyed rows are: above every section
    layout->addWidget(m_tabs, 4);
    layout->addWidget(new QLabel(tr("Changes, against the saved policy:")));
    m_diff->setReadOnly(true); // every line, however many: a change must not scroll out of the record
    m_diff->setFont(mono);
    layout->addWidget(m_diff, 1);
    auto *tryBox = new QGroupBox(tr("What would happen"));
    auto *tryLayout = new QVBoxLayout(tryBox);
    m_try->setPlaceholderText(tr("a URL (https://pypi.org/simple), a command (make && curl x | sh) or a tool call "
                                 "(tool email.send {\"to\": \"a@b.c\"})"));
    m_tryAnswer->setTextFormat(Qt::PlainText);
    m_tryAnswer->setWordWrap(true);
    tryLayout->addWidget(m_try);
    tryLayout->addWidget(m_tryAnswer);
    layout->addWidget(tryBox);
    tryBox->setVisible(!sandbox.isEmpty()); // the checker needs a sandbox to ask about
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText);
    layout->addWidget(m_status);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    buttons->addButton(m_apply, QDialogButtonBox::ApplyRole);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_apply, &QPushButton::clicked, this, &PolicyEditor::apply);
    for (HostListEditor *list : {m_allow, m_deny})
        connect(list, &HostListEditor::changed, this, &PolicyEditor::updateDiff);
    connect(m_allow, &HostListEditor::blockRequested, m_deny, &HostListEditor::addHosts);
    connect(m_grants, &RowListEditor::specialChosen, this, &PolicyEditor::newSecret);
    m_rules->setOverridable(true);
    m_tools->setOverridable(true);
    m_tools->setKeyed(true);
    const QString own = sandbox.isEmpty() ? QStringLiteral("user") : QStringLiteral("sandbox");
    for (HostListEditor *list : {m_allow, m_deny})
        list->setOwnLayerName(own);
    for (RowListEditor *rows : {m_rules, m_grants, m_tools})
        rows->setOwnLayerName(own);
    m_mode->setWordWrap(true);
    m_mode->setTextFormat(Qt::PlainText);
    m_unknown->setToolTip(tr("A destination neither list names: deny, or ask a person"));
    m_commandDefault->setToolTip(tr("An agent's command that no rule matches: allow, ask a person, or deny"));
    m_try->setToolTip(tr("Asks the daemon what the policy in force, and the edit before you apply it, would do"));
    for (RowListEditor *rows : {m_rules, m_grants, m_tools})
        connect(rows, &RowListEditor::changed, this, &PolicyEditor::updateDiff);
    for (QComboBox *box : {m_unknown, m_commandDefault})
        connect(box, &QComboBox::currentIndexChanged, this, &PolicyEditor::updateDiff);
    m_tryTimer->setSingleShot(true);
    m_tryTimer->setInterval(250);
    connect(m_tryTimer, &QTimer::timeout, this, &PolicyEditor::tryNow);
    connect(m_try, &QLineEdit::textChanged, m_tryTimer, qOverload<>(&QTimer::start));
    m_apply->setToolTip(tr("Send this layer to the daemon: it applies to the next connection and the next request"));
    m_apply->setEnabled(false);
    load();
}

void PolicyEditor::load()
{
    loadChoices();
    if (m_sandbox.isEmpty()) { // the person's defaults: their layer over the built-in one
        DaemonApi(m_client).userDefaults().then([self = QPointer<PolicyEditor>(this)](Result<QJsonObject> r) {
            if (!self)
                return;
            if (!r)
                return showStatus(self->m_status, r.error().message, true);
            const QJsonObject &o = *r;
            self->showEffective({{QStringLiteral("policy"), o.value(QStringLiteral("effective"))},
                {QStringLiteral("sources"), o.value(QStringLiteral("sources"))},
                {QStringLiteral("below"), o.value(QStringLiteral("below"))}});
            self->m_mode->setText(tr("Your defaults, in %1: every new sandbox starts from them, then its preset "
                                     "and its own layer apply on top. "
                                     "Running sandboxes keep what they started with.")
                                      .arg(display::escaped(o.value(QStringLiteral("file")).toString(), 300)));
            self->m_saved = o.value(QStringLiteral("policy")).toObject();
            self->editLayer(self->m_saved);
            self->m_pendingParts = 1;
            self->partLoaded();
        });
        return;
    }
    reloadEffective();
    DaemonApi(m_client).policy(m_sandbox).then([self = QPointer<PolicyEditor>(this)](Result<QJsonObject> own) {
        if (!self)
            return;
        if (!own)
            return showStatus(self->m_status, own.error().message, true);
        self->m_saved = own->value(QStringLiteral("policy")).toObject();
        self->editLayer(self->m_saved);
        self->partLoaded();
    });
}

void PolicyEditor::reloadEffective()
{
    const DaemonApi api(m_client);
    api.policy(m_sandbox, true).then([self = QPointer<PolicyEditor>(this)](Result<QJsonObject> effective) {
        if (!self)
            return;
        if (!effective)
            return showStatus(self->m_status, effective.error().message, true);
        self->showEffective(*effective);
        self->partLoaded();
    });
    api.listTools(m_sandbox).then([self = QPointer<PolicyEditor>(this)](Result<QJsonObject> r) {
        if (!self || !r)
            return;
        self->m_declaredTools = r->value(QStringLiteral("tools")).toArray();
        self->showInherited();
    });
}

void PolicyEditor::loadChoices()
{
    // The secrets a grant can name, and what each preset is for.
    const DaemonApi api(m_client);
    api.listSecrets().then([self = QPointer<PolicyEditor>(this)](Result<QJsonObject> r) {
        if (!self)
            return;
        QStringList names;
        for (const QJsonValue &v : r ? r->value(QStringLiteral("secrets")).toArray() : QJsonArray())
            names.append(v.toObject().value(QStringLiteral("name")).toString());
        self->m_grants->setChoices(0, names, tr("New secret…"));
    });
    api.policyPresets().then([self = QPointer<PolicyEditor>(this)](Result<QJsonObject> r) {
        if (!self || !r)
            return;
        for (const QJsonValue &v : r->value(QStringLiteral("presets")).toArray())
            self->m_presets.insert(v.toObject().value(QStringLiteral("name")).toString(),
                v.toObject().value(QStringLiteral("policy")).toObject().value(QStringLiteral("description")));
        if (!self->m_inForce.isEmpty() && !self->m_sandbox.isEmpty())
            self->showEffective(self->m_inForce);
    });
}

SecretsDialog *PolicyEditor::secretDialog() const
{
    return m_secretDialog;
}

void PolicyEditor::newSecret(QTreeWidgetItem *item, int column)
{
    // The secrets page, for one new secret; its name goes into the cell once it is stored.
    auto *dialog = new SecretsDialog(m_client, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("New secret"));
    const int row = m_grants->tree()->indexOfTopLevelItem(item);
    connect(dialog, &SecretsDialog::stored, this, [this, dialog, row, column](const QString &name) {
        loadChoices();
        if (QTreeWidgetItem *cell = m_grants->tree()->topLevelItem(row))
            cell->setText(column, name);
        dialog->close();
    });
    m_secretDialog = dialog;
    dialog->open();
    dialog->nameEdit()->setFocus();
}

QString PolicyEditor::problem() const
{
    // Mounts are the daemon's to check (on its machine, which may not be this one): the rest here.
    QJsonObject layer = edited();
    layer.remove(QStringLiteral("filesystem"));
    const Status valid = policy::validate(layer);
    return valid ? QString() : valid.error().message;
}

bool PolicyEditor::importFile(const QString &path, QString *error)
{
    QFile file(path);
    QJsonParseError parse{};
    const QJsonDocument doc = file.open(QIODevice::ReadOnly)
        ? QJsonDocument::fromJson(file.read(4 * 1024 * 1024), &parse)
        : QJsonDocument();
    QString why;
    if (!file.isOpen())
        why = tr("Cannot read %1: %2").arg(path, file.errorString());
    else if (parse.error != QJsonParseError::NoError || !doc.isObject())
        why = tr("%1 is not a JSON object: %2").arg(path, parse.errorString());
    else if (Status valid = policy::validate(doc.object()); !valid)
        why = tr("%1 is not a valid policy: %2").arg(path, valid.error().message);
    if (!why.isEmpty()) {
        if (error)
            *error = why;
        return false;
    }
    editLayer(doc.object());
    m_status->setText(tr("Imported %1: review the changes, then Apply.").arg(path));
    return true;
}

bool PolicyEditor::exportFile(const QString &path, QString *error) const
{
    QSaveFile file(path);
    const QByteArray json = QJsonDocument(edited()).toJson(QJsonDocument::Indented);
    if (file.open(QIODevice::WriteOnly) && file.write(json) == json.size() && file.commit())
        return true;
    if (error)
        *error = tr("Cannot write %1: %2").arg(path, file.errorString());
    return false;
}

QString PolicyEditor::diffText() const
{
    return m_diff->toPlainText();
}

void PolicyEditor::updateDiff()
{
    const QJsonObject layer = edited();
    const policy::Changes changes = policy::diff(m_saved, layer);
    QStringList lines = changes.lines;
    if (changes.reordered)
        lines.append(tr("(the same rules in another order)"));
    if (lines.size() > 20) // many: the count first, so none is mistaken for all of them
        lines.prepend(tr("%n changes:", nullptr, int(changes.lines.size())));
    m_diff->setPlainText(lines.isEmpty() ? tr("(no changes)") : lines.join(QLatin1Char('\n')));
    m_json->setPlainText(QString::fromUtf8(QJsonDocument(layer).toJson(QJsonDocument::Indented)));
    const QString invalid = problem();
    if (!invalid.isEmpty())
        m_status->setText(tr("Not a valid policy yet: %1").arg(invalid));
    else if (m_status->text().startsWith(tr("Not a valid policy yet")))
        m_status->clear();
    m_apply->setEnabled(m_loaded && !changes.isEmpty() && invalid.isEmpty());
    if (!m_try->text().trimmed().isEmpty())
        m_tryTimer->start(); // the pending edit changed: ask again
}

void PolicyEditor::apply()
{
    const QJsonObject layer = edited();
    m_apply->setEnabled(false);
    const bool defaults = m_sandbox.isEmpty();
    const DaemonApi api(m_client);
    (defaults ? api.setUserDefaults(layer) : api.setPolicy(m_sandbox, layer))
        .then([self = QPointer<PolicyEditor>(this), layer](Result<QJsonObject> r) {
            if (!self)
                return;
            if (!r) {
                self->m_status->setText(tr("Not applied: %1").arg(r.error().message));
                self->updateDiff();
                Q_EMIT self->applied(false, r.error().message);
                return;
            }
            self->m_saved = layer;
            self->m_editedBase = layer;
            if (!self->m_sandbox.isEmpty())
                self->reloadEffective(); // "everything in force" stays true
            self->tryNow(); // and "what would happen" answers for the new policy
            self->m_status->setText(self->m_sandbox.isEmpty()
                    ? tr("Saved: sandboxes created from now on start from these defaults.")
                    : tr("Applied: the next connection and the next request follow the new rules."));
            self->updateDiff();
            Q_EMIT self->applied(true, {});
        });
}

QString PolicyEditor::tryAnswer() const
{
    return m_tryAnswer->text();
}

void PolicyEditor::describeOwnTools()
{
    QMap<QString, QString> described;
    for (const QJsonValue &v : m_declaredTools)
        described.insert(v.toObject().value(QStringLiteral("name")).toString(),
            v.toObject().value(QStringLiteral("description")).toString());
    const QSignalBlocker quiet(m_tools->tree()); // a description is not an edit
    const int own = int(m_tools->rows().size());
    for (int i = 0; i < own; ++i) {
        QTreeWidgetItem *item = m_tools->tree()->topLevelItem(i);
        item->setText(3,
            described.contains(item->text(0)) ? display::escaped(described.value(item->text(0)), 200)
                : m_declaredTools.isEmpty()   ? QString()
                                              : tr("(not declared on this host)"));
    }
}

void PolicyEditor::tryNow()
{
    const QString text = m_try->text().trimmed();
    if (text.isEmpty())
        return m_tryAnswer->clear();
    QJsonObject question;
    static const QRegularExpression toolCall(
        QStringLiteral("^tool\\s+(\\S+)\\s*(.*)$"), QRegularExpression::DotMatchesEverythingOption);
    if (text.startsWith(QLatin1String("http://")) || text.startsWith(QLatin1String("https://"))) {
        question.insert(QStringLiteral("url"), text);
    } else if (const auto m = toolCall.match(text); m.hasMatch()) {
        const QJsonDocument arguments = QJsonDocument::fromJson(m.captured(2).toUtf8());
        if (!m.captured(2).isEmpty() && !arguments.isObject())
            return m_tryAnswer->setText(tr("tool NAME {arguments as a JSON object}"));
        question.insert(QStringLiteral("tool"), m.captured(1));
        question.insert(QStringLiteral("arguments"), arguments.object());
    } else
        question.insert(QStringLiteral("argv"), QJsonArray{QStringLiteral("sh"), QStringLiteral("-c"), text});
    // With a pending edit that is a valid policy, the daemon judges it too: now → after Apply.
    const QJsonObject draft = edited();
    const bool pending = !policy::diff(m_saved, draft).isEmpty() && problem().isEmpty();
    if (pending)
        question.insert(QStringLiteral("policy"), draft);
    const QString asked
        = text + QString::number(qHash(QJsonDocument(draft).toJson(QJsonDocument::Compact))) + (pending ? u'+' : u'-');
    m_tryAsked = asked;
    DaemonApi(m_client)
        .checkPolicy(m_sandbox, question)
        .then([self = QPointer<PolicyEditor>(this), asked](Result<QJsonObject> r) {
            if (!self || self->m_tryAsked != asked)
                return; // typed or edited on since: a newer answer is coming
            if (!r)
                return self->m_tryAnswer->setText(r.error().message);
            const QJsonObject &o = *r;
            const auto said = [](const QJsonObject &v) {
                return QStringLiteral("%1: %2").arg(
                    display::escaped(v.value(QStringLiteral("decision")).toString(), 10),
                    display::escaped(v.value(QStringLiteral("reason")).toString()));
            };
            if (!o.contains(QStringLiteral("draft")))
                return self->m_tryAnswer->setText(said(o));
            const QJsonObject after = o.value(QStringLiteral("draft")).toObject();
            const QString now = display::escaped(o.value(QStringLiteral("decision")).toString(), 10),
                          then = display::escaped(after.value(QStringLiteral("decision")).toString(), 10);
            self->m_tryAnswer->setText(now == then
                    ? tr("now and after Apply: %1").arg(said(after))
                    : tr("now: %1 → after Apply: %2\nnow: %3\nafter Apply: %4").arg(now, then, said(o), said(after)));
        });
}

} // namespace airlock::ui
