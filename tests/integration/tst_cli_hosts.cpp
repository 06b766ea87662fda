// SPDX-License-Identifier: Apache-2.0
// airlockctl and other daemons: hosts by name or URL, airlockd --stdio (the far end of ssh://), and
// ssh:// end to end through a stand-in ssh that runs the real bridge.
#include "CliFixture.h"
#include "TestHelpers.h"
#include "rpc/Protocol.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

class TestCliHosts final : public QObject, public CliFixture {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QString error;
        QVERIFY2(startFixture(&error), qPrintable(error));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // ---- hosts: other daemons by name ----

    void sshRunsTheStdioBridgeOverThere()
    {
        // The system ssh is replaced (AIRLOCK_SSH) by a stand-in that records how it was called and
        // runs the far side here: what the client does with ssh's stdio is the real thing.
        const QString argsFile = m_tmp.filePath(QStringLiteral("ssh-args"));
        const QString fake = m_tmp.filePath(QStringLiteral("fake-ssh"));
        QFile script(fake);
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write(QStringLiteral("#!/bin/sh\nprintf '%s\\n' \"$@\" > '%1'\nexec '%2' --stdio --socket '%3'\n")
                         .arg(argsFile, binDir() + QStringLiteral("/airlockd"), m_daemon->socketPath())
                         .toUtf8());
        script.close();
        QVERIFY(script.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
        QProcessEnvironment env;
        env.insert(QStringLiteral("AIRLOCK_SSH"), fake);
        auto p = startCtl(args("--host", "ssh://alice@build-box:2222", "ls"), env);
        QVERIFY(p->waitForFinished(30000));
        QVERIFY2(p->exitCode() == 0 && p->readAllStandardOutput().contains(m_sb.toUtf8()),
            qPrintable(QString::fromUtf8(p->readAllStandardError())));
        QFile recorded(argsFile);
        QVERIFY(recorded.open(QIODevice::ReadOnly));
        // BatchMode (never a prompt), no tty, no escape character, the port and user as options,
        // "--" before the host, and the far side's command; nothing that weakens host key checks.
        QCOMPARE(QString::fromUtf8(recorded.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts),
            args("-T", "-e", "none", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "-o",
                "ServerAliveCountMax=3", "-p", "2222", "-l", "alice", "--", "build-box", "airlockd", "--stdio"));
        // A host that would be read as an option never reaches ssh.
        QVERIFY(QFile::remove(argsFile));
        auto evil = startCtl(args("--host", "ssh://-oProxyCommand=touch%20pwned", "ls"), env);
        QVERIFY(evil->waitForFinished(30000));
        QCOMPARE(evil->exitCode(), 2);
        QVERIFY(!QFile::exists(argsFile));
        // ssh that cannot connect: its failure is the client's error, not a hang.
        env.insert(QStringLiteral("AIRLOCK_SSH"), QStringLiteral("/bin/false"));
        auto down = startCtl(args("--host", "ssh://build-box", "ls"), env);
        QVERIFY(down->waitForFinished(30000));
        QCOMPARE(down->exitCode(), 4);
        const QByteArray said = down->readAllStandardError();
        QVERIFY2(said.contains("ssh exited with status 1") && !said.contains("the daemon closed"), said.constData());
    }

    void stdioRelaysTheProtocolToThisUsersDaemon()
    {
        // What ssh:// runs on the far side: frames in on stdin, the daemon's answers out on stdout.
        QProcess bridge;
        bridge.setProcessEnvironment(m_daemon->environment());
        bridge.start(binDir() + QStringLiteral("/airlockd"), args("--stdio", "--socket", m_daemon->socketPath()));
        QVERIFY(bridge.waitForStarted(5000));
        bridge.write(rpc::encodeJson(rpc::makeRequest(1, QStringLiteral("hello"),
            {{QStringLiteral("protocol"), rpc::kProtocolVersion},
                {QStringLiteral("client"), QStringLiteral("over-ssh")}})));
        bridge.write(rpc::encodeJson(rpc::makeRequest(2, QStringLiteral("sandbox.list"), {})));
        rpc::FrameReader reader;
        QList<QJsonObject> replies;
        QElapsedTimer t;
        t.start();
        while (replies.size() < 2 && t.elapsed() < 10000 && bridge.waitForReadyRead(1000)) {
            reader.append(bridge.readAllStandardOutput());
            while (true) {
                auto frame = reader.next();
                QVERIFY(frame);
                if (!frame->has_value())
                    break;
                auto message = rpc::decodeJson((*frame)->payload);
                QVERIFY(message);
                replies.append(*message);
            }
        }
        QCOMPARE(replies.size(), 2);
        QCOMPARE(replies.at(0).value(QStringLiteral("result")).toObject().value(QStringLiteral("protocol")).toInt(),
            rpc::kProtocolVersion);
        const QJsonArray sandboxes
            = replies.at(1).value(QStringLiteral("result")).toObject().value(QStringLiteral("sandboxes")).toArray();
        QVERIFY(std::any_of(sandboxes.begin(), sandboxes.end(),
            [&](const QJsonValue &s) { return s.toObject().value(QStringLiteral("name")).toString() == m_sb; }));
        // The client's end ends the relay, cleanly.
        bridge.closeWriteChannel();
        QVERIFY(bridge.waitForFinished(10000));
        QCOMPARE(bridge.exitCode(), 0);
        // Garbage from the far side is the daemon's to refuse: the bridge passes it on, and ends when it closes.
        QProcess noise;
        noise.setProcessEnvironment(m_daemon->environment());
        noise.start(binDir() + QStringLiteral("/airlockd"), args("--stdio", "--socket", m_daemon->socketPath()));
        QVERIFY(noise.waitForStarted(5000));
        noise.write(QByteArray("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
        QVERIFY(noise.waitForFinished(10000));
        QCOMPARE(noise.exitCode(), 0);
        QVERIFY(ctl(args("ls")).exitCode == 0); // the daemon is fine
    }

    void hostsNameTheDaemonsToTalkTo()
    {
        TestDaemon other; // a second daemon, with a sandbox only it has
        QVERIFY(other.start());
        QCOMPARE(other.create(args("--name", "elsewhere")), QStringLiteral("elsewhere"));
        const QString url = QStringLiteral("unix://") + other.socketPath();
        // Malformed addresses are refused with what was wrong, and nothing is saved.
        const std::pair<QString, const char *> refused[] = {
            {QStringLiteral("http://example.com"), "unsupported scheme 'http'"},
            {QStringLiteral("unix://relative/airlockd.sock"), "must be absolute"},
            {QStringLiteral("ssh://me:secret@build-box"), "no password, path or query"},
            {QStringLiteral("wss://build-box:8443/?token=abc"), "credentials never go in a URL"},
            {QStringLiteral("wss://build-box:8443"), "ends in #sha256=FINGERPRINT"},
            {QStringLiteral("wss://build-box:8443#sha256=abc"), "ends in #sha256=FINGERPRINT"},
            {QStringLiteral("wss://build-box#sha256=") + QString(64, QLatin1Char('a')), "needs the port"},
            {QStringLiteral("ws://build-box:8443"), "plain ws:// only to a loopback address"},
        };
        for (const auto &[bad, why] : refused) {
            const CliResult r = ctl(args("hosts", "add", "x", bad));
            QVERIFY2(r.exitCode == 2 && r.err.contains(why), qPrintable(r.describe()));
        }
        QVERIFY(ctl(args("hosts", "add", "local", url)).err.contains("not 'local'"));
        QVERIFY(!QFile::exists(m_daemon->configDir() + QStringLiteral("/hosts.json")));

        QCOMPARE(ctl(args("hosts", "add", "other", url)).exitCode, 0);
        QVERIFY(ctl(args("hosts", "add", "other", url)).err.contains("exists"));
        QCOMPARE(QFile(m_daemon->configDir() + QStringLiteral("/hosts.json")).permissions()
                & (QFileDevice::ReadGroup | QFileDevice::ReadOther),
            0);
        const QJsonArray listed
            = jsonObject(ctl(args("hosts", "ls", "--json")).out).value(QStringLiteral("hosts")).toArray();
        QCOMPARE(listed.size(), 2);
        QCOMPARE(listed.at(1).toObject().value(QStringLiteral("url")).toString(), url);
        QVERIFY(listed.at(0).toObject().value(QStringLiteral("current")).toBool()); // local, until chosen

        // --host by name or URL reaches that daemon; without it, this machine's.
        QVERIFY(ctl(args("--host", "other", "ls")).out.contains("elsewhere"));
        QVERIFY(ctl(args("--host", url, "ls")).out.contains("elsewhere"));
        QVERIFY(!ctl(args("ls")).out.contains("elsewhere"));
        auto viaEnv = startCtl(args("ls"), [&] {
            QProcessEnvironment e;
            e.insert(QStringLiteral("AIRLOCK_HOST"), QStringLiteral("other"));
            return e;
        }());
        QVERIFY(viaEnv->waitForFinished(30000));
        QVERIFY(viaEnv->readAllStandardOutput().contains("elsewhere"));
        // use: the saved choice applies to every command until changed back.
        QCOMPARE(ctl(args("hosts", "use", "other")).exitCode, 0);
        QVERIFY(ctl(args("ls")).out.contains("elsewhere"));
        QCOMPARE(ctl(args("hosts", "use", "local")).exitCode, 0);
        QVERIFY(!ctl(args("ls")).out.contains("elsewhere"));
        QCOMPARE(ctl(args("hosts", "use", "nowhere")).exitCode, 3);
        // wss:// without a token: said so before anything is sent (tst_remote_wss covers the rest).
        const CliResult wss
            = ctl(args("--host", QStringLiteral("wss://build-box:8443#sha256=") + QString(64, QLatin1Char('a')), "ls"));
        QVERIFY2(wss.exitCode == 2 && wss.err.contains("needs a token"), qPrintable(wss.describe()));
        QCOMPARE(ctl(args("--host", "no-such-host", "ls")).exitCode, 3);
        QCOMPARE(ctl(args("hosts", "rm", "other")).exitCode, 0);
        QCOMPARE(ctl(args("hosts", "rm", "other")).exitCode, 3);
    }
};

QTEST_MAIN(TestCliHosts)
#include "tst_cli_hosts.moc"
