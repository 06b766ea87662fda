// SPDX-License-Identifier: Apache-2.0
// Secrets: kept by the daemon, granted to a sandbox as an environment variable or a read-only file,
// and never landing anywhere else. The raw files of the daemon (history database and its WAL,
// logs) are searched byte for byte for the value and its encodings after a run that prints it
// every way it can.
#include "Masking.h"
#include "TestHelpers.h"
#include "history/Sql.h"

#include <QDirIterator>
#include <QTest>

#include <sys/stat.h>

using namespace airlock;
using namespace airlock::test;

namespace {
const QByteArray kValue = "sk-live-4f9c2a7be1d0493a8c55";
// 120 bytes: base64 and hex wrap it over several lines.
const QByteArray kLongValue = "lt-"
                              "5URYX45jqRO25g3uK5kbAAegiuE8LCAnmuO6RvvBfOHZ1FzfnKpcmgfmqSWstSqkNh5brTo21oKpdaZPNtriSPvM"
                              "UC6j7OrJ1Bkkz7T3hSiXLBwoh6MdH";
} // namespace

class TestSecrets final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    int m_wrapExecs = -1; // executions in the sandbox "wrap" so far (-1: not made yet)

    CliResult sh(const QString &sandbox, const QString &script, const QStringList &options = {}) const
    {
        return execIn(*m_daemon, sandbox, args("bash", "-c", script), options);
    }
    CliResult createWith(const QString &name, const QByteArray &policy) const
    {
        return m_daemon->ctl(args("create", "--name", name, "--policy", "-"), policy);
    }
    // Every file the daemon wrote (but the store itself) that holds any of these byte strings.
    QStringList filesContaining(const QList<QByteArray> &needles) const
    {
        QStringList hits;
        QDirIterator it(m_daemon->rootDir(), QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = it.next();
            if (path.endsWith(QLatin1String("/secrets.json")) || path.contains(QLatin1String("/workspaces/")))
                continue;
            QFile f(path);
            if (!f.open(QIODevice::ReadOnly))
                continue;
            const QByteArray data = f.readAll();
            for (const QByteArray &n : needles)
                if (data.contains(n))
                    hits.append(path + QStringLiteral(" (") + QString::fromLatin1(n) + QLatin1Char(')'));
        }
        return hits;
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_daemon = std::make_unique<TestDaemon>(QStringList{QStringLiteral("--secret-store"), QStringLiteral("file")});
        QVERIFY(m_daemon->start());
        const CliResult set = m_daemon->ctl(args("secret", "set", "API_TOKEN"), kValue + '\n');
        QVERIFY2(set.exitCode == 0 && set.out == "set API_TOKEN\n", qPrintable(set.describe()));
        QVERIFY2(set.err.contains("weaker"), qPrintable(set.describe())); // the file store says what it is
        QString error;
        const CliResult created = createWith(QStringLiteral("sec"), R"({"credentials": {"grants": [
            {"secret": "API_TOKEN", "env": "API_TOKEN"}, {"secret": "API_TOKEN", "file": "/run/secrets/api-token"}]}})");
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void theStoreKeepsValuesToItself()
    {
        const CliResult ls = m_daemon->ctl(args("secret", "ls", "--json"));
        const QJsonObject listed = jsonObject(ls.out);
        QCOMPARE(listed.value(QStringLiteral("secrets")).toArray().size(), 1);
        const QJsonObject entry = listed.value(QStringLiteral("secrets")).toArray().first().toObject();
        QCOMPARE(entry.value(QStringLiteral("name")).toString(), QStringLiteral("API_TOKEN"));
        QCOMPARE(
            entry.value(QStringLiteral("bytes")).toInt(), kValue.size()); // the newline from stdin is not part of it
        QVERIFY(!ls.out.contains(kValue) && !ls.out.contains(kValue.toBase64()));
        QVERIFY(listed.value(QStringLiteral("weaker")).toBool());
        struct stat st { };
        QCOMPARE(::stat(native(m_daemon->configDir() + QStringLiteral("/secrets.json")).constData(), &st), 0);
        QCOMPARE(st.st_mode & 0777, mode_t(0600));
    }

    void badValuesAndArgvAreRefused()
    {
        const CliResult argv = m_daemon->ctl(args("secret", "set", "X", "hunter2hunter2"));
        QCOMPARE(argv.exitCode, 2);
        QVERIFY2(argv.err.contains("never an argument"), qPrintable(argv.describe()));
        const CliResult shortValue = m_daemon->ctl(args("secret", "set", "X"), "short\n");
        QCOMPARE(shortValue.exitCode, 2);
        QVERIFY2(shortValue.err.contains("at least 8 bytes"), qPrintable(shortValue.describe()));
        QCOMPARE(m_daemon->ctl(args("secret", "set", "bad name"), "longenough\n").exitCode, 2);
        QCOMPARE(m_daemon->ctl(args("secret", "rm", "nope")).exitCode, 3);
    }

    void grantedAsEnvAndAsAReadOnlyFile()
    {
        // Compared by hash: the output itself is redacted (see below).
        const QByteArray expected = QCryptographicHash::hash(kValue, QCryptographicHash::Sha256).toHex();
        const CliResult r = sh(QStringLiteral("sec"),
            QStringLiteral(
                "printf %s \"$API_TOKEN\" | sha256sum | cut -c1-64; sha256sum < /run/secrets/api-token | cut -c1-64; "
                "stat -c %a /run/secrets/api-token; echo x > /run/secrets/api-token"));
        QCOMPARE(r.out, expected + '\n' + expected + "\n400\n");
        // gVisor checks the file's mode before the read-only mount (tst_gvisor shows the mount is
        // read-only there); bubblewrap's root-owned file is checked against the mount first.
        QVERIFY2(
            r.err.contains(underGvisor() ? "Permission denied" : "Read-only file system"), qPrintable(r.describe()));
    }

    void printedValuesAreRedactedBeforeTheyAreStored()
    {
        const CliResult r = sh(QStringLiteral("sec"),
            QStringLiteral(
                "echo \"plain $API_TOKEN\"; printf %s \"$API_TOKEN\" | base64; printf 'ab%s' \"$API_TOKEN\" | base64 "
                "-w0; echo; "
                "printf %s \"$API_TOKEN\" | od -An -tx1 | tr -d ' \\n'; echo; cat /run/secrets/api-token >&2; "
                // the value split across two writes (two output chunks)
                "printf %s \"${API_TOKEN:0:10}\"; sleep 0.3; printf '%s\\n' \"${API_TOKEN:10}\""));
        QCOMPARE(r.exitCode, 0);
        const QByteArray mask = "[REDACTED" + QByteArray(kValue.size() - 10, '*') + ']';
        QCOMPARE(r.out.split('\n').value(0), "plain " + mask);
        QVERIFY2(r.out.split('\n').value(1).startsWith("[REDACTED"), r.out.constData());
        QVERIFY2(r.out.split('\n').value(2).startsWith("YWJ") && r.out.split('\n').value(2).contains("[REDACTED"),
            r.out.constData());
        QCOMPARE(r.out.split('\n').value(3), "[REDACTED" + QByteArray(kValue.size() * 2 - 10, '*') + ']'); // hex
        QCOMPARE(r.out.split('\n').value(4), mask);
        QCOMPARE(r.err, mask);
        // What the history replays is the masked bytes.
        const CliResult stored = m_daemon->ctl(args("show", "sec:2", "--raw"));
        QVERIFY2(stored.out.startsWith(QByteArray("plain " + mask + "\n")) && !stored.out.contains(kValue),
            qPrintable(stored.describe()));
    }

    // What a fleet view shows of a sandbox (its running commands, its last line) is masked too:
    // a secret in an argv, and one printed in two executions' pieces that the line joins.
    void whatTheFleetShowsIsMasked()
    {
        QProcess sleeper;
        sleeper.setProcessEnvironment(m_daemon->environment());
        sleeper.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", "sec", "--", "sh", "-c", "sleep 30")
                + QStringList{QString::fromLatin1(kValue)});
        QVERIFY(sleeper.waitForStarted());
        QCOMPARE(sh(QStringLiteral("sec"), QStringLiteral("printf %s \"${API_TOKEN:0:9}\"")).exitCode, 0);
        QCOMPARE(sh(QStringLiteral("sec"), QStringLiteral("printf '%s\\n' \"${API_TOKEN:9}\"")).exitCode, 0);
        QByteArray stats;
        QVERIFY(waitFor(
            [&] {
                stats = m_daemon->ctl(args("stats", "--json", "sec")).out;
                return stats.contains("sleep 30");
            },
            10000));
        auto client = m_daemon->connect();
        QVERIFY(client
            && client->call(QStringLiteral("sandbox.kill"), {{QStringLiteral("sandbox"), QStringLiteral("sec")}}));
        sleeper.waitForFinished();
        QVERIFY2(!stats.contains(kValue), stats.constData());
        const QJsonObject sb = jsonArray(stats).first().toObject();
        QVERIFY2(sb.value(QStringLiteral("commands"))
                     .toArray()
                     .first()
                     .toString()
                     .endsWith(QLatin1String("'sleep 30' '[REDACTED") + QString(kValue.size() - 10, QLatin1Char('*'))
                         + QLatin1String("]'")),
            stats.constData());
        // The two pieces are two lines, each as its execution printed it (and as the history keeps it).
        QCOMPARE(sb.value(QStringLiteral("lastOutput")).toString(), QString::fromLatin1(kValue.mid(9)));
    }

    void aPersonAndAnAgentSeeRequestsMasked()
    {
        // An agent's command that carries the value waits for a person; the listing masks it.
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(m_daemon->environment());
        p->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", "sec", "-n", "--", "deploy-tool", "--token",
                QString::fromLatin1(kValue)));
        const QJsonObject request = waitForApproval(*m_daemon);
        QVERIFY(!request.isEmpty());
        QVERIFY2(
            request.value(QStringLiteral("argv")).toArray().at(2).toString().startsWith(QStringLiteral("[REDACTED")),
            QJsonDocument(request).toJson().constData());
        QVERIFY(!m_daemon->ctl(args("--agent", "bot", "approvals", "--json")).out.contains(kValue));
        QCOMPARE(m_daemon->ctl(args("deny", request.value(QStringLiteral("id")).toString())).exitCode, 0);
        QVERIFY(p->waitForFinished(10000));
        QCOMPARE(p->exitCode(), 6);
    }

    void theValueLandsNowhere()
    {
        // Also in an argv and an approval's environment: events are masked as a whole.
        QCOMPARE(execIn(*m_daemon, QStringLiteral("sec"), args("echo", QString::fromLatin1(kValue))).exitCode, 0);
        m_daemon->stop(); // WAL checkpointed, logs flushed
        QList<QByteArray> needles = {kValue, kValue.toHex(), kValue.toBase64(QByteArray::OmitTrailingEquals).left(32)};
        QCOMPARE(filesContaining(needles), QStringList());
        // And the search found something to look at: the database and a log.
        QVERIFY(QFile::exists(m_daemon->dataDir() + QStringLiteral("/history.db")));
        QVERIFY(m_daemon->start());
    }

    void theRecordSaysWhatWasInjectedAndRedacted()
    {
        auto db = sql::open(m_daemon->dataDir() + QStringLiteral("/history.db"), true);
        QVERIFY(db);
        sql::Stmt st(db->get(),
            "SELECT kind, payload FROM events WHERE kind IN ('credential.injected', 'credential.redacted', "
            "'exec.started', 'exec.exited') "
            "ORDER BY sandbox_id, seq");
        QMap<QString, QList<QJsonObject>> byKind;
        while (st.step())
            byKind[st.columnText(0)].append(QJsonDocument::fromJson(st.columnText(1).toUtf8()).object());
        QVERIFY(!byKind.value(QStringLiteral("credential.injected")).isEmpty());
        QCOMPARE(byKind.value(QStringLiteral("credential.injected")).first().value(QStringLiteral("grants")).toArray(),
            QJsonArray({QJsonObject{{QStringLiteral("secret"), QStringLiteral("API_TOKEN")},
                {QStringLiteral("env"), QStringLiteral("API_TOKEN")}}}));
        QVERIFY(!byKind.value(QStringLiteral("credential.redacted")).isEmpty());
        QCOMPARE(byKind.value(QStringLiteral("credential.redacted")).first().value(QStringLiteral("secrets")).toArray(),
            QJsonArray({QStringLiteral("API_TOKEN")}));
        // The printing execution's exit counts its masks: plain, 2 base64, hex, file, split.
        QCOMPARE(byKind.value(QStringLiteral("exec.exited")).value(1).value(QStringLiteral("redactions")).toInt(), 6);
        // The argv that carried the value was masked, and says so.
        const QJsonObject echoed = byKind.value(QStringLiteral("exec.started")).last();
        QCOMPARE(echoed.value(QStringLiteral("redacted")).toArray(), QJsonArray({QStringLiteral("API_TOKEN")}));
        QVERIFY(
            echoed.value(QStringLiteral("argv")).toArray().at(1).toString().startsWith(QStringLiteral("[REDACTED")));
    }

    void aMissingSecretFailsClosed()
    {
        const int before = jsonArray(m_daemon->ctl(args("ls", "--json")).out).size();
        const CliResult r = createWith(
            QStringLiteral("nosecret"), R"({"credentials": {"grants": [{"secret": "NOPE", "env": "NOPE"}]}})");
        QCOMPARE(r.exitCode, 3);
        QCOMPARE(r.err,
            QByteArray("airlockctl: the policy grants secret 'NOPE' as $NOPE: no secret named 'NOPE' (set it with "
                       "'airlockctl secret set NOPE')\n"));
        QCOMPARE(jsonArray(m_daemon->ctl(args("ls", "--json")).out).size(), before);

        // Granted as env on a running sandbox, then removed from the store: nothing runs without it.
        QCOMPARE(m_daemon->ctl(args("secret", "set", "TEMP"), "temporary-value\n").exitCode, 0);
        QCOMPARE(m_daemon->ctl(args("create", "--name", "later")).exitCode, 0);
        CliResult set = m_daemon->ctl(
            args("policy", "set", "later", "-"), R"({"credentials": {"grants": [{"secret": "TEMP", "env": "TEMP"}]}})");
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        QCOMPARE(sh(QStringLiteral("later"), QStringLiteral("test -n \"$TEMP\" && echo present")).out,
            QByteArray("present\n"));
        QCOMPARE(m_daemon->ctl(args("secret", "rm", "TEMP")).exitCode, 0);
        const CliResult refused = sh(QStringLiteral("later"), QStringLiteral("echo ran"));
        QCOMPARE(refused.exitCode, 3);
        QVERIFY2(!refused.out.contains("ran"), qPrintable(refused.describe()));
        // Files are placed at creation: a live change of them is refused.
        QCOMPARE(createWith(QStringLiteral("files"),
                     R"({"credentials": {"grants": [{"secret": "API_TOKEN", "file": "/run/a"}]}})")
                     .exitCode,
            0);
        set = m_daemon->ctl(args("policy", "set", "files", "-"),
            R"({"credentials": {"grants": [{"secret": "API_TOKEN", "file": "/run/other"}]}})");
        QCOMPARE(set.exitCode, 2);
        QVERIFY2(set.err.contains("secrets granted as files are placed when a sandbox is created"),
            qPrintable(set.describe()));
        m_daemon->ctl(args("rm", "later"));
        m_daemon->ctl(args("rm", "files"));
    }

    void anAgentCannotTouchSecrets()
    {
        for (const QStringList &command : {args("secret", "ls"), args("secret", "rm", "API_TOKEN")}) {
            const CliResult r = m_daemon->ctl(args("--agent", "bot") + command);
            QCOMPARE(r.exitCode, 6);
            QCOMPARE(r.err, QByteArray("airlockctl: an agent connection cannot manage secrets\n"));
        }
        const CliResult set
            = m_daemon->ctl(args("--agent", "bot", "secret", "set", "API_TOKEN"), "overwritten-by-agent\n");
        QCOMPARE(set.exitCode, 6);
    }

    // A process in the sandbox pipes a long secret through the encoders at hand, after 0, 1 or 2
    // bytes of its own (the three places a value can start in a base64 group), in one write or
    // two or one a byte, indented or coloured. What the client gets and what the history keeps is
    // exactly the tool's output with every character that depends on the value alone masked: line
    // breaks, indents and colours where they were, the one character at each end of base64 that
    // mixes in the neighbours' bits, nothing more.
    void wrappedEncodingsAreMasked_data()
    {
        QTest::addColumn<QString>("pipeline"); // what the value (after the prefix) is piped through
        QTest::addColumn<int>("shift"); // bytes before the value
        QTest::addColumn<QString>("form"); // what the output shows: base64, hex or the value itself
        const QString base64 = QStringLiteral("base64"), hex = QStringLiteral("hex"), raw = QStringLiteral("raw");
        for (int shift = 0; shift < 3; ++shift) {
            QTest::addRow("base64 wraps at 76 columns, value at offset %d", shift)
                << QStringLiteral("base64") << shift << base64;
            QTest::addRow("base64 -w 0, value at offset %d", shift) << QStringLiteral("base64 -w 0") << shift << base64;
            QTest::addRow("openssl base64 wraps at 64 columns, value at offset %d", shift)
                << QStringLiteral("openssl base64") << shift << base64;
            QTest::addRow("xxd -p wraps at 60 columns, value at offset %d", shift)
                << QStringLiteral("xxd -p") << shift << hex;
            QTest::addRow("base64 | sed 's/^/    /', value at offset %d", shift)
                << QStringLiteral("base64 | sed 's/^/    /'") << shift << base64;
        }
        QTest::newRow("od -An -tx1 spaces every byte") << QStringLiteral("od -An -tx1") << 0 << hex;
        QTest::newRow("base64 in two writes, cut after a line break")
            << QStringLiteral("base64 > /tmp/e; head -c 77 /tmp/e; sleep 0.3; tail -c +78 /tmp/e") << 1 << base64;
        QTest::newRow("base64 in two writes, cut in a line")
            << QStringLiteral("base64 > /tmp/e; head -c 100 /tmp/e; sleep 0.3; tail -c +101 /tmp/e") << 2 << base64;
        QTest::newRow("xxd -p in two writes, cut before a line break")
            << QStringLiteral("xxd -p > /tmp/e; head -c 60 /tmp/e; sleep 0.3; tail -c +61 /tmp/e") << 0 << hex;
        QTest::newRow("openssl base64 in a YAML block under 8 spaces")
            << QStringLiteral("openssl base64 | sed 's/^/        /'") << 1 << base64;
        QTest::newRow("xxd -p indented by a tab, CRLF line ends")
            << QStringLiteral("xxd -p | sed 's/^/\\t/; s/$/\\r/'") << 2 << hex;
        QTest::newRow("od -An -tx1 indented to 16 columns (its own space and 15)")
            << QStringLiteral("od -An -tx1 | sed 's/^/               /'") << 0 << hex;
        QTest::newRow("grep --color=always on every base64 line")
            << QStringLiteral("base64 | grep --color=always .") << 2 << base64;
        QTest::newRow("grep --color=always on a part of the value")
            << QStringLiteral("grep --color=always 5URYX") << 1 << raw;
        QTest::newRow("base64 -w 0, a byte per write")
            << QStringLiteral("base64 -w 0 | while IFS= read -r -n 1 c; do printf %s \"$c\"; done") << 0 << base64;
    }
    void wrappedEncodingsAreMasked()
    {
        QFETCH(QString, pipeline);
        QFETCH(int, shift);
        QFETCH(QString, form);
        if (m_wrapExecs < 0) {
            QCOMPARE(m_daemon->ctl(args("secret", "set", "LONG_TOKEN"), kLongValue + '\n').exitCode, 0);
            const CliResult created = createWith(QStringLiteral("wrap"),
                R"({"credentials": {"grants": [{"secret": "LONG_TOKEN", "env": "LONG_TOKEN"}]}})");
            QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
            m_wrapExecs = 0;
        }
        const QString script = QStringLiteral("printf '%s%s' '%1' \"$LONG_TOKEN\" | %2")
                                   .arg(QLatin1String(QByteArray("ab").left(shift)), pipeline);
        // What the tool prints, run here on the value itself.
        QProcess host;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("LONG_TOKEN"), QString::fromLatin1(kLongValue));
        host.setProcessEnvironment(env);
        host.start(QStringLiteral("bash"), args("-c", script));
        QVERIFY(host.waitForFinished(10000));
        const QByteArray printed = host.readAllStandardOutput();
        QVERIFY2(printed.count('\n') > 1 || pipeline.contains(QLatin1String("-w 0")) || form == QLatin1String("raw"),
            printed.constData()); // it wraps
        QVERIFY(printed.contains('\x1b') == pipeline.contains(QLatin1String("--color"))); // coloured, when asked to be
        const auto [from, length] = form == QLatin1String("base64") ? base64Span(shift, kLongValue.size())
            : form == QLatin1String("hex") ? std::pair<qsizetype, qsizetype>{2 * shift, 2 * kLongValue.size()}
                                           : std::pair<qsizetype, qsizetype>{shift, kLongValue.size()};
        const QByteArray expected = maskedAt(printed, from, length);

        const CliResult r = sh(QStringLiteral("wrap"), script);
        const int exec = ++m_wrapExecs;
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, expected);
        const CliResult stored = m_daemon->ctl(args("show", QStringLiteral("wrap:%1").arg(exec), "--raw"));
        QCOMPARE(stored.out, expected);
    }
};

QTEST_GUILESS_MAIN(TestSecrets)
#include "tst_secrets.moc"
