// SPDX-License-Identifier: Apache-2.0
// Removing a workspace that a sandbox shaped: the daemon (often root) must remove exactly the
// tree, never follow a symlink out of it, never change a mode outside it.
#include "util/FileSystem.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>
#include <unistd.h>

using namespace airlock;

class TestFileSystem final : public QObject {
    Q_OBJECT
private:
    static void touch(const QString &path, const QByteArray &content = "x")
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(content);
    }
    static mode_t modeOf(const QString &path)
    {
        struct stat st { };
        ::lstat(QFile::encodeName(path).constData(), &st);
        return st.st_mode & 07777;
    }

private Q_SLOTS:
    void removesTheTreeAndNothingElse()
    {
        QTemporaryDir outside;
        const QString precious = outside.filePath(QStringLiteral("precious"));
        touch(precious, "keep me");
        QVERIFY(::chmod(QFile::encodeName(precious).constData(), 0600) == 0);
        QVERIFY(QDir().mkpath(outside.filePath(QStringLiteral("dir/sub"))));
        touch(outside.filePath(QStringLiteral("dir/sub/file")));
        const mode_t outsideDirMode = modeOf(outside.filePath(QStringLiteral("dir")));

        QTemporaryDir root;
        const QString ws = root.filePath(QStringLiteral("ws"));
        QVERIFY(QDir().mkpath(ws + QStringLiteral("/a/b/c")));
        touch(ws + QStringLiteral("/a/b/c/deep"));
        // Links out of the tree, as a sandbox would plant them.
        QVERIFY(QFile::link(precious, ws + QStringLiteral("/link-to-file")));
        QVERIFY(QFile::link(outside.filePath(QStringLiteral("dir")), ws + QStringLiteral("/a/link-to-dir")));
        // Directories made unreadable and unwritable, nested.
        QVERIFY(QDir().mkpath(ws + QStringLiteral("/locked/inner")));
        touch(ws + QStringLiteral("/locked/inner/f"));
        QVERIFY(::chmod(QFile::encodeName(ws + QStringLiteral("/locked/inner")).constData(), 0) == 0);
        QVERIFY(::chmod(QFile::encodeName(ws + QStringLiteral("/locked")).constData(), 0) == 0);
        QVERIFY(::chmod(QFile::encodeName(ws + QStringLiteral("/a")).constData(), 0500) == 0);

        QVERIFY(fs::removeTree(ws));
        QVERIFY(!QFileInfo::exists(ws));
        QFile p(precious);
        QVERIFY(p.open(QIODevice::ReadOnly));
        QCOMPARE(p.readAll(), QByteArray("keep me"));
        QCOMPARE(modeOf(precious), mode_t(0600));
        QVERIFY(QFileInfo::exists(outside.filePath(QStringLiteral("dir/sub/file"))));
        QCOMPARE(modeOf(outside.filePath(QStringLiteral("dir"))), outsideDirMode);
    }

    void aSymlinkAsTheRootIsRemovedNotFollowed()
    {
        QTemporaryDir outside;
        touch(outside.filePath(QStringLiteral("f")));
        QTemporaryDir root;
        const QString link = root.filePath(QStringLiteral("ws"));
        QVERIFY(QFile::link(outside.path(), link));
        QVERIFY(fs::removeTree(link));
        QVERIFY(!QFileInfo(link).isSymLink());
        QVERIFY(QFileInfo::exists(outside.filePath(QStringLiteral("f"))));
    }

    void aMissingTreeIsAlreadyRemoved()
    {
        QTemporaryDir root;
        QVERIFY(fs::removeTree(root.filePath(QStringLiteral("never-existed"))));
    }
};

QTEST_GUILESS_MAIN(TestFileSystem)
#include "tst_filesystem.moc"
