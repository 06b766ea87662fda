// SPDX-License-Identifier: Apache-2.0
// airlock-bench --cp and --disk: copying files in and out of a sandbox, and writing into a workspace
// with a size, each beside a baseline on the same filesystem in the same rounds.
#include "BenchSupport.h"
#include "TestDaemon.h"

#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QTemporaryDir>

#include <cstdio>
#include <sys/stat.h>

using namespace airlock;
using namespace airlock::test;

namespace airlock::bench {

// The exec check (commands.judgeExecs): in one sandbox, with the check on and off in the same
// rounds, an execution's round trip, a loop of 1,000 fork+exec of /bin/true inside one execution,
// and a make -j2 build of 100 small C files.
// cp (issue 19, item 7): 1 GiB (256 MiB with --quick) host -> sandbox and back through
// `airlockctl cp`, beside `cat SRC | cat > DST` on the same filesystem in the same rounds; into a
// workspace with a size (an ext4 image, the default) and into a plain folder beside the baseline's
// files (--disk none).
int benchCp(QList<Row> &rows, int rounds, bool quick)
{
    TestDaemon daemon;
    const QString sized = QStringLiteral("cp-bench"), plain = QStringLiteral("cp-bench-plain");
    if (!daemon.start() || daemon.create({QStringLiteral("--name"), sized}) != sized
        || daemon.create({QStringLiteral("--name"), plain, QStringLiteral("--disk"), QStringLiteral("none")})
            != plain) {
        std::fprintf(stderr, "airlock-bench --cp: cannot start airlockd or create the sandboxes\n");
        return 1;
    }
    const qint64 bytes = quick ? qint64(256) << 20 : qint64(1) << 30;
    QTemporaryDir scratch;
    const QString src = scratch.filePath(QStringLiteral("src.bin")), dst = scratch.filePath(QStringLiteral("dst.bin"));
    {
        QFile f(src);
        if (!f.open(QIODevice::WriteOnly))
            return 1;
        QByteArray block(8 << 20, Qt::Uninitialized);
        QRandomGenerator rng(7);
        rng.fillRange(reinterpret_cast<quint32 *>(block.data()), block.size() / 4);
        for (qint64 done = 0; done < bytes; done += block.size())
            f.write(block);
    }
    const EnvironmentBlock envp(daemon.environment());
    const QString ctl = binDir() + QStringLiteral("/airlockctl");
    const QString pipe = QStringLiteral("cat '%1' | cat > '%2'").arg(src, dst);
    struct Way {
        QString sandbox;
        QList<double> up, down;
    };
    QList<Way> ways = {{sized, {}, {}}, {plain, {}, {}}};
    QList<double> cat;
    for (int r = 0; r < rounds; ++r) {
        std::fprintf(stderr, "  round %d of %d\n", r + 1, rounds);
        QFile::remove(dst);
        cat.append(spawnMs({QStringLiteral("/bin/sh"), QStringLiteral("-c"), pipe}));
        for (Way &way : ways) {
            QFile::remove(dst);
            // Like the baseline's destination, the sandbox's copy from the last round goes first
            // (untimed): replacing it would add the unlink of 1 GiB to the upload.
            spawnMs({ctl, QStringLiteral("--no-autostart"), QStringLiteral("exec"), way.sandbox, QStringLiteral("--"),
                        QStringLiteral("rm"), QStringLiteral("-f"), QStringLiteral("big.bin")},
                envp.get());
            const QString remote = way.sandbox + QStringLiteral(":big.bin");
            way.up.append(
                spawnMs({ctl, QStringLiteral("--no-autostart"), QStringLiteral("cp"), src, remote}, envp.get()));
            way.down.append(
                spawnMs({ctl, QStringLiteral("--no-autostart"), QStringLiteral("cp"), remote, dst}, envp.get()));
            if (QFileInfo(dst).size() != bytes) {
                std::fprintf(stderr, "airlock-bench --cp: the copy back has %lld bytes, not %lld\n",
                    QFileInfo(dst).size(), bytes);
                return 1;
            }
        }
    }
    const double mib = double(bytes) / (1 << 20);
    const auto rate = [mib](const QList<double> &ms) { return mib / (median(ms) / 1000); };
    const QString what = quick ? QStringLiteral("256 MiB") : QStringLiteral("1 GiB");
    for (const Way &way : ways) {
        const QString where = way.sandbox == plain ? QStringLiteral(" (--disk none)") : QString();
        rows.append({QStringLiteral("cp %1 host -> sandbox%2").arg(what, where), rate(way.up), QStringLiteral("MiB/s"),
            QStringLiteral("cat | cat"), rate(cat), QStringLiteral(">= 0.5x")});
        rows.append({QStringLiteral("cp %1 sandbox -> host%2").arg(what, where), rate(way.down),
            QStringLiteral("MiB/s"), QStringLiteral("cat | cat"), rate(cat), QStringLiteral(">= 0.5x")});
    }
    return 0;
}

// Writing into a workspace with a size (issue 20, item 5): 1 GiB (256 MiB with --quick) by dd with
// fsync into a workspace image on a loop device (root's daemon) and into a plain one (--disk none)
// in the same rounds; with /dev/fuse open to a normal user, the same through fuse2fs (that user's
// daemon) beside its plain workspace.
int benchDisk(QList<Row> &rows, int rounds, bool quick)
{
    const int mib = quick ? 256 : 1024;
    const QStringList dd = {QStringLiteral("dd"), QStringLiteral("if=/dev/zero"), QStringLiteral("of=/workspace/f"),
        QStringLiteral("bs=1M"), QStringLiteral("count=%1").arg(mib), QStringLiteral("conv=fsync"),
        QStringLiteral("status=none")};
    const auto rate = [mib](const QList<double> &ms) { return mib / (median(ms) / 1000); };
    TestDaemon daemon;
    if (!daemon.start()
        || daemon
               .create(
                   {QStringLiteral("--name"), QStringLiteral("image"), QStringLiteral("--disk"), QStringLiteral("2G")})
               .isEmpty()
        || daemon
               .create({QStringLiteral("--name"), QStringLiteral("plain"), QStringLiteral("--disk"),
                   QStringLiteral("none")})
               .isEmpty()) {
        std::fprintf(stderr, "airlock-bench --disk: cannot start airlockd or create the sandboxes\n");
        return 1;
    }
    const EnvironmentBlock envp(daemon.environment());
    const QString ctl = binDir() + QStringLiteral("/airlockctl");
    QList<double> image, plain;
    for (int r = 0; r < rounds; ++r) {
        std::fprintf(stderr, "  round %d of %d\n", r + 1, rounds);
        for (auto [sb, into] : {std::pair{"image", &image}, {"plain", &plain}}) {
            spawnMs(
                {ctl, QStringLiteral("--no-autostart"), QStringLiteral("exec"), QLatin1String(sb), QStringLiteral("--"),
                    QStringLiteral("rm"), QStringLiteral("-f"), QStringLiteral("/workspace/f")},
                envp.get());
            into->append(spawnMs(QStringList{ctl, QStringLiteral("--no-autostart"), QStringLiteral("exec"),
                                     QLatin1String(sb), QStringLiteral("--")}
                    + dd,
                envp.get()));
        }
    }
    rows.append({QStringLiteral("dd %1 MiB + fsync, loop image").arg(mib), rate(image), QStringLiteral("MiB/s"),
        QStringLiteral("--disk none"), rate(plain), QStringLiteral("-")});
    daemon.stop();

    if (::geteuid() != 0 || ::access("/dev/fuse", F_OK) != 0)
        return 0;
    struct stat fuse { };
    ::stat("/dev/fuse", &fuse);
    ::chmod("/dev/fuse", 0666); // as Debian's udev has it; this machine's may not
    UnprivilegedDaemon user;
    if (user.start()
        && user.ctl({QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("image"),
                        QStringLiteral("--disk"), QStringLiteral("2G")})
                .first
            == 0
        && user.ctl({QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("plain"),
                        QStringLiteral("--disk"), QStringLiteral("none")})
                .first
            == 0) {
        QList<double> fused, userPlain;
        for (int r = 0; r < rounds; ++r) {
            for (auto [sb, into] : {std::pair{"image", &fused}, {"plain", &userPlain}}) {
                user.ctl({QStringLiteral("exec"), QLatin1String(sb), QStringLiteral("--"), QStringLiteral("rm"),
                    QStringLiteral("-f"), QStringLiteral("/workspace/f")});
                QElapsedTimer t;
                t.start();
                user.ctl(QStringList{QStringLiteral("exec"), QLatin1String(sb), QStringLiteral("--")} + dd);
                into->append(double(t.nsecsElapsed()) / 1e6);
            }
        }
        rows.append({QStringLiteral("dd %1 MiB + fsync, fuse2fs (a user's)").arg(mib), rate(fused),
            QStringLiteral("MiB/s"), QStringLiteral("--disk none"), rate(userPlain), QStringLiteral("-")});
        user.ctl({QStringLiteral("rm"), QStringLiteral("image"), QStringLiteral("plain")});
    }
    ::chmod("/dev/fuse", fuse.st_mode & 07777);
    return 0;
}

} // namespace airlock::bench
