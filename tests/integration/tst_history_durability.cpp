// SPDX-License-Identifier: Apache-2.0
// The history under stress, with a real daemon: kill -9 at random moments loses nothing that was
// acknowledged and never corrupts the database; 50 concurrent executions are stored complete and
// in the order live subscribers saw; a full filesystem makes the daemon refuse new work with a
// clear error, and it heals when space returns.
#include "TestHelpers.h"
#include "history/HistoryReader.h"
#include "history/Sql.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QRandomGenerator>
#include <QTest>

#include <csignal>
#include <sys/mount.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
QString historyPath(const TestDaemon &d)
{
    return d.dataDir() + QStringLiteral("/history.db");
}

// One read-only connection (the real read path) and the first column of a query's rows.
class Db {
public:
    explicit Db(const QString &path)
        : m_db(sql::open(path, true))
    {
    }
    QStringList rows(const QString &statement) const
    {
        if (!m_db)
            return {QStringLiteral("error: ") + m_db.error().message};
        const QByteArray utf8 = statement.toUtf8();
        sql::Stmt st(m_db->get(), utf8.constData());
        QStringList out;
        while (st.step())
            out.append(st.columnText(0));
        return out;
    }
    QString one(const QString &statement) const { return rows(statement).value(0); }

private:
    Result<sql::Db> m_db;
};

QStringList rows(const QString &path, const QString &statement)
{
    return Db(path).rows(statement);
}

QString one(const QString &path, const QString &statement)
{
    return Db(path).one(statement);
}

Result<QJsonObject> startExec(DaemonClient &client, const QString &sandbox, const QStringList &argv)
{
    return client.call(QStringLiteral("exec.start"),
        {{QStringLiteral("sandbox"), sandbox}, {QStringLiteral("argv"), QJsonArray::fromStringList(argv)}});
}

struct Acked {
    QString sandbox;
    uint32_t exec = 0;
};

// What the database lacks of what clients were told: acknowledged starts, and every non-output
// event a subscriber heard (exits with the status and code they were heard with).
QString acknowledgedButMissing(const Db &db, const QList<Acked> &starts, const QList<Event> &heard)
{
    for (const Acked &a : starts)
        if (db.one(QStringLiteral("SELECT count(*) FROM executions WHERE sandbox_id='%1' AND exec_id=%2")
                       .arg(a.sandbox)
                       .arg(a.exec))
            != QLatin1String("1"))
            return QStringLiteral("acknowledged start %1:%2 missing").arg(a.sandbox).arg(a.exec);
    for (const Event &e : heard) {
        if (db.one(QStringLiteral("SELECT kind FROM events WHERE sandbox_id='%1' AND seq=%2").arg(e.sandbox).arg(e.seq))
            != e.kind)
            return QStringLiteral("%1 #%2 of %3 was heard but not stored").arg(e.kind).arg(e.seq).arg(e.sandbox);
        if (e.kind != QLatin1String("exec.exited"))
            continue;
        const QJsonValue code = e.payload.value(QStringLiteral("exitCode"));
        const QString expected = e.payload.value(QStringLiteral("status")).toString() + QLatin1Char(' ')
            + (code.isDouble() ? QString::number(code.toInt()) : QStringLiteral("x"));
        const QString stored = db.one(QStringLiteral("SELECT status || ' ' || coalesce(exit_code, 'x') FROM executions "
                                                     "WHERE sandbox_id='%1' AND exec_id=%2")
                                          .arg(e.sandbox)
                                          .arg(e.exec));
        if (stored != expected)
            return QStringLiteral("exit of %1:%2 heard as '%3', stored as '%4'")
                .arg(e.sandbox)
                .arg(e.exec)
                .arg(expected, stored);
    }
    return {};
}
} // namespace

