// SPDX-License-Identifier: Apache-2.0
#include "PolicyEditor.h"

#include "client/DaemonClient.h"
#include "model/DisplayText.h"
#include "policy/Policy.h"
#include "policy/PolicyDiff.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QScopedValueRollback>
#include <QSaveFile>
#include <QTabWidget>
#include <QTreeWidget>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

namespace airlock::ui {

namespace {
QStringList strings(const QJsonValue &v)
{
    QStringList out;
    for (const QJsonValue &s : v.toArray())
        out.append(s.toString());
    return out;
}
} // namespace

HostListEditor::HostListEditor(const QString &title, QWidget *parent)
    : QWidget(parent), m_list(new QListWidget), m_input(new QLineEdit), m_add(new QPushButton(tr("Add"))), m_remove(new QPushButton(tr("Remove"))),
      m_error(new QLabel)
{
    auto *box = new QGroupBox(title);
    auto *layout = new QVBoxLayout(box);
    layout->addWidget(m_list);
    auto *row = new QHBoxLayout;
    m_input->setPlaceholderText(tr("example.com, *.example.com, host:443"));
    row->addWidget(m_input, 1);
    row->addWidget(m_add);
    row->addWidget(m_remove);
    layout->addLayout(row);
    m_error->setStyleSheet(QStringLiteral("color: #d03030"));
    m_error->setWordWrap(true);
    layout->addWidget(m_error);
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(box);
    connect(m_input, &QLineEdit::textChanged, this, &HostListEditor::check);
    connect(m_input, &QLineEdit::returnPressed, m_add, &QPushButton::click);
    connect(m_add, &QPushButton::clicked, this, [this] {
        auto normal = policy::normaliseHostPattern(m_input->text());
        if (!normal)
            return;
        if (!hosts().contains(*normal))
            m_list->addItem(*normal);
        m_input->clear();
        Q_EMIT changed();
    });
    connect(m_remove, &QPushButton::clicked, this, [this] {
        qDeleteAll(m_list->selectedItems());
        Q_EMIT changed();
    });
    m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    check();
}

void HostListEditor::setHosts(const QStringList &hosts)
{
    m_list->clear();
    m_list->addItems(hosts);
}

QStringList HostListEditor::hosts() const
{
    QStringList out;
    for (int i = 0; i < m_list->count(); ++i)
        out.append(m_list->item(i)->text());
    return out;
}

void HostListEditor::check()
{
    // Checked as it is typed, by the same rules the daemon applies.
    const QString text = m_input->text().trimmed();
    auto normal = text.isEmpty() ? Result<QString>(QString()) : policy::normaliseHostPattern(text);
    m_error->setText(normal ? (text.isEmpty() || *normal == text ? QString() : tr("will be stored as %1").arg(*normal)) : normal.error().message);
    m_error->setStyleSheet(normal ? QStringLiteral("color: palette(mid)") : QStringLiteral("color: #d03030"));
    m_add->setEnabled(!text.isEmpty() && normal);
}

RowListEditor::RowListEditor(const QStringList &headers, QStringList newRow, QWidget *parent)
    : QWidget(parent), m_tree(new QTreeWidget), m_newRow(std::move(newRow))
{
    m_tree->setHeaderLabels(headers);
    m_tree->setRootIsDecorated(false);
    m_tree->setUniformRowHeights(true);
    m_tree->setSelectionMode(QAbstractItemView::SingleSelection);
    m_tree->setDragDropMode(QAbstractItemView::InternalMove); // order is part of the policy
    m_tree->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed | QAbstractItemView::SelectedClicked);
    auto *add = new QPushButton(tr("Add"));
    auto *remove = new QPushButton(tr("Remove"));
    auto *up = new QPushButton(tr("Up"));
    auto *down = new QPushButton(tr("Down"));
    auto *buttons = new QHBoxLayout;
    for (QPushButton *b : {add, remove, up, down})
        buttons->addWidget(b);
    buttons->addStretch(1);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_tree, 1);
    layout->addLayout(buttons);
    connect(add, &QPushButton::clicked, this, [this] {
        addRow(m_newRow);
        m_tree->setCurrentItem(m_tree->topLevelItem(m_tree->topLevelItemCount() - 1));
        m_tree->editItem(m_tree->currentItem(), 0);
        Q_EMIT changed();
    });
    connect(remove, &QPushButton::clicked, this, [this] {
        delete m_tree->currentItem();
        Q_EMIT changed();
    });
    auto move = [this](int by) {
        QTreeWidgetItem *item = m_tree->currentItem();
        const int from = item ? m_tree->indexOfTopLevelItem(item) : -1;
        if (from < 0 || from + by < 0 || from + by >= m_tree->topLevelItemCount())
            return;
        m_tree->takeTopLevelItem(from);
        m_tree->insertTopLevelItem(from + by, item);
        m_tree->setCurrentItem(item);
        Q_EMIT changed();
    };
    connect(up, &QPushButton::clicked, this, [move] { move(-1); });
    connect(down, &QPushButton::clicked, this, [move] { move(1); });
    // Edits in place and drops change the rows; setRows() does not (it is not the person's change).
    auto edited = [this] {
        if (!m_quiet)
            Q_EMIT changed();
    };
    connect(m_tree, &QTreeWidget::itemChanged, this, edited);
    connect(m_tree->model(), &QAbstractItemModel::rowsMoved, this, edited);
    connect(m_tree->model(), &QAbstractItemModel::rowsInserted, this, edited); // a drop
}

