// SPDX-License-Identifier: Apache-2.0
#include "PolicyEditor.h"

#include "client/DaemonClient.h"
#include "model/DisplayText.h"
#include "policy/Policy.h"

#include <QDialogButtonBox>
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

PolicyEditor::PolicyEditor(DaemonClient &client, const QString &sandbox, QWidget *parent)
    : QDialog(parent), m_client(client), m_sandbox(sandbox), m_mode(new QLabel), m_allow(new HostListEditor(tr("Allowed destinations"))),
      m_deny(new HostListEditor(tr("Denied destinations (deny beats allow)"))), m_diff(new QPlainTextEdit), m_try(new QLineEdit),
      m_tryAnswer(new QLabel), m_tryTimer(new QTimer(this)), m_apply(new QPushButton(tr("Apply"))), m_status(new QLabel)
{
    setWindowTitle(tr("Policy of %1").arg(sandbox));
    resize(720, 640);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_mode);
    auto *lists = new QHBoxLayout;
    lists->addWidget(m_allow);
    lists->addWidget(m_deny);
    layout->addLayout(lists, 2);
    layout->addWidget(new QLabel(tr("Changes, against the saved policy:")));
    m_diff->setReadOnly(true);
    m_diff->setMaximumBlockCount(500);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);
    m_diff->setFont(mono);
    layout->addWidget(m_diff, 1);
    auto *tryBox = new QGroupBox(tr("What would happen"));
    auto *tryLayout = new QVBoxLayout(tryBox);
    m_try->setPlaceholderText(tr("a URL (https://pypi.org/simple) or a command (make && curl x | sh)"));
    m_tryAnswer->setTextFormat(Qt::PlainText);
    m_tryAnswer->setWordWrap(true);
    tryLayout->addWidget(m_try);
    tryLayout->addWidget(m_tryAnswer);
    layout->addWidget(tryBox);
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    buttons->addButton(m_apply, QDialogButtonBox::ApplyRole);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_apply, &QPushButton::clicked, this, &PolicyEditor::apply);
    for (HostListEditor *list : {m_allow, m_deny})
        connect(list, &HostListEditor::changed, this, &PolicyEditor::updateDiff);
    m_tryTimer->setSingleShot(true);
    m_tryTimer->setInterval(250);
    connect(m_tryTimer, &QTimer::timeout, this, &PolicyEditor::tryNow);
    connect(m_try, &QLineEdit::textChanged, m_tryTimer, qOverload<>(&QTimer::start));
    m_apply->setEnabled(false);
    load();
}

void PolicyEditor::load()
{
    m_client.callAsync(QStringLiteral("policy.get"), {{QStringLiteral("sandbox"), m_sandbox}, {QStringLiteral("effective"), true}},
                       [self = QPointer<PolicyEditor>(this)](Result<QJsonValue> effective) {
                           if (!self)
                               return;
                           if (!effective)
                               return self->m_status->setText(effective.error().message);
                           const QJsonObject network = effective->toObject().value(QStringLiteral("policy")).toObject().value(QStringLiteral("network")).toObject();
                           self->m_mode->setText(tr("Network mode: %1 (fixed while the sandbox runs)").arg(network.value(QStringLiteral("mode")).toString()));
                           self->m_allow->setHosts(strings(network.value(QStringLiteral("allow"))));
                           self->m_deny->setHosts(strings(network.value(QStringLiteral("deny"))));
                           self->m_client.callAsync(QStringLiteral("policy.get"), {{QStringLiteral("sandbox"), self->m_sandbox}},
                                                    [self](Result<QJsonValue> own) {
                                                        if (!self || !own)
                                                            return;
                                                        self->m_saved = own->toObject().value(QStringLiteral("policy")).toObject();
                                                        self->m_loaded = true;
                                                        self->updateDiff();
                                                        Q_EMIT self->loaded();
                                                    });
                       });
}

QJsonObject PolicyEditor::edited() const
{
    // The sandbox's own layer with its lists replaced: what it says it wants, nothing else moved.
    QJsonObject layer = m_saved;
    QJsonObject network = layer.value(QStringLiteral("network")).toObject();
    network.insert(QStringLiteral("allow"), QJsonArray::fromStringList(m_allow->hosts()));
    network.insert(QStringLiteral("deny"), QJsonArray::fromStringList(m_deny->hosts()));
    layer.insert(QStringLiteral("network"), network);
    return layer;
}

QString PolicyEditor::diffText() const
{
    return m_diff->toPlainText();
}

void PolicyEditor::updateDiff()
{
    const QJsonObject savedNetwork = m_saved.value(QStringLiteral("network")).toObject();
    QStringList lines;
    for (const auto &[key, editor] : {std::pair{QStringLiteral("allow"), m_allow}, std::pair{QStringLiteral("deny"), m_deny}}) {
        const QStringList before = savedNetwork.contains(key) ? strings(savedNetwork.value(key)) : QStringList();
        const QStringList after = editor->hosts();
        for (const QString &h : before)
            if (!after.contains(h))
                lines.append(QStringLiteral("- %1 %2").arg(key, display::escaped(h)));
        for (const QString &h : after)
            if (!before.contains(h))
                lines.append(QStringLiteral("+ %1 %2").arg(key, display::escaped(h)));
    }
    m_diff->setPlainText(lines.isEmpty() ? tr("(no changes)") : lines.join(QLatin1Char('\n')));
    m_apply->setEnabled(m_loaded && !lines.isEmpty());
}

void PolicyEditor::apply()
{
    const QJsonObject layer = edited();
    m_apply->setEnabled(false);
    m_client.callAsync(QStringLiteral("policy.set"), {{QStringLiteral("sandbox"), m_sandbox}, {QStringLiteral("policy"), layer}},
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
                           self->m_status->setText(tr("Applied: the next connection follows the new rules."));
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
    if (text.startsWith(QLatin1String("http://")) || text.startsWith(QLatin1String("https://")))
        params.insert(QStringLiteral("url"), text);
    else
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
