// SPDX-License-Identifier: Apache-2.0
// The history from the command line, against a real daemon: history pages and filters, show
// (byte-exact with --raw, inert escapes and gap markers without), show --follow without gaps or
// duplicates, search, runs, export bundles whose hash verifies (and catches tampering), prune.
#include "CliFixture.h"
#include "TestHelpers.h"

#include <QDir>
#include <QJsonObject>
#include <QScopeGuard>

#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
QJsonArray executionsOf(const CliResult &r)
{
    return jsonObject(r.out).value(QStringLiteral("executions")).toArray();
}
} // namespace

class TestCliHistory final : public QObject, private CliFixture {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QString error;
        QVERIFY2(startFixture(&error), qPrintable(error));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void historyListsExecutionsNewestFirstWithFilters()
    {
        const CliResult created = ctl(args("create", "--name", "hist"));
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        QCOMPARE(execIn(*m_daemon, q("hist"), args("sh", "-c", "exit 7")).exitCode, 7);
        QCOMPARE(execIn(*m_daemon, q("hist"), args("echo", "second")).exitCode, 0);
        const CliResult r = ctl(args("history", "--json", "--sandbox", "hist"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QJsonArray rows = executionsOf(r);
        QCOMPARE(rows.size(), 2);
        QCOMPARE(
            rows.at(0).toObject().value(QStringLiteral("argv")).toArray().at(1).toString(), QStringLiteral("second"));
        QCOMPARE(rows.at(0).toObject().value(QStringLiteral("status")).toString(), QStringLiteral("succeeded"));
        QCOMPARE(rows.at(0).toObject().value(QStringLiteral("bytesOut")).toInt(), 7);
        QCOMPARE(rows.at(1).toObject().value(QStringLiteral("status")).toString(), QStringLiteral("failed"));
        QCOMPARE(rows.at(1).toObject().value(QStringLiteral("exitCode")).toInt(), 7);
        const CliResult failed = ctl(args("history", "--sandbox", "hist", "--exit-code", "7"));
        QVERIFY2(
            failed.out.contains("failed  7 ") && !failed.out.contains("echo second"), qPrintable(failed.describe()));
        // Pages: one at a time, the next page named on stderr.
        const CliResult page = ctl(args("history", "--sandbox", "hist", "--limit", "1", "--json"));
        const qint64 next = qint64(jsonObject(page.out).value(QStringLiteral("next")).toDouble());
        QCOMPARE(next, qint64(rows.at(0).toObject().value(QStringLiteral("id")).toDouble()));
        const CliResult older = ctl(args("history", "--sandbox", "hist", "--json", "--before", QString::number(next)));
        QCOMPARE(executionsOf(older).size(), 1);
        QCOMPARE(executionsOf(older).at(0).toObject().value(QStringLiteral("exitCode")).toInt(), 7);
        QCOMPARE(executionsOf(ctl(args("history", "--json", "--sandbox", "hist", "--since", "1h"))).size(), 2);
        QCOMPARE(executionsOf(ctl(args("history", "--json", "--sandbox", "hist", "--until", "2020-01-01"))).size(), 0);
        // Bad filters are usage errors that say what is expected.
        const CliResult bad = ctl(args("history", "--status", "sideways"));
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("--status: expected one of running, succeeded"), qPrintable(bad.describe()));
        const CliResult badTime = ctl(args("history", "--since", "yesterday"));
        QCOMPARE(badTime.exitCode, 2);
        QVERIFY2(badTime.err.contains("use an age like 30m"), qPrintable(badTime.describe()));
        ctl(args("rm", "hist"));
    }

    void showReplaysTheExactBytesOrInertText()
    {
        // Output that would drive a terminal: an OSC 52 clipboard write, a title, NUL, invalid UTF-8.
        const char text[] = "ok \x1b]52;c;cHduZWQ=\x07 \x1b]0;title\x07 \x00 \xff\xfe end\n";
        const QByteArray out(text, sizeof text - 1);
        const CliResult r
            = sh(QStringLiteral("printf 'ok \\033]52;c;cHduZWQ=\\007 \\033]0;title\\007 \\000 \\377\\376 end\\n'; "
                                "printf 'to stderr \\033[2J\\n' >&2"));
        QCOMPARE(r.exitCode, 0);
        const CliResult last = ctl(args("history", "--json", "--sandbox", "cli", "--limit", "1"));
        const QString id
            = QString::number(qint64(executionsOf(last).at(0).toObject().value(QStringLiteral("id")).toDouble()));
        const CliResult raw = ctl(args("show", id, "--raw"));
        QCOMPARE(raw.exitCode, 0);
        QCOMPARE(raw.out, out);
        QCOMPARE(raw.err, QByteArray("to stderr \x1b[2J\n"));
        const CliResult shown = ctl(args("show", id));
        QCOMPARE(shown.exitCode, 0);
        QVERIFY2(shown.out.startsWith(QByteArray(QByteArray("execution ") + id.toUtf8() + " (cli:")),
            qPrintable(shown.describe()));
        QVERIFY2(shown.out.contains("status    succeeded   exit 0"), qPrintable(shown.describe()));
        // Every control sequence but colours is inert text; nothing raw reaches the terminal.
        QVERIFY2(!shown.out.contains("\x1b]") && !shown.out.contains('\0') && !shown.err.contains("\x1b["),
            qPrintable(shown.describe()));
        QVERIFY2(shown.out.contains("\\x1b]52;c;cHduZWQ=\\x07") && shown.out.contains("\\x00")
                && shown.out.contains("\\xff\\xfe"),
            qPrintable(shown.describe()));
        QVERIFY2(shown.err.contains("to stderr \\x1b[2J"), qPrintable(shown.describe()));
        // The same execution by sandbox and number; an unknown one is "not found" (exit 3).
        const QString byName
            = QStringLiteral("cli:%1").arg(executionsOf(last).at(0).toObject().value(QStringLiteral("exec")).toInt());
        QCOMPARE(ctl(args("show", byName, "--raw")).out, out);
        const CliResult missing = ctl(args("show", "999999"));
        QCOMPARE(missing.exitCode, 3);
        QCOMPARE(missing.err, QByteArray("airlockctl: no execution 999999 in the history\n"));
        QCOMPARE(ctl(args("show", "not an id")).exitCode, 2);
    }

    void theStoredOutputCapKeepsHeadTailAndTrueCounts()
    {
        TestDaemon daemon(args("--history-output-cap", "64K"));
        QVERIFY(daemon.start());
        QString error;
        const QString sb = daemon.create({}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        // 200 000 numbered lines, 1 288 895 bytes: far beyond 64 KiB.
        QCOMPARE(execIn(daemon, sb, args("seq", "1", "200000")).exitCode, 0);
        QByteArray expected;
        for (int i = 1; i <= 200000; ++i)
            expected += QByteArray::number(i) + '\n';
        const QJsonObject shown = jsonObject(daemon.ctl(args("show", "1", "--json")).out);
        QCOMPARE(qint64(shown.value(QStringLiteral("bytesOut")).toDouble()), expected.size());
        QCOMPARE(shown.value(QStringLiteral("truncated")).toBool(), true);
        const qint64 stored = qint64(shown.value(QStringLiteral("storedBytes")).toDouble());
        QVERIFY2(stored >= 64 * 1024 && stored <= 64 * 1024 + 256 * 1024, qPrintable(QString::number(stored)));
        const QJsonArray gaps = shown.value(QStringLiteral("gaps")).toArray();
        QCOMPARE(gaps.size(), 1);
        QCOMPARE(gaps.at(0).toObject().value(QStringLiteral("offset")).toInt(), 32 * 1024); // the head
        const qint64 gap = qint64(gaps.at(0).toObject().value(QStringLiteral("bytes")).toDouble());
        QCOMPARE(32 * 1024 + gap + (stored - 32 * 1024), expected.size()); // and the tail reaches the end
        // Byte for byte: the head, then the tail; the marker says what is missing.
        const CliResult raw = daemon.ctl(args("show", "1", "--raw"));
        QCOMPARE(raw.out, expected.left(32 * 1024) + expected.right(stored - 32 * 1024));
        const CliResult marked = daemon.ctl(args("show", "1"));
        QVERIFY2(marked.out.contains(QByteArray("\n[airlock: ")) && marked.out.contains("of stdout not stored]\n"),
            qPrintable(QString::fromUtf8(marked.out.right(200))));
        QVERIFY(marked.out.endsWith("200000\n"));
    }

    void searchFindsAWordACommandPrinted()
    {
        QCOMPARE(sh(QStringLiteral("echo the quick axolotl-banana jumps")).exitCode, 0);
        QCOMPARE(sh(QStringLiteral("echo nothing to see")).exitCode, 0);
        const CliResult found = ctl(args("search", "axolotl", "--json"));
        QVERIFY2(found.exitCode == 0, qPrintable(found.describe()));
        QCOMPARE(executionsOf(found).size(), 1);
        // The phrase in the output, not just the command line (which holds it too): search a
        // word only the output has, made by the shell.
        QCOMPARE(sh(QStringLiteral("x=platy; echo ${x}pus-found")).exitCode, 0);
        const QJsonArray platypus = executionsOf(ctl(args("search", "platypus", "--json")));
        QCOMPARE(platypus.size(), 1);
        QVERIFY(platypus.at(0)
                    .toObject()
                    .value(QStringLiteral("argv"))
                    .toArray()
                    .at(2)
                    .toString()
                    .contains(QStringLiteral("${x}pus")));
        QCOMPARE(executionsOf(ctl(args("search", "platypus", "--json", "--status", "failed"))).size(), 0);
        const CliResult none = ctl(args("search", "zzzunlikelyzzz"));
        QCOMPARE(none.exitCode, 0);
        QCOMPARE(none.err, QByteArray("no executions match\n"));
        QCOMPARE(ctl(args("search")).exitCode, 2);
    }

    void runsGroupAnAgentSessionAndExportRoundTrips()
    {
        QCOMPARE(ctl(args("--run", "agent-x", "create", "--name", "ag")).exitCode, 0);
        QCOMPARE(
            ctl(args("--run", "agent-x", "exec", "ag", "-n", "--", "sh", "-c", "printf 'one\\377\\n'")).exitCode, 0);
        QCOMPARE(
            ctl(args("--run", "agent-x", "exec", "ag", "-n", "--", "sh", "-c", "echo two >&2; exit 4")).exitCode, 4);
        QCOMPARE(ctl(args("exec", "ag", "-n", "--", "true")).exitCode, 0); // its own run
        const QJsonArray runs = jsonObject(ctl(args("runs", "--json")).out).value(QStringLiteral("runs")).toArray();
        QJsonObject agent;
        for (const QJsonValue &r : runs)
            if (r.toObject().value(QStringLiteral("name")).toString() == QLatin1String("agent-x"))
                agent = r.toObject();
        QCOMPARE(agent.value(QStringLiteral("sandboxes")).toInt(), 1);
        QCOMPARE(agent.value(QStringLiteral("executions")).toInt(), 2);
        QVERIFY(
            runs.at(0).toObject().value(QStringLiteral("name")).toString().startsWith(QStringLiteral("airlockctl-")));
        QCOMPARE(executionsOf(ctl(args("history", "--json", "--run", "agent-x"))).size(), 2);

        for (const char *format : {"jsonl", "json"}) {
            const QString file = hostFile(QStringLiteral("bundle.") + QLatin1String(format));
            const CliResult exported = ctl(args("export", "agent-x", "--format", format, "-o", file));
            QVERIFY2(exported.exitCode == 0, qPrintable(exported.describe()));
            const CliResult verified = ctl(args("export", "--verify", file));
            QVERIFY2(verified.exitCode == 0 && verified.out.startsWith("ok: "), qPrintable(verified.describe()));
            QVERIFY2(exported.err.contains(verified.out.mid(verified.out.indexOf("sha256 ") + 7, 64)),
                qPrintable(exported.describe()));
        }
        // What the jsonl bundle holds: the run, its sandbox with its spec, both executions, their
        // events and their output bytes exactly; and `head -n -1 | sha256sum` checks it.
        const QByteArray bundle = readFile(hostFile(QStringLiteral("bundle.jsonl")));
        QMap<QString, int> types;
        QByteArray stdoutBytes, stderrBytes;
        for (const QByteArray &l : bundle.split('\n')) {
            const QJsonObject r = jsonObject(l);
            const QString type = r.value(QStringLiteral("type")).toString();
            types[type] += 1;
            if (type == QLatin1String("sandbox"))
                QCOMPARE(r.value(QStringLiteral("spec")).toObject().value(QStringLiteral("name")).toString(),
                    QStringLiteral("ag"));
            if (type == QLatin1String("output"))
                (r.value(QStringLiteral("stream")).toInt() == 1 ? stdoutBytes : stderrBytes)
                    += QByteArray::fromBase64(r.value(QStringLiteral("data")).toString().toLatin1());
        }
        QCOMPARE(types.value(QStringLiteral("bundle")), 1);
        QCOMPARE(types.value(QStringLiteral("run")), 1);
        QCOMPARE(types.value(QStringLiteral("sandbox")), 1);
        QCOMPARE(types.value(QStringLiteral("execution")), 2);
        QCOMPARE(types.value(QStringLiteral("event")), 7); // created, 2 x (started, its program, exited)
        QCOMPARE(types.value(QStringLiteral("sha256")), 1);
        QCOMPARE(stdoutBytes, QByteArray("one\xff\n"));
        QCOMPARE(stderrBytes, QByteArray("two\n"));
        QProcess shasum;
        shasum.start(QStringLiteral("sh"),
            {QStringLiteral("-c"),
                QStringLiteral("head -n -1 '%1' | sha256sum").arg(hostFile(QStringLiteral("bundle.jsonl")))});
        QVERIFY(shasum.waitForFinished());
        QVERIFY2(bundle.trimmed().endsWith(
                     QByteArray("\"sha256\":\"" + shasum.readAllStandardOutput().left(64) + "\",\"type\":\"sha256\"}")),
            qPrintable(QString::fromUtf8(bundle.right(120))));

        // One changed byte, or a bundle cut short, is caught.
        QByteArray tampered = bundle;
        tampered.replace("\"exitCode\":4", "\"exitCode\":0");
        QVERIFY(tampered != bundle);
        QVERIFY(writeFile(hostFile(QStringLiteral("tampered.jsonl")), tampered));
        const CliResult bad = ctl(args("export", "--verify", hostFile(QStringLiteral("tampered.jsonl"))));
        QCOMPARE(bad.exitCode, 1);
        QVERIFY2(
            bad.err.contains("the bundle was changed or damaged: its content hashes to"), qPrintable(bad.describe()));
        QVERIFY(writeFile(hostFile(QStringLiteral("cut.jsonl")), bundle.left(bundle.size() / 2)));
        const CliResult cut = ctl(args("export", "--verify", hostFile(QStringLiteral("cut.jsonl"))));
        QCOMPARE(cut.exitCode, 1);
        QVERIFY2(cut.err.contains("not a complete bundle"), qPrintable(cut.describe()));
        QCOMPARE(ctl(args("export", "no-such-run")).exitCode, 3);
        ctl(args("rm", "ag"));
    }

    void followContinuesLiveWithoutGapsOrDuplicates()
    {
        // 150 lines over ~3 s, some while `show --follow` replays what is stored.
        auto running = startCtl(args("exec", m_sb, "-n", "--", "sh", "-c",
            "i=0; while [ $i -lt 150 ]; do i=$((i+1)); echo line $i; "
            "[ $((i % 10)) = 0 ] && sleep 0.2; done"));
        QVERIFY(running->waitForStarted());
        QString id;
        QVERIFY(waitFor(
            [&] {
                const QJsonArray rows
                    = executionsOf(ctl(args("history", "--json", "--sandbox", "cli", "--status", "running")));
                if (rows.isEmpty())
                    return false;
                id = QString::number(qint64(rows.at(0).toObject().value(QStringLiteral("id")).toDouble()));
                return true;
            },
            10000));
        QTest::qWait(300);
        const CliResult followed = ctl(args("show", id, "--follow", "--raw"), {}, 30000);
        QVERIFY(running->waitForFinished(30000));
        QByteArray expected;
        for (int i = 1; i <= 150; ++i)
            expected += "line " + QByteArray::number(i) + '\n';
        QCOMPARE(followed.out, expected);
        QCOMPARE(running->readAllStandardOutput(), expected);
        const QJsonObject final = jsonObject(ctl(args("show", id, "--json")).out);
        QCOMPARE(final.value(QStringLiteral("status")).toString(), QStringLiteral("succeeded"));
    }

    void namesAndCommandsNeverDriveTheTerminal()
    {
        // A run name is chosen by the agent: one with controls is refused before anything runs.
        const CliResult evil = ctl(args("--run", "x\x1b]52;c;cHduZWQ=\x07", "exec", "cli", "-n", "--", "true"));
        QCOMPARE(evil.exitCode, 2);
        QCOMPARE(evil.err,
            QByteArray("airlockctl: run names are 1 to 200 letters, digits and . _ : @ / + - (starting with a letter "
                       "or digit)\n"));
        // A command with controls and a right-to-left override is listed escaped.
        QCOMPARE(ctl(args("exec", "cli", "-n", "--", "true", "a\x1b[2Jb",
                         QString(QChar(0x202e)) + QStringLiteral("-looks-reversed")))
                     .exitCode,
            0);
        const CliResult listed = ctl(args("history", "--sandbox", "cli", "--limit", "1"));
        QVERIFY2(!listed.out.contains('\x1b') && !listed.out.contains("\xe2\x80\xae"), qPrintable(listed.describe()));
        QVERIFY2(listed.out.contains("'a\\x1b[2Jb' '\\u{202e}-looks-reversed'"), qPrintable(listed.describe()));
    }

    void pruneDropsOutputButKeepsTheRecord()
    {
        QCOMPARE(sh(QStringLiteral("echo keep-my-record")).exitCode, 0);
        const QJsonArray rows = executionsOf(ctl(args("search", "keep-my-record", "--json")));
        QCOMPARE(rows.size(), 1);
        const QString id = QString::number(qint64(rows.at(0).toObject().value(QStringLiteral("id")).toDouble()));
        const CliResult pruned = ctl(args("prune", "--keep", "0", "--vacuum"));
        QVERIFY2(
            pruned.exitCode == 0 && pruned.out.startsWith("dropped the output of "), qPrintable(pruned.describe()));
        const QJsonObject shown = jsonObject(ctl(args("show", id, "--json")).out);
        QCOMPARE(shown.value(QStringLiteral("outputPruned")).toBool(), true);
        QCOMPARE(shown.value(QStringLiteral("bytesOut")).toInt(), 15);
        QCOMPARE(shown.value(QStringLiteral("storedBytes")).toInt(), 0);
        QCOMPARE(shown.value(QStringLiteral("output")).toArray().size(), 0);
        const CliResult marked = ctl(args("show", id));
        QVERIFY2(marked.out.contains("(output pruned)")
                && marked.out.contains("[airlock: 15 B of stdout not stored at the end]"),
            qPrintable(marked.describe()));
        QCOMPARE(ctl(args("prune", "--keep", "lots")).exitCode, 2);
        QVERIFY2(pruned.err.isEmpty(), qPrintable(pruned.describe())); // no progress into a pipe

        // Watched on a terminal: each phase as it goes (the daemon's progress notifications),
        // rewritten in place, and the line cleared before the result.
        const CliResult watched = m_daemon->ctlWatched(args("prune", "--keep", "0", "--vacuum"));
        QVERIFY2(
            watched.exitCode == 0 && watched.out.startsWith("dropped the output of "), qPrintable(watched.describe()));
        const qsizetype pruning = watched.err.indexOf("\rpruning  ");
        const qsizetype vacuuming = watched.err.indexOf("\rvacuuming  ");
        QVERIFY2(
            pruning >= 0 && vacuuming > pruning && watched.err.endsWith("\r\x1b[K"), qPrintable(watched.describe()));
    }

    // A history whose disk runs short (issue 19, item 8): the daemon keeps half its --disk-reserve
    // free, holding the history to less output (the oldest goes first), says so in `info`, and
    // goes on recording. Its data folder is a 160 MiB tmpfs; 96M of reserve leaves 48 MiB free.
    // (What it leaves free is less what one batch writes: here 2 MiB of output.)
    void aShortDiskHoldsTheHistoryBackAndInfoSaysSo()
    {
        if (::geteuid() != 0)
            QSKIP("a small filesystem of its own (tmpfs) needs root");
        TestDaemon daemon({QStringLiteral("--disk-reserve"), QStringLiteral("96M"),
            QStringLiteral("--history-output-cap"), QStringLiteral("2M")});
        QVERIFY(QDir().mkpath(daemon.dataDir()));
        QCOMPARE(
            ::mount("airlock-test", QFile::encodeName(daemon.dataDir()).constData(), "tmpfs", 0, "size=160m,mode=0700"),
            0);
        const QByteArray mountPoint = QFile::encodeName(daemon.dataDir());
        const auto unmount = qScopeGuard([&] { ::umount2(mountPoint.constData(), MNT_DETACH); });
        QVERIFY(daemon.start());
        QCOMPARE(daemon.create({QStringLiteral("--name"), QStringLiteral("short"), QStringLiteral("--disk"),
                     QStringLiteral("none")}),
            QStringLiteral("short"));
        const auto freeBytes = [&] {
            struct statvfs fs { };
            return ::statvfs(mountPoint.constData(), &fs) == 0 ? qint64(fs.f_bavail) * qint64(fs.f_frsize) : -1;
        };
        // 2 MiB stored per execution (its head and tail), 64 of them: more than the disk has.
        // (Output of few distinct words: the search index's own growth is not held back, see
        // HistoryStore::Options::keepFreeBytes.)
        qint64 leastFree = freeBytes();
        for (int i = 0; i < 64; ++i) {
            const CliResult r = daemon.ctl({QStringLiteral("exec"), QStringLiteral("short"), QStringLiteral("--"),
                QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("yes airlock-output | head -c 3000000")});
            QVERIFY2(
                r.exitCode == 0, qPrintable(QStringLiteral("execution %1: %2").arg(i).arg(r.describe().left(400))));
            leastFree = std::min(leastFree, freeBytes());
        }
        const CliResult after = daemon.ctl({QStringLiteral("exec"), QStringLiteral("short"), QStringLiteral("--"),
            QStringLiteral("echo"), QStringLiteral("still-recorded")});
        QVERIFY2(after.exitCode == 0 && after.out == "still-recorded\n", qPrintable(after.describe()));
        // What it leaves free, less what its index and log take past the floor (31 MiB seen in CI).
        QVERIFY2(leastFree > 16 * 1024 * 1024, qPrintable(QStringLiteral("%1 bytes free at the least").arg(leastFree)));
        const CliResult info = daemon.ctl({QStringLiteral("info")});
        QVERIFY2(info.exitCode == 0 && info.out.contains("NOTICE:      the disk holding the history has ")
                && info.out.contains(" under the 48 MiB it leaves free: it keeps "),
            qPrintable(info.describe()));
        const QJsonArray rows = executionsOf(daemon.ctl({QStringLiteral("history"), QStringLiteral("--json")}));
        QVERIFY2(rows.size() >= 20, qPrintable(QString::number(rows.size()))); // a page of them: every record stays
        daemon.stop();
    }
};

QTEST_GUILESS_MAIN(TestCliHistory)
#include "tst_cli_history.moc"