void RowListEditor::addRow(const QStringList &cells)
{
    const QScopedValueRollback quiet(m_quiet, true);
    auto *item = new QTreeWidgetItem(cells);
    item->setFlags((item->flags() | Qt::ItemIsEditable | Qt::ItemIsDragEnabled) & ~Qt::ItemIsDropEnabled);
    m_tree->addTopLevelItem(item);
}

void RowListEditor::setRows(const QList<QStringList> &rows)
{
    const QScopedValueRollback quiet(m_quiet, true);
    m_tree->clear();
    for (const QStringList &row : rows)
        addRow(row);
    for (int c = 0; c < m_tree->columnCount(); ++c)
        m_tree->resizeColumnToContents(c);
}

QList<QStringList> RowListEditor::rows() const
{
    QList<QStringList> out;
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        QStringList cells;
        for (int c = 0; c < m_tree->columnCount(); ++c)
            cells.append(m_tree->topLevelItem(i)->text(c).trimmed());
        out.append(cells);
    }
    return out;
}

namespace {
// A decision chooser with "inherited" (the key left out of this layer) first.
QComboBox *decisionBox(const QStringList &decisions)
{
    auto *box = new QComboBox;
    box->addItem(QObject::tr("(inherited)"), QString());
    for (const QString &d : decisions)
        box->addItem(d, d);
    return box;
}

void setChoice(QComboBox *box, const QJsonValue &value)
{
    box->setCurrentIndex(std::max(0, box->findData(value.toString())));
}

void setOrRemove(QJsonObject &object, const QString &key, const QJsonValue &value, bool keep)
{
    if (keep)
        object.insert(key, value);
    else
        object.remove(key);
}
} // namespace

