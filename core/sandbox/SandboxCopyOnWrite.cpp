// SPDX-License-Identifier: Apache-2.0
// Sandbox, its copy-on-write mounts (decision 9): where each one's changes are, listed off the main
// thread, and files.changed as an execution ends.
#include "sandbox/CowChanges.h"
#include "sandbox/Sandbox.h"
#include "sandbox/WorkspaceVolume.h"

#include "model/EventKinds.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>

#include <algorithm>
#include <thread>

namespace airlock {

QList<Sandbox::CowMount> Sandbox::copyOnWriteMounts() const
{
    QList<CowMount> out;
    for (const Mount &m : m_setup.spec.mounts)
        if (m.copyOnWrite) {
            const int index = int(out.size());
            out.append(
                {index, QStringLiteral("%1/cow-%2/upper").arg(volume::runtimeDirOf(workspaceDir())).arg(index), m});
        }
    return out;
}

void Sandbox::listCopyOnWrite(std::function<void(const QList<CowListing> &)> done)
{
    const QList<CowMount> mounts = copyOnWriteMounts();
    QPointer<Sandbox> self(this);
    std::thread([mounts, self, done = std::move(done)]() mutable {
        QList<CowListing> out;
        for (const CowMount &m : mounts)
            out.append({m, cow::listChanges(m.upper, m.mount.hostPath)});
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, done = std::move(done), out = std::move(out)] {
                if (self)
                    done(out);
            },
            Qt::QueuedConnection);
    }).detach();
}

void Sandbox::reportFileChanges(uint32_t exec, const QString &run)
{
    if (copyOnWriteMounts().isEmpty())
        return;
    if (m_listing) { // one listing at a time: the newest end is listed once it is done
        m_listAgain = std::pair{exec, run};
        return;
    }
    m_listing = true;
    listCopyOnWrite([this, exec, run](const QList<CowListing> &listing) {
        m_listing = false;
        publishFileChanges(exec, run, listing);
        if (auto again = std::exchange(m_listAgain, std::nullopt))
            reportFileChanges(again->first, again->second);
    });
}

void Sandbox::publishFileChanges(uint32_t exec, const QString &run, const QList<CowListing> &listing)
{
    QJsonArray listed;
    for (const CowListing &l : listing) {
        QJsonObject o = l.changes ? cow::changeSummary(*l.changes)
                                  : QJsonObject{{QStringLiteral("error"), l.changes.error().message}};
        o.insert(QStringLiteral("path"), l.mount.mount.sandboxPath);
        o.insert(QStringLiteral("host"), l.mount.mount.hostPath);
        listed.append(o);
    }
    const QByteArray said = QJsonDocument(listed).toJson(QJsonDocument::Compact);
    if (said == m_lastFileChanges)
        return;
    const bool first = m_lastFileChanges.isEmpty();
    m_lastFileChanges = said;
    // Nothing changed since the sandbox was made: nothing to say.
    if (first && std::all_of(listed.begin(), listed.end(), [](const QJsonValue &m) {
            return m.toObject().value(QStringLiteral("changes")).toInt() == 0;
        }))
        return;
    Event changed
        = makeEvent(event::FilesChanged, {{QStringLiteral("exec"), double(exec)}, {QStringLiteral("mounts"), listed}});
    changed.run = run;
    publish(std::move(changed));
}

} // namespace airlock
