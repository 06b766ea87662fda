// SPDX-License-Identifier: Apache-2.0
// How the changes a sandbox made to a copy-on-write mount are read for review (decision 9): an
// upper folder laid out as overlayfs lays it out (whiteouts, an opaque folder's attribute) over a
// host folder; what overlayfs copied up without a change in it is no change. (tst_cow_mount reads
// a real overlay's.)
#include "TestHelpers.h"
#include "sandbox/CowChanges.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <thread>
#include <unistd.h>

using namespace airlock;

namespace {
void put(const QString &path, const QByteArray &data, int mode = 0644)
{
    QVERIFY(test::putFile(path, data, mode));
}
QStringList read(const QString &upper, const QString &lower)
{
    const auto changes = cow::listChanges(upper, lower);
    if (!changes)
        return {changes.error().message};
    QStringList out;
    for (const cow::Change &c : *changes)
        out.append(QStringLiteral("%1 %2%3").arg(cow::statusName(c.status), c.path,
            c.modeOnly ? QStringLiteral(" (mode %1)").arg(c.mode, 0, 8) : QString()));
    return out;
}
} // namespace

class TestCowChanges final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void eachKindOfChangeIsRead()
    {
        QTemporaryDir dir;
        const QString lower = dir.filePath(QStringLiteral("lower")), upper = dir.filePath(QStringLiteral("upper"));
        put(lower + QStringLiteral("/same.txt"), "same\n");
        put(lower + QStringLiteral("/mode.sh"), "echo\n");
        put(lower + QStringLiteral("/edit.txt"), "old\n");
        put(lower + QStringLiteral("/gone/deep/x.txt"), "x\n");
        put(lower + QStringLiteral("/dir-to-file/y.txt"), "y\n");
        QVERIFY(QFile::link(QStringLiteral("same.txt"), lower + QStringLiteral("/link")));
        QDir().mkpath(upper);
        put(upper + QStringLiteral("/same.txt"), "same\n"); // copied up (opened for writing), unchanged
        put(upper + QStringLiteral("/mode.sh"), "echo\n", 0755); // chmod +x
        put(lower + QStringLiteral("/private.txt"), "p\n", 0644);
        put(upper + QStringLiteral("/private.txt"), "p\n", 0600); // the sandbox's umask: no change (as for git)
        put(upper + QStringLiteral("/edit.txt"), "new!\n");
        QCOMPARE(::mknod(QFile::encodeName(upper + QStringLiteral("/gone")).constData(), S_IFCHR, makedev(0, 0)), 0);
        put(upper + QStringLiteral("/dir-to-file"), "now a file\n");
        QVERIFY(QFile::link(QStringLiteral("edit.txt"), upper + QStringLiteral("/link")));
        put(upper + QStringLiteral("/new/n.txt"), "n\n");
        QCOMPARE(read(upper, lower),
            (QStringList{QStringLiteral("deleted dir-to-file"), QStringLiteral("added dir-to-file"),
                QStringLiteral("deleted dir-to-file/y.txt"), QStringLiteral("modified edit.txt"),
                QStringLiteral("deleted gone"), QStringLiteral("deleted gone/deep"),
                QStringLiteral("deleted gone/deep/x.txt"), QStringLiteral("modified link"),
                QStringLiteral("modified mode.sh (mode 755)"), QStringLiteral("added new"),
                QStringLiteral("added new/n.txt")}));
    }

    void anOpaqueFolderHidesWhatTheHostHadThere()
    {
        QTemporaryDir dir;
        const QString lower = dir.filePath(QStringLiteral("lower")), upper = dir.filePath(QStringLiteral("upper"));
        put(lower + QStringLiteral("/src/a.c"), "a\n");
        put(lower + QStringLiteral("/src/b.c"), "b\n");
        put(lower + QStringLiteral("/src/lib/l.c"), "l\n");
        put(lower + QStringLiteral("/src/lib/m.c"), "m\n");
        put(upper + QStringLiteral("/src/b.c"), "b\n");
        put(upper + QStringLiteral("/src/lib/m.c"), "m2\n");
        QCOMPARE(
            ::setxattr(QFile::encodeName(upper + QStringLiteral("/src")).constData(), "user.overlay.opaque", "y", 1, 0),
            0);
        // b.c made anew with the same bytes: no change; a.c is gone; below the opaque folder the
        // host's lib shows only where the upper layer has the same names (l.c is gone too).
        QCOMPARE(read(upper, lower),
            (QStringList{QStringLiteral("deleted src/a.c"), QStringLiteral("deleted src/lib/l.c"),
                QStringLiteral("modified src/lib/m.c")}));
    }

    // The host has a link where the view made a folder: nothing below it is looked up through the
    // link (a daemon's lstat and compare would read where it leads, as root).
    void aFolderMadeOverAHostLinkIsAllAdded()
    {
        QTemporaryDir dir;
        const QString lower = dir.filePath(QStringLiteral("lower")), upper = dir.filePath(QStringLiteral("upper"));
        const QString elsewhere = dir.filePath(QStringLiteral("elsewhere"));
        put(elsewhere + QStringLiteral("/secret"), "s\n");
        QDir().mkpath(lower);
        QVERIFY(QFile::link(elsewhere, lower + QStringLiteral("/out")));
        put(upper + QStringLiteral("/out/secret"), "s\n"); // the same bytes as behind the link
        QCOMPARE(read(upper, lower),
            (QStringList{
                QStringLiteral("deleted out"), QStringLiteral("added out"), QStringLiteral("added out/secret")}));
    }

    // A sandbox makes its tree as deep as it likes: read from a list, not by recursion (1,000
    // levels overflowed the daemon's stack), and a path too long to open is an error that says so.
    void aDeepTreeIsReadOrRefusedNeverACrash()
    {
        QTemporaryDir dir;
        const QString lower = dir.filePath(QStringLiteral("lower")), upper = dir.filePath(QStringLiteral("upper"));
        QDir().mkpath(lower);
        QDir().mkpath(upper);
        const auto deepen = [&](int levels) {
            int at = ::open(QFile::encodeName(upper).constData(), O_RDONLY | O_DIRECTORY);
            for (int i = 0; i < levels; ++i) {
                ::mkdirat(at, "d", 0755);
                const int next = ::openat(at, "d", O_RDONLY | O_DIRECTORY);
                ::close(at);
                at = next;
            }
            ::close(at);
        };
        deepen(1500); // 3,000 characters
        auto listed = cow::listChanges(upper, lower);
        QVERIFY(listed);
        QCOMPARE(listed->size(), 1500);
        deepen(2500); // past PATH_MAX
        listed = cow::listChanges(upper, lower);
        QVERIFY(!listed);
        QVERIFY2(
            listed.error().message.contains(QLatin1String("File name too long")), qPrintable(listed.error().message));
        fs::removeTree(upper);
    }

    // A changed file swapped with a FIFO while it is compared (the red team hung the daemon's main
    // thread this way: it waited in open for a writer the sandbox controls): never waited for.
    void aFifoSwappedInIsNeverWaitedFor()
    {
        QTemporaryDir dir;
        const QString lower = dir.filePath(QStringLiteral("lower")), upper = dir.filePath(QStringLiteral("upper"));
        for (int i = 0; i < 50; ++i) {
            put(lower + QStringLiteral("/f%1").arg(i), "a");
            put(upper + QStringLiteral("/f%1").arg(i), "b");
        }
        QCOMPARE(::mkfifo(QFile::encodeName(upper + QStringLiteral("/fifo")).constData(), 0644), 0);
        std::atomic<bool> stop{false};
        std::thread swapper([&] {
            const int d = ::open(QFile::encodeName(upper).constData(), O_RDONLY | O_DIRECTORY);
            for (int i = 0; !stop; i = (i + 1) % 50)
                ::renameat2(d, QByteArray("f" + QByteArray::number(i)).constData(), d, "fifo", RENAME_EXCHANGE);
            ::close(d);
        });
        QElapsedTimer t;
        t.start();
        for (int round = 0; round < 200 && t.elapsed() < 20000; ++round)
            (void)cow::listChanges(upper, lower);
        stop = true;
        swapper.join();
        QVERIFY2(t.elapsed() < 20000, "a listing waited on the FIFO");
    }

    // A name that is not UTF-8 cannot be named back: listed percent-encoded, as something left as is.
    void aNameThatIsNotUtf8IsListedAsIs()
    {
        QTemporaryDir dir;
        const QString lower = dir.filePath(QStringLiteral("lower")), upper = dir.filePath(QStringLiteral("upper"));
        QDir().mkpath(lower);
        QDir().mkpath(upper);
        const QByteArray name = QFile::encodeName(upper) + "/zz\xff";
        const int fd = ::open(name.constData(), O_WRONLY | O_CREAT, 0644);
        QVERIFY(fd >= 0);
        ::close(fd);
        auto listed = cow::listChanges(upper, lower);
        QVERIFY(listed && listed->size() == 1);
        QCOMPARE(listed->first().path, QStringLiteral("zz%FF"));
        QCOMPARE(listed->first().kind, cow::Change::Kind::Other);
    }

    void nothingChangedIsAnEmptyList()
    {
        QTemporaryDir dir;
        QDir().mkpath(dir.filePath(QStringLiteral("upper")));
        put(dir.filePath(QStringLiteral("lower/a")), "a");
        QCOMPARE(read(dir.filePath(QStringLiteral("upper")), dir.filePath(QStringLiteral("lower"))), QStringList());
        QVERIFY(!cow::listChanges(dir.filePath(QStringLiteral("none")), dir.filePath(QStringLiteral("lower"))));
    }
};

QTEST_GUILESS_MAIN(TestCowChanges)
#include "tst_cow_changes.moc"