PolicyEditor::PolicyEditor(DaemonClient &client, const QString &sandbox, QWidget *parent)
    : QDialog(parent), m_client(client), m_sandbox(sandbox), m_mode(new QLabel), m_unknown(decisionBox({QStringLiteral("deny"), QStringLiteral("ask")})),
      m_allow(new HostListEditor(tr("Allowed destinations"))), m_deny(new HostListEditor(tr("Denied destinations (deny beats allow)"))),
      m_commandDefault(decisionBox({QStringLiteral("allow"), QStringLiteral("ask"), QStringLiteral("deny")})),
      m_rules(new RowListEditor({tr("Decision"), tr("Command (words, each may be a glob)"), tr("Exact")}, {QStringLiteral("ask"), QString(), QString()})),
      m_grants(new RowListEditor({tr("Secret"), tr("As (env or file)"), tr("Variable or path")}, {QString(), QStringLiteral("env"), QString()})),
      m_tools(new RowListEditor({tr("Tool"), tr("Decision"), tr("Argument constraints (arg=glob; …)")}, {QString(), QStringLiteral("ask"), QString()})),
      m_effective(new QTreeWidget), m_json(new QPlainTextEdit), m_tabs(new QTabWidget), m_diff(new QPlainTextEdit), m_try(new QLineEdit),
      m_tryAnswer(new QLabel), m_tryTimer(new QTimer(this)), m_apply(new QPushButton(tr("Apply"))), m_status(new QLabel)
{
    setWindowTitle(sandbox.isEmpty() ? tr("Your defaults for new sandboxes") : tr("Policy of %1").arg(display::escaped(sandbox, 80)));
    resize(860, 720);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);

    // Network: the lists apply to the next connection; the mode is fixed while the sandbox runs.
    auto *network = new QWidget;
    auto *networkLayout = new QVBoxLayout(network);
    networkLayout->addWidget(m_mode);
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
    auto *rulesHelp = new QLabel(tr("Rules match the start of each command a string would run, word by word; deny beats ask beats allow. "
                                    "Exact: \"yes\" to match the whole command only."));
    rulesHelp->setWordWrap(true);
    commandsLayout->addWidget(rulesHelp);
    commandsLayout->addWidget(m_rules, 1);

    auto *credentials = new QWidget;
    auto *credentialsLayout = new QVBoxLayout(credentials);
    auto *grantsHelp = new QLabel(tr("A secret from your store (airlockctl secret set NAME, or the Secrets page) given to every execution as an "
                                     "environment variable, or as a read-only file (fixed while the sandbox runs). Values are never shown."));
    grantsHelp->setWordWrap(true);
    credentialsLayout->addWidget(grantsHelp);
    credentialsLayout->addWidget(m_grants, 1);

    auto *tools = new QWidget;
    auto *toolsLayout = new QVBoxLayout(tools);
    auto *toolsHelp = new QLabel(tr("Host tools this sandbox may call (airlock-tool NAME inside): allow, ask or deny, and globs each argument must "
                                    "match (\"to=*@example.com; subject=*\")."));
    toolsHelp->setWordWrap(true);
    toolsLayout->addWidget(toolsHelp);
    toolsLayout->addWidget(m_tools, 1);

    // Everything in force, with the layer it comes from: built-in, your defaults, the preset, this sandbox.
    m_effective->setHeaderLabels({tr("Setting"), tr("Value"), tr("Layer")});
    m_effective->setRootIsDecorated(false);
    m_effective->setUniformRowHeights(true);

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
        const QString path = QFileDialog::getOpenFileName(this, tr("Import a policy layer"), {}, tr("Policies (*.json)"));
        QString error;
        if (!path.isEmpty() && !importFile(path, &error))
            m_status->setText(error);
    });
    connect(exportButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export this layer"), (m_sandbox.isEmpty() ? QStringLiteral("defaults") : m_sandbox) + QStringLiteral(".policy.json"), tr("Policies (*.json)"));
        QString error;
        if (!path.isEmpty())
            m_status->setText(exportFile(path, &error) ? tr("Exported to %1").arg(path) : error);
    });

    m_tabs->addTab(network, tr("Network"));
    m_tabs->addTab(commands, tr("Commands"));
    m_tabs->addTab(credentials, tr("Credentials"));
    m_tabs->addTab(tools, tr("Tools"));
    m_tabs->addTab(m_effective, tr("In force"));
    m_tabs->addTab(json, tr("JSON"));

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_tabs, 3);
    layout->addWidget(new QLabel(tr("Changes, against the saved policy:")));
    m_diff->setReadOnly(true); // every line, however many: a change must not scroll out of the record
    m_diff->setFont(mono);
    layout->addWidget(m_diff, 1);
    auto *tryBox = new QGroupBox(tr("What would happen"));
    auto *tryLayout = new QVBoxLayout(tryBox);
    m_try->setPlaceholderText(tr("a URL (https://pypi.org/simple), a command (make && curl x | sh) or a tool call (tool email.send {\"to\": \"a@b.c\"})"));
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
    for (RowListEditor *rows : {m_rules, m_grants, m_tools})
        connect(rows, &RowListEditor::changed, this, &PolicyEditor::updateDiff);
    for (QComboBox *box : {m_unknown, m_commandDefault})
        connect(box, &QComboBox::currentIndexChanged, this, &PolicyEditor::updateDiff);
    m_tryTimer->setSingleShot(true);
    m_tryTimer->setInterval(250);
    connect(m_tryTimer, &QTimer::timeout, this, &PolicyEditor::tryNow);
    connect(m_try, &QLineEdit::textChanged, m_tryTimer, qOverload<>(&QTimer::start));
    m_apply->setEnabled(false);
    load();
}

