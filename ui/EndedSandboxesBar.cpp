// SPDX-License-Identifier: Apache-2.0
#include "EndedSandboxesBar.h"

#include "client/DaemonApi.h"
#include "client/Recreate.h"
#include "model/DisplayText.h"
#include "model/EventKinds.h"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QPointer>
#include <QPushButton>

namespace airlock::ui {

EndedSandboxesBar::EndedSandboxesBar(DaemonClient &client, Create create, QWidget *parent)
    : QFrame(parent)
    , m_client(client)
    , m_create(std::move(create))
    , m_text(new QLabel)
    , m_recreate(new QPushButton(tr("Re&create them")))
    , m_dismiss(new QPushButton(tr("Dismiss")))
{
    setObjectName(QStringLiteral("endedBar"));
    setStyleSheet(QStringLiteral(
        "#endedBar { background: #fdf3d8; border: 1px solid #c9a227; } #endedBar QLabel { color: #5a4500; }"));
    auto *row = new QHBoxLayout(this);
    row->setContentsMargins(8, 4, 8, 4);
    m_text->setTextFormat(Qt::PlainText);
    m_text->setWordWrap(true);
    row->addWidget(m_text, 1);
    row->addWidget(m_recreate);
    row->addWidget(m_dismiss);
    m_recreate->setToolTip(tr("New, empty sandboxes with the same names, presets and policies (network, mounts, "
                              "limits, rules), from the history"));
    connect(m_recreate, &QPushButton::clicked, this, &EndedSandboxesBar::recreate);
    connect(m_dismiss, &QPushButton::clicked, this, [this] {
        m_ended.clear();
        hide();
    });
    hide();
}

void EndedSandboxesBar::remember(const QList<Seen> &sandboxes)
{
    m_remembered = sandboxes;
}

void EndedSandboxesBar::check(const QList<Seen> &now)
{
    m_ended.clear();
    for (const Seen &s : std::exchange(m_remembered, {}))
        if (std::none_of(now.cbegin(), now.cend(), [&](const Seen &n) { return n.id == s.id; }))
            m_ended.append(s);
    if (m_ended.isEmpty())
        return hide();
    QStringList names;
    for (const Seen &s : std::as_const(m_ended))
        names.append(display::escaped(s.name, 64));
    const int shown = 8;
    const QString list = names.size() > shown
        ? names.mid(0, shown).join(QStringLiteral(", ")) + tr(" and %1 more").arg(names.size() - shown)
        : names.join(QStringLiteral(", "));
    m_text->setText(m_ended.size() == 1
            ? tr("1 sandbox ended when the daemon stopped: %1. Its processes and files went with it. Make it again, "
                 "empty, with the same policy?")
                  .arg(list)
            : tr("%1 sandboxes ended when the daemon stopped: %2. Their processes and files went with it. Make them "
                 "again, empty, with the same policy?")
                  .arg(m_ended.size())
                  .arg(list));
    m_recreate->setText(m_ended.size() == 1 ? tr("Re&create it") : tr("Re&create them"));
    m_recreate->setEnabled(true);
    m_recreate->setVisible(true);
    show();
}

void EndedSandboxesBar::recreate()
{
    m_recreate->setEnabled(false);
    m_pending = int(m_ended.size());
    m_made = 0;
    m_failures.clear();
    m_withoutRules.clear();
    m_failed.clear();
    for (const Seen &s : std::as_const(m_ended))
        fetch(s, {}, std::make_shared<QJsonArray>());
}

void EndedSandboxesBar::fetch(const Seen &sandbox, const QJsonObject &after, const std::shared_ptr<QJsonArray> &events)
{
    // Its creation and every change of its own layer since, page by page.
    QJsonObject params{{QStringLiteral("sandbox"), sandbox.id},
        {QStringLiteral("kinds"), QJsonArray{event::SandboxCreated, event::PolicyChanged}}};
    if (!after.isEmpty())
        params.insert(QStringLiteral("after"), after);
    DaemonApi(m_client).historyEvents(params).then(
        [self = QPointer<EndedSandboxesBar>(this), sandbox, events](Result<QJsonObject> r) {
            if (!self)
                return;
            if (!r)
                return self->done(sandbox, r.error().message);
            for (const QJsonValue &e : r->value(QStringLiteral("events")).toArray())
                events->append(e);
            if (const QJsonValue next = r->value(QStringLiteral("next")); next.isObject() && events->size() < 100'000)
                return self->fetch(sandbox, next.toObject(), events);
            auto recreation = recreateParameters(*events);
            if (!recreation)
                return self->done(sandbox, recreation.error().message);
            const bool withoutRules = !recreation->ownLayer;
            self->m_create(recreation->request, [self, sandbox, withoutRules](Status made) {
                if (self)
                    self->done(sandbox, made ? QString() : made.error().message, withoutRules);
            });
        });
}

void EndedSandboxesBar::done(const Seen &sandbox, const QString &failure, bool withoutRules)
{
    if (failure.isEmpty()) {
        ++m_made;
        if (withoutRules)
            m_withoutRules.append(display::escaped(sandbox.name, 64));
    } else {
        m_failures.append(tr("%1: %2").arg(display::escaped(sandbox.name, 64), display::escaped(failure, 300)));
        m_failed.append(sandbox);
    }
    if (--m_pending > 0)
        return;
    Q_EMIT recreated(m_made, int(m_failures.size()));
    QStringList said;
    if (!m_failures.isEmpty())
        said.append(tr("Not made again: %1.").arg(m_failures.join(QStringLiteral("; "))));
    if (!m_withoutRules.isEmpty()) // made before their own layer was recorded: network, mounts and limits only
        said.append(tr("Made again without their own rules (not recorded for them): %1.")
                        .arg(m_withoutRules.join(QStringLiteral(", "))));
    m_ended = m_failed; // what is left to try again
    if (said.isEmpty())
        return hide();
    m_text->setText(said.join(QLatin1Char(' ')));
    m_recreate->setEnabled(!m_ended.isEmpty());
    m_recreate->setVisible(!m_ended.isEmpty());
}

} // namespace airlock::ui
