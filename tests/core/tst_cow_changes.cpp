// SPDX-License-Identifier: Apache-2.0
// How the changes a sandbox made to a copy-on-write mount are read for review (decision 9): an
// upper folder laid out as overlayfs lays it out (whiteouts, an opaque folder's attribute) over a
// host folder; what overlayfs copied up without a change in it is no change. (tst_cow_mount reads
// a real overlay's.)
#include "sandbox/CowChanges.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

using namespace airlock;

namespace {
void put(const QString &path, const QByteArray &data, int mode = 0644)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(data);
    f.close();
    ::chmod(QFile::encodeName(path).constData(), mode_t(mode));
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