void PolicyEditor::load()
{
    if (m_sandbox.isEmpty()) { // the person's defaults: their layer over the built-in one
        m_client.callAsync(QStringLiteral("policy.defaults.get"), {}, [self = QPointer<PolicyEditor>(this)](Result<QJsonValue> r) {
            if (!self)
                return;
            if (!r)
                return self->m_status->setText(r.error().message);
            const QJsonObject o = r->toObject();
            self->showEffective({{QStringLiteral("policy"), o.value(QStringLiteral("effective"))}, {QStringLiteral("sources"), o.value(QStringLiteral("sources"))}});
            self->m_mode->setText(tr("Your defaults, in %1: every new sandbox starts from them, then its preset and its own layer apply on top. "
                                     "Running sandboxes keep what they started with.")
                                      .arg(o.value(QStringLiteral("file")).toString()));
            self->m_saved = o.value(QStringLiteral("policy")).toObject();
            self->editLayer(self->m_saved);
            self->m_loaded = true;
            self->updateDiff();
            Q_EMIT self->loaded();
        });
        return;
    }
    m_client.callAsync(QStringLiteral("policy.get"), {{QStringLiteral("sandbox"), m_sandbox}, {QStringLiteral("effective"), true}},
                       [self = QPointer<PolicyEditor>(this)](Result<QJsonValue> effective) {
                           if (!self)
                               return;
                           if (!effective)
                               return self->m_status->setText(effective.error().message);
                           self->showEffective(effective->toObject());
                           self->m_client.callAsync(QStringLiteral("policy.get"), {{QStringLiteral("sandbox"), self->m_sandbox}},
                                                    [self](Result<QJsonValue> own) {
                                                        if (!self)
                                                            return;
                                                        if (!own)
                                                            return self->m_status->setText(own.error().message);
                                                        self->m_saved = own->toObject().value(QStringLiteral("policy")).toObject();
                                                        self->editLayer(self->m_saved);
                                                        self->m_loaded = true;
                                                        self->updateDiff();
                                                        Q_EMIT self->loaded();
                                                    });
                       });
}

void PolicyEditor::showEffective(const QJsonObject &effective)
{
    const QJsonObject document = effective.value(QStringLiteral("policy")).toObject();
    const QJsonObject sources = effective.value(QStringLiteral("sources")).toObject();
    const QJsonObject network = document.value(QStringLiteral("network")).toObject();
    m_mode->setText(tr("Network mode: %1 (fixed while the sandbox runs); preset %2")
                        .arg(network.value(QStringLiteral("mode")).toString(), effective.value(QStringLiteral("preset")).toString(tr("none"))));
    // Each value with the layer that set it: the nearest pointer the resolver recorded.
    m_effective->clear();
    std::function<void(const QJsonValue &, const QString &)> add = [&](const QJsonValue &v, const QString &pointer) {
        if (v.isObject() && !v.toObject().isEmpty()) {
            const QJsonObject o = v.toObject();
            for (auto it = o.begin(); it != o.end(); ++it)
                add(it.value(), pointer + QLatin1Char('/') + it.key());
            return;
        }
        if (v.isArray() && !v.toArray().isEmpty()) {
            const QJsonArray a = v.toArray();
            for (qsizetype i = 0; i < a.size(); ++i)
                add(a.at(i), pointer + QLatin1Char('/') + QString::number(i));
            return;
        }
        QString layer;
        for (QString p = pointer; layer.isEmpty() && !p.isEmpty(); p = p.left(p.lastIndexOf(QLatin1Char('/'))))
            layer = sources.value(p).toString();
        const QString value = v.isString() ? display::escaped(v.toString(), 200)
                                           : QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact)).mid(1).chopped(1);
        auto *item = new QTreeWidgetItem({pointer, value, layer.isEmpty() ? tr("built-in") : layer});
        m_effective->addTopLevelItem(item);
    };
    add(document, QString());
    for (int c = 0; c < 3; ++c)
        m_effective->resizeColumnToContents(c);
}

