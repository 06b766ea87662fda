// SPDX-License-Identifier: Apache-2.0
// airlock-bench --cow: a copy-on-write project (decision 9) of 20,000 files / 500 MB, as an agent
// run gets one: a sandbox made with it, to its first command's end, beside the same sandbox with
// the project mounted read-only (no overlay) in the same rounds; then the changes to 100 of its
// files listed for review (cow::listChanges) and shown by `airlockctl agent diff` (the whole CLI),
// beside one walk over the whole project (what a review without the overlay's record would at
// least have to do).
#include "BenchSupport.h"
#include "TestDaemon.h"
#include "sandbox/CowChanges.h"

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <sys/stat.h>

namespace airlock::bench {

using test::CliResult;
using test::TestDaemon;

int benchCow(QList<Row> &rows, int rounds, bool quick)
{
    QTemporaryDir dir;
    ::chmod(QFile::encodeName(dir.path()).constData(), 0755);
    const QString project = dir.filePath(QStringLiteral("project"));
    const int folders = quick ? 20 : 200, perFolder = 100;
    const QByteArray content(25 * 1024, 'x'); // 20,000 x 25 KiB = 500 MB
    std::fprintf(stderr, "  writing the project (%d files)...\n", folders * perFolder);
    for (int d = 0; d < folders; ++d) {
        const QString sub = QStringLiteral("%1/d%2").arg(project).arg(d);
        QDir().mkpath(sub);
        ::chmod(QFile::encodeName(sub).constData(), 0777);
        for (int f = 0; f < perFolder; ++f) {
            QFile file(QStringLiteral("%1/f%2.txt").arg(sub).arg(f));
            if (!file.open(QIODevice::WriteOnly) || file.write(content) != content.size())
                return 1;
            file.setPermissions(QFileDevice::Permissions(0x6666));
        }
    }
    ::chmod(QFile::encodeName(project).constData(), 0777);
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench: cannot start airlockd\n");
        return 1;
    }
    // Made and its first command run, with the project as `mode` (cow or ro).
    int made = 0;
    const auto ready = [&](const char *mode) {
        const QString name = QStringLiteral("cow-%1").arg(++made);
        QElapsedTimer t;
        t.start();
        const CliResult c = daemon.ctl({QStringLiteral("create"), QStringLiteral("--name"), name,
            QStringLiteral("--mount"), project + QStringLiteral(":/project/p:") + QLatin1String(mode)});
        const CliResult r = daemon.ctl({QStringLiteral("exec"), name, QStringLiteral("-n"), QStringLiteral("--"),
            QStringLiteral("ls"), QStringLiteral("/project/p/d0/f0.txt")});
        const double ms = double(t.nsecsElapsed()) / 1e6;
        return c.exitCode == 0 && r.exitCode == 0 ? std::pair{ms, name} : std::pair{-1.0, name};
    };
    QList<double> cow, ro, listed, walked, diffed;
    for (int round = 0; round < rounds; ++round) {
        const auto [cowMs, cowName] = ready("cow");
        const auto [roMs, roName] = ready("ro");
        if (cowMs < 0 || roMs < 0) {
            std::fprintf(stderr, "airlock-bench: a sandbox with the project did not start\n");
            return 1;
        }
        cow.append(cowMs);
        ro.append(roMs);
        // 100 files changed in the view, then listed for review.
        const CliResult changed = daemon.ctl({QStringLiteral("exec"), cowName, QStringLiteral("-n"),
            QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"),
            QStringLiteral("for i in $(seq 0 99); do echo changed >> /project/p/d$((i % %1))/f$i.txt; done")
                .arg(folders)});
        QString upper; // a root daemon's (this benchmark runs as root)
        const QString info
            = QString::fromUtf8(daemon.ctl({QStringLiteral("info"), QStringLiteral("--json"), cowName}).out);
        const QString sandboxId
            = QJsonDocument::fromJson(info.toUtf8()).object().value(QStringLiteral("id")).toString();
        for (const QString &workspaces :
            QDir(QStringLiteral("/var/lib/airlock")).entryList({QStringLiteral("workspaces-*")}, QDir::Dirs))
            if (const QString u
                = QStringLiteral("/var/lib/airlock/%1/%2.runtime/cow-0/upper").arg(workspaces, sandboxId);
                QFileInfo::exists(u))
                upper = u;
        if (changed.exitCode != 0 || upper.isEmpty()) {
            std::fprintf(stderr, "airlock-bench: the changes were not made: %s\n", qPrintable(changed.describe()));
            return 1;
        }
        QElapsedTimer t;
        t.start();
        const auto changes = cow::listChanges(upper, project);
        listed.append(double(t.nsecsElapsed()) / 1e6);
        if (!changes || changes->size() != 100) {
            std::fprintf(
                stderr, "airlock-bench: %lld changes listed, not 100\n", changes ? qint64(changes->size()) : -1LL);
            return 1;
        }
        // The person's whole review: airlockctl agent diff, a process of its own, 100 diffs read
        // through the daemon.
        t.restart();
        const CliResult diff = daemon.ctl({QStringLiteral("agent"), QStringLiteral("diff"), cowName});
        diffed.append(double(t.nsecsElapsed()) / 1e6);
        if (diff.exitCode != 0 || diff.out.count("\ndiff --git ") + 1 != 100) {
            std::fprintf(stderr, "airlock-bench: agent diff did not show 100 files: %s\n", qPrintable(diff.describe()));
            return 1;
        }
        t.restart();
        qint64 files = 0;
        QDirIterator all(project, QDir::Files, QDirIterator::Subdirectories);
        while (all.hasNext()) {
            all.next();
            struct stat st { };
            files += ::lstat(QFile::encodeName(all.filePath()).constData(), &st) == 0 ? 1 : 0;
        }
        walked.append(double(t.nsecsElapsed()) / 1e6);
        if (files != qint64(folders) * perFolder) {
            std::fprintf(stderr, "airlock-bench: the walk saw %lld files\n", files);
            return 1;
        }
        for (const QString &name : {cowName, roName})
            daemon.ctl({QStringLiteral("rm"), name});
    }
    rows.append({QStringLiteral("cow project (20k files, 500 MB): made to first command"), median(cow),
        QStringLiteral("ms"), QStringLiteral("the same read-only"), median(ro), QStringLiteral("<= 1000 ms")});
    rows.append({QStringLiteral("cow: 100 changed files listed for review"), median(listed), QStringLiteral("ms"),
        QStringLiteral("one walk of the project"), median(walked), QStringLiteral("<= 200 ms")});
    rows.append({QStringLiteral("cow: airlockctl agent diff of 100 changed files"), median(diffed),
        QStringLiteral("ms"), QStringLiteral("one walk of the project"), median(walked), QStringLiteral("<= 200 ms")});
    daemon.stop();
    return 0;
}

} // namespace airlock::bench
