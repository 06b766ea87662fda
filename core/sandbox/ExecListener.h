// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <sys/types.h>
#include <vector>

class QSocketNotifier;

namespace airlock {

// One execve/execveat that a sandboxed process is waiting in, as the daemon read it from the
// process: what the kernel will execute, with which arguments, from where.
struct ExecAttempt {
    quint64 id = 0; // the kernel's cookie for this notification
    pid_t hostPid = 0; // in the daemon's PID namespace
    pid_t pid = 0; // in the sandbox's
    pid_t parentPid = 0; // in the sandbox's
    QString path; // the file the kernel executes (execveat's directory or fd resolved)
    QStringList argv;
    QString cwd;
    QString unreadable; // why the arguments could not be read: nothing is judged then, it is refused
    bool missing = false; // nothing there (a PATH search's miss): judged, not recorded
    QList<QStringList> interpreters; // a script's "#!" programs, outermost first: each runs too

    // What runs: the path, then the arguments (argv[0] is only the name the program is told).
    QStringList asRun() const
    {
        QStringList out = argv;
        if (!out.isEmpty() && !path.isEmpty())
            out.first() = path;
        return out;
    }
    // Each program the kernel will start for it: the file itself, and the interpreters its "#!"
    // lines name (each given the script's path and arguments).
    QList<QStringList> programs() const
    {
        QList<QStringList> out{asRun()};
        QString script = path;
        for (const QStringList &interpreter : interpreters) {
            out.append(interpreter + QStringList{script} + argv.mid(1));
            script = interpreter.first();
        }
        return out;
    }
};

// Serves one execution's exec-check listener (a seccomp user-notification fd the guest installed
// in the execution's first process): every execve and execveat of that process and of all its
// descendants waits in the kernel until answer() is called with its id. The guest keeps a copy of
// the listener while the execution runs: destroying this (the daemon goes) leaves what was not
// received yet waiting for the next daemon, which the guest hands the listener to. Once no copy is
// left, whatever waits, and every later exec of those processes, fails with ENOSYS: nothing runs
// unjudged.
class ExecListener final : public QObject {
    Q_OBJECT
public:
    // Takes ownership of `fd`. Paths under `workspaceDir` (the host side) are shown as /workspace.
    ExecListener(int fd, QString workspaceDir, QObject *parent = nullptr);
    ~ExecListener() override;

    // Continues the call, or fails it with EPERM. False when its process has gone (nothing ran).
    bool answer(quint64 id, bool allow);
    // Says (abandoned()) when the process waiting in `attempt` goes before it is answered, also
    // when others under the filter live on. Without a way to watch it (a thread that is not its
    // process's first, on a kernel before 6.9), nothing is said and the answer's timeout stands.
    void watch(const ExecAttempt &attempt);
    // Refuses (EPERM) every exec that attempted() reported and nobody answered yet (one that waits
    // for a person); returns those whose process was still there. For a daemon that lets go of the
    // listener while the guest keeps a copy: an exec received and never answered would otherwise
    // wait until it is killed, as a later daemon is never told of it again.
    QList<ExecAttempt> refuseOpen();

    // A listener fd as the guest passed it is a seccomp listener and nothing else.
    static bool isListener(int fd);
    // SECCOMP_IOCTL_NOTIF_RECV into `notification` (sized and zeroed here), waiting at most
    // ThreadDeadline::kMs. The guest that handed the listener over holds it too
    // and can take a notification between our poll() and this call; the kernel's receive then
    // waits for the next one, whatever the file's flags say, and the daemon's loop with it. False
    // with errno set (EINTR: the deadline passed with nothing to receive; ENOTSUP: this thread has
    // no deadline timer, so nothing was received).
    static bool receive(int fd, std::vector<char> &notification);

Q_SIGNALS:
    void attempted(const airlock::ExecAttempt &attempt);
    // No process is left under the filter: nothing more can come.
    void drained();
    void abandoned(quint64 id);

private:
    void onReadable();
    ExecAttempt read(const void *notification) const;

    int m_fd;
    QString m_workspaceDir;
    QSocketNotifier *m_notifier = nullptr;
    std::vector<char> m_notification; // as large as this kernel's struct seccomp_notif
    QHash<quint64, QSocketNotifier *> m_watched; // on pidfds of waiting processes, by notification
    QHash<quint64, ExecAttempt> m_open; // reported by attempted(), not answered yet (by id)
    void unwatch(quint64 id);
};

} // namespace airlock