void PolicyEditor::editLayer(const QJsonObject &layer)
{
    const QJsonObject network = layer.value(QStringLiteral("network")).toObject();
    m_allow->setHosts(strings(network.value(QStringLiteral("allow"))));
    m_deny->setHosts(strings(network.value(QStringLiteral("deny"))));
    const QJsonObject commands = layer.value(QStringLiteral("commands")).toObject();
    const QSignalBlocker a(m_unknown), b(m_commandDefault);
    setChoice(m_unknown, network.value(QStringLiteral("unknown")));
    setChoice(m_commandDefault, commands.value(QStringLiteral("default")));
    QList<QStringList> rules;
    for (const QJsonValue &v : commands.value(QStringLiteral("rules")).toArray()) {
        const QJsonObject r = v.toObject();
        const QJsonValue command = r.value(QStringLiteral("command"));
        rules.append({r.value(QStringLiteral("decision")).toString(), command.isArray() ? strings(command).join(QLatin1Char(' ')) : command.toString(),
                      r.value(QStringLiteral("exact")).toBool() ? QStringLiteral("yes") : QString()});
    }
    m_rules->setRows(rules);
    QList<QStringList> grants;
    for (const QJsonValue &v : layer.value(QStringLiteral("credentials")).toObject().value(QStringLiteral("grants")).toArray()) {
        const QJsonObject g = v.toObject();
        const bool file = g.contains(QStringLiteral("file"));
        grants.append({g.value(QStringLiteral("secret")).toString(), file ? QStringLiteral("file") : QStringLiteral("env"),
                       g.value(file ? QStringLiteral("file") : QStringLiteral("env")).toString()});
    }
    m_grants->setRows(grants);
    QList<QStringList> tools;
    const QJsonObject toolObject = layer.value(QStringLiteral("tools")).toObject();
    for (auto it = toolObject.begin(); it != toolObject.end(); ++it) {
        const QJsonObject t = it.value().toObject();
        QStringList constraints;
        const QJsonObject c = t.value(QStringLiteral("constraints")).toObject();
        for (auto k = c.begin(); k != c.end(); ++k)
            constraints.append(k.key() + QLatin1Char('=') + k.value().toString());
        tools.append({it.key(), t.value(QStringLiteral("decision")).toString(), constraints.join(QStringLiteral("; "))});
    }
    m_tools->setRows(tools);
    m_editedBase = layer;
    updateDiff();
}

QJsonObject PolicyEditor::edited() const
{
    // The layer being edited with the sections this editor shows replaced; everything else in it
    // (filesystem, limits, what the editor does not know) stays as it was.
    QJsonObject layer = m_editedBase;
    QJsonObject network = layer.value(QStringLiteral("network")).toObject();
    setOrRemove(network, QStringLiteral("allow"), QJsonArray::fromStringList(m_allow->hosts()), !m_allow->hosts().isEmpty());
    setOrRemove(network, QStringLiteral("deny"), QJsonArray::fromStringList(m_deny->hosts()), !m_deny->hosts().isEmpty());
    setOrRemove(network, QStringLiteral("unknown"), m_unknown->currentData().toString(), !m_unknown->currentData().toString().isEmpty());
    setOrRemove(layer, QStringLiteral("network"), network, !network.isEmpty());

    QJsonObject commands = layer.value(QStringLiteral("commands")).toObject();
    setOrRemove(commands, QStringLiteral("default"), m_commandDefault->currentData().toString(), !m_commandDefault->currentData().toString().isEmpty());
    QJsonArray rules;
    for (const QStringList &row : m_rules->rows()) {
        QJsonObject rule{{QStringLiteral("decision"), row.value(0)}, {QStringLiteral("command"), row.value(1)}};
        if (row.value(2) == QLatin1String("yes"))
            rule.insert(QStringLiteral("exact"), true);
        rules.append(rule);
    }
    setOrRemove(commands, QStringLiteral("rules"), rules, !rules.isEmpty());
    setOrRemove(layer, QStringLiteral("commands"), commands, !commands.isEmpty());

    QJsonArray grants;
    for (const QStringList &row : m_grants->rows())
        grants.append(QJsonObject{{QStringLiteral("secret"), row.value(0)}, {row.value(1) == QLatin1String("file") ? QStringLiteral("file") : QStringLiteral("env"), row.value(2)}});
    QJsonObject credentials = layer.value(QStringLiteral("credentials")).toObject();
    setOrRemove(credentials, QStringLiteral("grants"), grants, !grants.isEmpty());
    setOrRemove(layer, QStringLiteral("credentials"), credentials, !credentials.isEmpty());

    QJsonObject tools;
    for (const QStringList &row : m_tools->rows()) {
        QJsonObject permission{{QStringLiteral("decision"), row.value(1)}};
        QJsonObject constraints;
        for (const QString &pair : row.value(2).split(QLatin1Char(';'), Qt::SkipEmptyParts)) {
            const qsizetype eq = pair.indexOf(QLatin1Char('='));
            constraints.insert(pair.left(eq).trimmed(), eq < 0 ? QString() : pair.mid(eq + 1).trimmed());
        }
        if (!constraints.isEmpty())
            permission.insert(QStringLiteral("constraints"), constraints);
        tools.insert(row.value(0), permission);
    }
    setOrRemove(layer, QStringLiteral("tools"), tools, !tools.isEmpty());
    return layer;
}