class TestHistoryDurability final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void killNineAtRandomMomentsLosesNothingAcknowledged()
    {
        const quint32 seed = QRandomGenerator::global()->generate();
        qInfo("seed %u", seed);
        QRandomGenerator rng(seed);
        TestDaemon d;
        QList<Acked> started; // exec.start replies: committed before they were sent
        QList<Event> heard; // every non-output event a subscriber received
        qsizetype checkedStarts = 0, checkedHeard = 0;
        constexpr int kIterations = 50;
        for (int i = 0; i < kIterations; ++i) {
            QVERIFY2(d.start(), qPrintable(QStringLiteral("iteration %1").arg(i)));
            auto client = d.connect();
            QVERIFY(client);
            QObject::connect(client.get(), &DaemonClient::eventReceived, client.get(), [&heard](const Event &e) {
                if (!e.isOutput())
                    heard.append(e);
            });
            auto created = client->call(QStringLiteral("sandbox.create"),
                {{QStringLiteral("spec"), QJsonObject{{QStringLiteral("name"), QStringLiteral("k%1").arg(i)}}}});
            QVERIFY2(created, qPrintable(created ? QString() : created.error().message));
            const QString sb = created->value(QStringLiteral("id")).toString();
            QVERIFY(client->call(QStringLiteral("events.subscribe"), {{QStringLiteral("sandbox"), sb}}));
            // A flood of output (longer than the iteration, whatever the machine's speed, and below
            // the 1 GiB output limit: it is in flight when the daemon dies), and short executions starting and exiting
            // around it, until the daemon is killed at a random moment.
            auto flood = startExec(*client, sb, args("sh", "-c", "yes airlock-durability-flood | head -c 900000000"));
            QVERIFY(flood);
            started.append({sb, uint32_t(flood->value(QStringLiteral("exec")).toDouble())});
            const int killAfterMs = int(rng.bounded(10, 400));
            QElapsedTimer t;
            t.start();
            while (t.elapsed() < killAfterMs) {
                auto e = startExec(*client, sb,
                    args("sh", "-c", QStringLiteral("echo run %1; exit %2").arg(i).arg(rng.bounded(0, 4))));
                QVERIFY2(e, qPrintable(e ? QString() : e.error().message));
                started.append({sb, uint32_t(e->value(QStringLiteral("exec")).toDouble())});
                QTest::qWait(int(rng.bounded(0, 20)));
            }
            QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
            QVERIFY(d.process().waitForFinished(5000));
            client.reset();

            // Straight after the crash, before any recovery: whole, and holding every fact that
            // anyone was told in this iteration (earlier ones are checked again at the end).
            const QString path = historyPath(d);
            QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
            QString missing = acknowledgedButMissing(Db(path), started.mid(checkedStarts), heard.mid(checkedHeard));
            QVERIFY2(missing.isEmpty(), qPrintable(QStringLiteral("iteration %1: %2").arg(i).arg(missing)));
            checkedStarts = started.size();
            checkedHeard = heard.size();
        }
        // The next daemon marks what was in flight interrupted; nothing is left running.
        QVERIFY(d.start());
        const QString path = historyPath(d);
        QCOMPARE(
            one(path, QStringLiteral("SELECT count(*) FROM executions WHERE status = 'running'")), QStringLiteral("0"));
        QCOMPARE(one(path, QStringLiteral("SELECT count(*) FROM executions WHERE status = 'interrupted'")).toInt()
                >= kIterations,
            true);
        QCOMPARE(
            one(path, QStringLiteral("SELECT count(*) FROM sandboxes WHERE deleted_ms IS NULL")), QStringLiteral("0"));
        QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
        QVERIFY(started.size() > kIterations);
        const QString missing = acknowledgedButMissing(Db(path), started, heard);
        QVERIFY2(missing.isEmpty(), qPrintable(missing));
        d.stop();
    }

    void fiftyConcurrentExecutionsAreStoredCompleteAndInOrder()
    {
        TestDaemon d;
        QVERIFY(d.start());
        auto client = d.connect();
        QVERIFY(client);
        QList<Event> live;
        QObject::connect(
            client.get(), &DaemonClient::eventReceived, client.get(), [&live](const Event &e) { live.append(e); });
        QVERIFY(client->call(QStringLiteral("events.subscribe")));
        QStringList sandboxes;
        for (int s = 0; s < 5; ++s) {
            auto created = client->call(QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), QJsonObject{}}});
            QVERIFY(created);
            sandboxes.append(created->value(QStringLiteral("id")).toString());
        }
        QSet<QPair<QString, uint32_t>> running;
        for (int n = 0; n < 50; ++n) {
            const QString sb = sandboxes.at(n % 5);
            auto e = startExec(*client, sb,
                args("sh", "-c",
                    QStringLiteral("i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo e%1 out $i; "
                                   "[ $((i % 50)) = 0 ] && echo e%1 err $i >&2; done; exit %2")
                        .arg(n)
                        .arg(n % 7)));
            QVERIFY(e);
            running.insert({sb, uint32_t(e->value(QStringLiteral("exec")).toDouble())});
        }
        QVERIFY(waitFor(
            [&] {
                for (const Event &e : std::as_const(live))
                    if (e.kind == QLatin1String("exec.exited"))
                        running.remove({e.sandbox, e.exec});
                return running.isEmpty();
            },
            60000));
        const QString path = historyPath(d);
        for (const QString &sb : std::as_const(sandboxes)) {
            // Gap-free sequence numbers live, and the same facts in the same order stored.
            QStringList heard;
            uint64_t expectedSeq = 0;
            QMap<uint32_t, QByteArray> liveOut, liveErr;
            for (const Event &e : std::as_const(live)) {
                if (e.sandbox != sb)
                    continue;
                if (expectedSeq)
                    QCOMPARE(e.seq, expectedSeq + 1);
                expectedSeq = e.seq;
                if (e.isOutput())
                    (e.stream == 1 ? liveOut : liveErr)[e.exec] += e.data;
                else if (e.kind != QLatin1String("sandbox.created")) // before the subscription could name it
                    heard.append(QStringLiteral("%1 %2").arg(e.seq).arg(e.kind));
            }
            QStringList stored = rows(path,
                QStringLiteral("SELECT seq || ' ' || kind FROM events WHERE sandbox_id='%1' AND kind != "
                               "'sandbox.created' ORDER BY seq")
                    .arg(sb));
            QCOMPARE(stored, heard);
            QCOMPARE(heard.size(), 30); // 10 executions: started, its program (the exec check), exited
            for (auto it = liveOut.cbegin(); it != liveOut.cend(); ++it) {
                auto row = HistoryReader(path).execution(QStringLiteral("%1:%2").arg(sb).arg(it.key()));
                QVERIFY(row);
                const qint64 id = qint64(row->value(QStringLiteral("id")).toDouble());
                QByteArray out, err;
                for (QJsonValue after = 0; after.isDouble();) {
                    auto page = HistoryReader(path).output(id, qint64(after.toDouble()), 1 << 20);
                    QVERIFY(page);
                    for (const QJsonValue &c : page->value(QStringLiteral("chunks")).toArray())
                        (c.toObject().value(QStringLiteral("stream")).toInt() == 1 ? out : err)
                            += QByteArray::fromBase64(c.toObject().value(QStringLiteral("data")).toString().toLatin1());
                    after = page->value(QStringLiteral("next"));
                }
                QCOMPARE(out, it.value());
                QCOMPARE(err, liveErr.value(it.key()));
                QCOMPARE(out.count('\n'), 300);
                QCOMPARE(err.count('\n'), 6);
                QCOMPARE(qint64(row->value(QStringLiteral("bytesOut")).toDouble()), out.size());
            }
        }
        QCOMPARE(one(path, QStringLiteral("SELECT count(*) FROM executions WHERE status IN ('succeeded', 'failed')")),
            QStringLiteral("50"));
    }

    void aFullDiskRefusesNewWorkAndHeals()
    {
        if (::geteuid() != 0)
            QSKIP("mounting a small tmpfs for the history needs root (CI runs as root)");
        TestDaemon d;
        // The daemon's data directory (history and workspaces) on a filesystem of 16 MiB.
        const QString data = QFileInfo(d.dataDir()).path();
        QVERIFY(::mount("tmpfs", native(data).constData(), "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0711") == 0);
        auto unmount = qScopeGuard([&] {
            d.stop();
            ::umount2(native(data).constData(), MNT_DETACH);
        });
        QVERIFY(d.start());
        QString error;
        const QString sb = d.create({}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        QCOMPARE(execIn(d, sb, args("echo", "before")).exitCode, 0);

        // Fill it to the last block.
        const QString filler = d.dataDir() + QStringLiteral("/filler");
        {
            QFile f(filler);
            QVERIFY(f.open(QIODevice::WriteOnly));
            const QByteArray block(64 * 1024, 'f');
            while (f.write(block) == block.size() && f.flush()) { }
            const QByteArray byte(1, 'f');
            while (f.write(byte) == 1 && f.flush()) { }
        }
        // Output the store cannot write: the daemon notices and from then on refuses new work.
        execIn(d, sb, args("seq", "1", "400000"));
        CliResult refused;
        QVERIFY(waitFor(
            [&] {
                refused = execIn(d, sb, args("echo", "during"));
                return refused.exitCode != 0;
            },
            10000));
        QVERIFY2(refused.exitCode == 6, qPrintable(refused.describe()));
        QVERIFY2(refused.err.contains("refusing new work: the history cannot be written")
                && refused.err.contains("free space on the disk"),
            qPrintable(refused.describe()));
        QVERIFY2(!refused.out.contains("during"), qPrintable(refused.describe())); // it did not run
        const CliResult create = d.ctl(args("create", "--name", "more"));
        QCOMPARE(create.exitCode, 6);
        // What was stored stays intact and readable.
        QCOMPARE(*HistoryReader(historyPath(d)).quickCheck(), QStringLiteral("ok"));
        const CliResult before = d.ctl(args("search", "before", "--json"));
        QCOMPARE(jsonObject(before.out).value(QStringLiteral("executions")).toArray().size(), 1);

        // Space returns: it resumes by itself.
        QVERIFY(QFile::remove(filler));
        CliResult after;
        QVERIFY(waitFor(
            [&] {
                after = execIn(d, sb, args("echo", "after"));
                return after.exitCode == 0;
            },
            10000));
        QCOMPARE(after.out, QByteArray("after\n"));
        const QJsonArray rows = jsonObject(d.ctl(args("history", "--json", "--sandbox", sb)).out)
                                    .value(QStringLiteral("executions"))
                                    .toArray();
        QStringList commands;
        for (const QJsonValue &r : rows)
            commands.append(r.toObject().value(QStringLiteral("argv")).toArray().at(0).toString() + QLatin1Char(' ')
                + r.toObject().value(QStringLiteral("status")).toString());
        // Refused work was never started, so it is not there; `seq` is, written once the store
        // could write again: it ran (its start fit) or was killed at once (its start did not).
        QCOMPARE(commands.size(), 3);
        QCOMPARE(commands.first(), QStringLiteral("echo succeeded"));
        QVERIFY2(commands.at(1) == QLatin1String("seq succeeded") || commands.at(1) == QLatin1String("seq killed"),
            qPrintable(commands.join(QStringLiteral(", "))));
        QCOMPARE(commands.last(), QStringLiteral("echo succeeded"));
        QCOMPARE(*HistoryReader(historyPath(d)).quickCheck(), QStringLiteral("ok"));
    }
};

QTEST_GUILESS_MAIN(TestHistoryDurability)
#include "tst_history_durability.moc"
