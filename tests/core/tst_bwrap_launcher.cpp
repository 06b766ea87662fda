// SPDX-License-Identifier: Apache-2.0
// The launcher opens a person's mount as it was checked: the canonical path, no symbolic link
// followed. A link put in the path between the check and the launch (another sandbox with the
// parent folder mounted read-write can rename a folder away and put a link in its place, and a
// launch may wait its turn on a launcher thread) is refused with ELOOP, not followed to wherever
// it points (airlockd's own folders, say).
#include "sandbox/BwrapLauncher.h"
#include "sandbox/RuntimeProcess.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <cerrno>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace airlock;

class TstBwrapLauncher : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    LaunchRequest requestMounting(const QString &source)
    {
        LaunchRequest r;
        r.id = QStringLiteral("launcher-test");
        r.hostname = QStringLiteral("launcher-test");
        r.workspaceDir = m_dir.filePath(QStringLiteral("workspace"));
        r.guestPath = QStringLiteral("/bin/true");
        r.seccompProgram = QByteArray(8, '\0');
        r.mounts = {Mount{source, QStringLiteral("/mnt/project"), false}};
        return r;
    }

private Q_SLOTS:
    // A copy-on-write mount's lower folder, reopened by the runtime's top process: only the folder
    // the daemon checked (the red team swapped it for a link, then for another folder, between the
    // check and the mount).
    void aCopyOnWriteFolderIsReopenedOnlyAsChecked()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("p"));
        QVERIFY(QDir().mkpath(path));
        const int checked = ::open(QFile::encodeName(path).constData(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        QVERIFY(checked >= 0);
        const QByteArray native = QFile::encodeName(path);
        int same = reopenCheckedFolder(native.constData(), checked);
        QVERIFY(same >= 0);
        ::close(same);
        // Swapped for a link to another folder: refused for the link.
        QVERIFY(QDir().rename(path, dir.filePath(QStringLiteral("aside"))));
        QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("other"))));
        QVERIFY(QFile::link(dir.filePath(QStringLiteral("other")), path));
        QCOMPARE(reopenCheckedFolder(native.constData(), checked), -1);
        QCOMPARE(errno, ELOOP);
        // Swapped for another folder of the same name: refused for being another.
        QVERIFY(QFile::remove(path));
        QVERIFY(QDir().mkpath(path));
        QCOMPARE(reopenCheckedFolder(native.constData(), checked), -1);
        QCOMPARE(errno, EXDEV);
        // The checked one put back: opened again.
        QVERIFY(QDir(path).removeRecursively());
        QVERIFY(QDir().rename(dir.filePath(QStringLiteral("aside")), path));
        same = reopenCheckedFolder(native.constData(), checked);
        QVERIFY(same >= 0);
        ::close(same);
        ::close(checked);
    }

    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("workspace")));
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("real/project")));
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("secret")));
    }

    void aLinkPutInACheckedPathIsRefused()
    {
        // The path as it was checked: ".../swapped/project", a real folder then; now "swapped"
        // is a link to another folder.
        QVERIFY(QFile::link(m_dir.filePath(QStringLiteral("secret")), m_dir.filePath(QStringLiteral("swapped"))));
        QVERIFY(QDir(m_dir.filePath(QStringLiteral("secret"))).mkpath(QStringLiteral("project")));
        const QString checked = m_dir.filePath(QStringLiteral("swapped/project"));
        auto launched = launchSandbox(requestMounting(checked), QStringLiteral("/nonexistent/bwrap"));
        QVERIFY(!launched);
        QCOMPARE(launched.error().code, ErrorCode::InvalidArgument);
        QCOMPARE(launched.error().message,
            QStringLiteral("mount %1: a symbolic link is in its path now, which was not when it was checked; it is "
                           "not mounted (create the sandbox again)")
                .arg(checked));
    }

    // The same folder by its real path is opened (the launch goes on to start the runtime: here
    // a bwrap that does not exist, whose child exits 127).
    void theCheckedPathItselfIsOpened()
    {
        auto launched = launchSandbox(
            requestMounting(m_dir.filePath(QStringLiteral("real/project"))), QStringLiteral("/nonexistent/bwrap"));
        QVERIFY2(launched, qPrintable(launched ? QString() : launched.error().message));
        int status = 0;
        QCOMPARE(::waitpid(launched->pid, &status, 0), launched->pid);
        QVERIFY(WIFEXITED(status));
        QCOMPARE(WEXITSTATUS(status), 127);
        for (int fd : {launched->pidfd, launched->channelFd, launched->stderrFd, launched->infoFd, launched->proxyFd,
                 launched->execCheckFd})
            if (fd >= 0)
                ::close(fd);
    }
};

QTEST_GUILESS_MAIN(TstBwrapLauncher)
#include "tst_bwrap_launcher.moc"