QString PolicyEditor::problem() const
{
    const Status valid = policy::validate(edited());
    return valid ? QString() : valid.error().message;
}

bool PolicyEditor::importFile(const QString &path, QString *error)
{
    QFile file(path);
    QJsonParseError parse{};
    const QJsonDocument doc = file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.read(4 * 1024 * 1024), &parse) : QJsonDocument();
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
}

void PolicyEditor::apply()
{
    const QJsonObject layer = edited();
    m_apply->setEnabled(false);
    const bool defaults = m_sandbox.isEmpty();
    m_client.callAsync(defaults ? QStringLiteral("policy.defaults.set") : QStringLiteral("policy.set"),
                       defaults ? QJsonObject{{QStringLiteral("policy"), layer}} : QJsonObject{{QStringLiteral("sandbox"), m_sandbox}, {QStringLiteral("policy"), layer}},
                       [self = QPointer<PolicyEditor>(this), layer](Result<QJsonValue> r) {
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
                           self->m_status->setText(self->m_sandbox.isEmpty() ? tr("Saved: sandboxes created from now on start from these defaults.")
                                                                             : tr("Applied: the next connection and the next request follow the new rules."));
                           self->updateDiff();
                           Q_EMIT self->applied(true, {});
                       });
}

QString PolicyEditor::tryAnswer() const
{
    return m_tryAnswer->text();
}

void PolicyEditor::tryNow()
{
    const QString text = m_try->text().trimmed();
    if (text.isEmpty())
        return m_tryAnswer->clear();
    QJsonObject params{{QStringLiteral("sandbox"), m_sandbox}};
    static const QRegularExpression toolCall(QStringLiteral("^tool\\s+(\\S+)\\s*(.*)$"), QRegularExpression::DotMatchesEverythingOption);
    if (text.startsWith(QLatin1String("http://")) || text.startsWith(QLatin1String("https://"))) {
        params.insert(QStringLiteral("url"), text);
    } else if (const auto m = toolCall.match(text); m.hasMatch()) {
        const QJsonDocument arguments = QJsonDocument::fromJson(m.captured(2).toUtf8());
        if (!m.captured(2).isEmpty() && !arguments.isObject())
            return m_tryAnswer->setText(tr("tool NAME {arguments as a JSON object}"));
        params.insert(QStringLiteral("tool"), m.captured(1));
        params.insert(QStringLiteral("arguments"), arguments.object());
    } else
        params.insert(QStringLiteral("argv"), QJsonArray{QStringLiteral("sh"), QStringLiteral("-c"), text});
    m_client.callAsync(QStringLiteral("policy.check"), params, [self = QPointer<PolicyEditor>(this), text](Result<QJsonValue> r) {
        if (!self || self->m_try->text().trimmed() != text)
            return; // typed on since: a newer answer is coming
        if (!r)
            return self->m_tryAnswer->setText(r.error().message);
        const QJsonObject o = r->toObject();
        self->m_tryAnswer->setText(QStringLiteral("%1: %2").arg(o.value(QStringLiteral("decision")).toString(),
                                                                 display::escaped(o.value(QStringLiteral("reason")).toString())));
    });
}

} // namespace airlock::ui
