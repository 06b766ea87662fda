// SPDX-License-Identifier: Apache-2.0
// ssh:// end to end against a real OpenSSH server: a throwaway sshd on 127.0.0.1 (its own host key,
// one authorized user key) whose sessions reach a test daemon through `airlockd --stdio`, and the
// real ssh client, which checks that host key against a known_hosts file. The client has no daemon
// of its own. Over ssh: create, exec (exact bytes both ways, exit codes), a policy change an agent
// meets, an agent's request decided by a person, run, rm; the far side's bridges end with their
// clients. Refused by ssh itself: a changed host key, a user key the server does not know.
#include "TestHelpers.h"

#include <QDir>
#include <QElapsedTimer>
#include <QTcpSocket>
#include <QTest>

#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestRemoteSsh final : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::unique_ptr<TestDaemon> m_remote; // "over there": reached only through sshd
    QProcess m_sshd;
    quint16 m_port = 0;
    QString m_url;

    QString path(const QString &name) const { return m_dir.filePath(name); }
    static bool writeFile(const QString &file, const QByteArray &data, bool executable = false)
    {
        QFile f(file);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(data) != data.size())
            return false;
        f.close();
        return !executable
            || f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    }
    static QByteArray readFile(const QString &file)
    {
        QFile f(file);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }
    // A throwaway key pair: FILE and FILE.pub.
    static bool keygen(const QString &file)
    {
        QProcess p;
        p.start(QStringLiteral("ssh-keygen"), args("-q", "-t", "ed25519", "-N", "", "-f", file));
        return p.waitForFinished(20000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
    }
    // known_hosts naming this host key for our sshd ("[127.0.0.1]:PORT ssh-ed25519 AAAA...").
    bool writeKnownHosts(const QString &file, const QString &hostKey) const
    {
        const QList<QByteArray> pub = readFile(hostKey + QStringLiteral(".pub")).split(' ');
        return pub.size() >= 2
            && writeFile(
                file, QStringLiteral("[127.0.0.1]:%1 ").arg(m_port).toUtf8() + pub.at(0) + ' ' + pub.at(1) + '\n');
    }
    // What the client runs as AIRLOCK_SSH: the real ssh, this key and this known_hosts only, host keys checked.
    bool writeSsh(const QString &name, const QString &identity, const QString &knownHosts) const
    {
        const QString config = path(name + QStringLiteral(".config"));
        return writeFile(config,
                   QStringLiteral("IdentityFile %1\nIdentitiesOnly yes\nUserKnownHostsFile %2\n"
                                  "StrictHostKeyChecking yes\nUpdateHostKeys no\n")
                       .arg(identity, knownHosts)
                       .toUtf8())
            && writeFile(
                path(name), QStringLiteral("#!/bin/sh\nexec /usr/bin/ssh -F '%1' \"$@\"\n").arg(config).toUtf8(), true);
    }
    // This side: no daemon (AIRLOCK_SOCKET leads nowhere, --no-autostart), no saved hosts, no agent keys.
    QProcessEnvironment clientEnvironment(const QString &ssh) const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString &key : env.keys())
            if (key.startsWith(QLatin1String("AIRLOCK_")) || key.startsWith(QLatin1String("XDG_"))
                || key.startsWith(QLatin1String("SSH_")))
                env.remove(key);
        for (const char *sub : {"config", "state", "data"})
            env.insert(QStringLiteral("XDG_%1_HOME").arg(QString::fromLatin1(sub).toUpper()),
                path(QStringLiteral("client/") + QLatin1String(sub)));
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), path(QStringLiteral("client/run")));
        env.insert(QStringLiteral("AIRLOCK_SOCKET"), localSocket());
        env.insert(QStringLiteral("AIRLOCK_SSH"), path(ssh));
        return env;
    }
    QString localSocket() const { return path(QStringLiteral("client/run/airlock/airlockd.sock")); }
    std::unique_ptr<QProcess> startClient(
        const QStringList &arguments, const QString &ssh = QStringLiteral("ssh")) const
    {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(clientEnvironment(ssh));
        p->start(binDir() + QStringLiteral("/airlockctl"), args("--no-autostart") + arguments);
        return p;
    }
    CliResult client(
        const QStringList &arguments, const QByteArray &input = {}, const QString &ssh = QStringLiteral("ssh")) const
    {
        auto p = startClient(arguments, ssh);
        CliResult r;
        if (!p->waitForStarted(5000))
            return r;
        p->write(input);
        p->closeWriteChannel();
        r.crashed = !p->waitForFinished(60000) || p->exitStatus() != QProcess::NormalExit;
        r.exitCode = r.crashed ? -1 : p->exitCode();
        r.out = p->readAllStandardOutput();
        r.err = p->readAllStandardError();
        return r;
    }
    // airlockctl --host ssh://root@127.0.0.1:PORT ...
    CliResult remote(
        const QStringList &arguments, const QByteArray &input = {}, const QString &ssh = QStringLiteral("ssh")) const
    {
        return client(args("--host", m_url) + arguments, input, ssh);
    }
    // The far side's bridges to our daemon: `airlockd --stdio` with the environment sshd gave the session.
    QList<qint64> bridges() const
    {
        const QByteArray ours = "AIRLOCK_SOCKET=" + native(m_remote->socketPath());
        QList<qint64> found;
        for (qint64 pid : pidsWithCommandLine("airlockd --stdio"))
            if (readFile(QStringLiteral("/proc/%1/environ").arg(pid)).split('\0').contains(ours))
                found.append(pid);
        return found;
    }
    QStringList remoteSandboxes() const
    {
        QStringList names;
        for (const QJsonValue &v : jsonArray(m_remote->ctl(args("ls", "--json")).out))
            names.append(v.toObject().value(QStringLiteral("name")).toString());
        return names;
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (::geteuid() != 0)
            QSKIP("sshd needs root, and the test logs in as root (CI runs as root)");
        QVERIFY(m_dir.isValid());
        m_remote = std::make_unique<TestDaemon>(args("--approval-timeout", "30s"));
        QVERIFY(m_remote->start());
        for (const char *key : {"host", "other-host", "user", "stranger"})
            QVERIFY2(keygen(path(QLatin1String(key))), key);
        QVERIFY(QFile::copy(path(QStringLiteral("user.pub")), path(QStringLiteral("authorized_keys"))));
        m_port = freeLoopbackPort(); // given back, for sshd
        QVERIFY(m_port != 0);
        m_url = QStringLiteral("ssh://root@127.0.0.1:%1").arg(m_port);

        // The session's environment (SetEnv) leads `airlockd --stdio` over there to the remote daemon.
        const QProcessEnvironment remoteEnv = m_remote->environment();
        QString setEnv = QStringLiteral("PATH=%1:/usr/bin:/bin").arg(binDir());
        for (const char *name :
            {"AIRLOCK_SOCKET", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"})
            setEnv += QStringLiteral(" %1=%2").arg(QLatin1String(name), remoteEnv.value(QLatin1String(name)));
        const QString config = path(QStringLiteral("sshd_config"));
        QVERIFY(writeFile(config,
            QStringLiteral("ListenAddress 127.0.0.1\nPort %1\nHostKey %2\nPidFile %3\nAuthorizedKeysFile %4\n"
                           "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
                           "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nSetEnv %5\n")
                .arg(QString::number(m_port), path(QStringLiteral("host")), path(QStringLiteral("sshd.pid")),
                    path(QStringLiteral("authorized_keys")), setEnv)
                .toUtf8()));
        // sshd's privilege separation directory, as its service would make it (left in place).
        QVERIFY(QDir().mkpath(QStringLiteral("/run/sshd")));
        QVERIFY(QFile::setPermissions(QStringLiteral("/run/sshd"),
            QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner | QFileDevice::ReadGroup
                | QFileDevice::ExeGroup | QFileDevice::ReadOther | QFileDevice::ExeOther));
        m_sshd.setProcessChannelMode(QProcess::MergedChannels);
        m_sshd.setStandardOutputFile(path(QStringLiteral("sshd.log")));
        m_sshd.start(QStringLiteral("/usr/sbin/sshd"), args("-D", "-e", "-f", config));
        QVERIFY(m_sshd.waitForStarted(5000));
        const bool listening = waitFor(
            [&] {
                if (m_sshd.state() != QProcess::Running)
                    return true;
                QTcpSocket s;
                s.connectToHost(QHostAddress::LocalHost, m_port);
                return s.waitForConnected(200);
            },
            10000);
        QVERIFY2(
            listening && m_sshd.state() == QProcess::Running, readFile(path(QStringLiteral("sshd.log"))).constData());

        // The client's ssh programs: the right keys; a known_hosts with another host key; a key not authorized.
        QVERIFY(writeKnownHosts(path(QStringLiteral("known_hosts")), path(QStringLiteral("host"))));
        QVERIFY(writeKnownHosts(path(QStringLiteral("known_hosts.other")), path(QStringLiteral("other-host"))));
        QVERIFY(writeSsh(QStringLiteral("ssh"), path(QStringLiteral("user")), path(QStringLiteral("known_hosts"))));
        QVERIFY(writeSsh(
            QStringLiteral("ssh-other-host"), path(QStringLiteral("user")), path(QStringLiteral("known_hosts.other"))));
        QVERIFY(writeSsh(
            QStringLiteral("ssh-stranger"), path(QStringLiteral("stranger")), path(QStringLiteral("known_hosts"))));
        for (const char *sub : {"client/config", "client/run", "client/state", "client/data"}) {
            QVERIFY(QDir().mkpath(path(QLatin1String(sub))));
            QVERIFY(QFile::setPermissions(
                path(QLatin1String(sub)), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
        }
        // Without --host this side has nothing to talk to: whatever works below went through ssh.
        const CliResult local = client(args("ls"));
        QVERIFY2(local.exitCode == 4
                && local.err.contains(QStringLiteral("cannot reach airlockd at %1").arg(localSocket()).toUtf8()),
            qPrintable(local.describe()));
    }
    void cleanupTestCase()
    {
        if (m_sshd.state() != QProcess::NotRunning) {
            m_sshd.terminate();
            if (!m_sshd.waitForFinished(10000)) {
                m_sshd.kill();
                m_sshd.waitForFinished(5000);
            }
        }
        m_remote.reset();
    }

    void createAndExecOverSsh()
    {
        const CliResult created = remote(args("create", "--name", "far"));
        QVERIFY2(created.exitCode == 0 && created.out == "far\n", qPrintable(created.describe()));
        QVERIFY(remoteSandboxes().contains(QStringLiteral("far"))); // the remote daemon has it
        QVERIFY(readFile(path(QStringLiteral("sshd.log"))).contains("Accepted publickey for root from 127.0.0.1"));
        // Nothing but the sandbox's name is said on success (ssh is let go, not killed, at the end).
        QCOMPARE(created.err, QByteArray());

        // stdin in, several lines out, the command's own exit code.
        const CliResult lines = remote(
            args("exec", "-i", "far", "--", "sh", "-c", "cat; printf 'line 2\\nline 3\\n'; exit 7"), "line 1\n");
        QCOMPARE(lines.exitCode, 7);
        QCOMPARE(lines.out, QByteArray("line 1\nline 2\nline 3\n"));
        // A megabyte of every byte value, both ways, unchanged.
        QByteArray payload(1 << 20, Qt::Uninitialized);
        for (int i = 0; i < payload.size(); ++i)
            payload[i] = char((i * 131 + i / 251) & 0xff);
        const CliResult echoed = remote(args("exec", "-i", "far", "--", "cat"), payload);
        QCOMPARE(echoed.exitCode, 0);
        QVERIFY2(echoed.out == payload, qPrintable(QStringLiteral("%1 bytes back").arg(echoed.out.size())));

        // Live, while the command runs: a line goes there and back through one bridge sshd started.
        QVERIFY2(waitFor([&] { return bridges().isEmpty(); }, 5000), "airlockd --stdio outlived its client");
        auto live = startClient(args("--host", m_url, "exec", "-i", "far", "--", "cat"));
        QVERIFY(live->waitForStarted(5000));
        live->write("ping\n");
        QVERIFY(waitFor([&] { return live->bytesAvailable() >= 5 || live->state() != QProcess::Running; }, 20000));
        QCOMPARE(live->readAllStandardOutput(), QByteArray("ping\n"));
        QCOMPARE(bridges().size(), 1);
        live->closeWriteChannel();
        QVERIFY(live->waitForFinished(20000));
        QCOMPARE(live->exitCode(), 0);
        QVERIFY2(waitFor([&] { return bridges().isEmpty(); }, 5000), "airlockd --stdio outlived its client");
    }

    void aPolicyChangeOverSshBindsTheAgent()
    {
        const CliResult set = remote(
            args("policy", "set", "far", "-"), R"({"commands": {"rules": [{"decision": "deny", "command": "rm"}]}})");
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        QCOMPARE(set.out, QByteArray("policy of far is now version 2\n"));
        QCOMPARE(remote(args("policy", "check", "far", "--", "rm", "-rf", "/workspace")).out,
            QByteArray("deny: 'rm -rf /workspace' matches rule 'rm' (sandbox)\n"));
        // An agent meets it over ssh and on the remote daemon's own socket alike.
        const QByteArray denied("airlockctl: denied by policy: 'rm -rf /workspace' matches rule 'rm' (sandbox)\n");
        const CliResult viaSsh = remote(args("--agent", "bot", "exec", "far", "-n", "--", "rm", "-rf", "/workspace"));
        QVERIFY2(viaSsh.exitCode == 6 && viaSsh.err == denied, qPrintable(viaSsh.describe()));
        const CliResult there
            = m_remote->ctl(args("--agent", "bot", "exec", "far", "-n", "--", "rm", "-rf", "/workspace"));
        QCOMPARE(there.exitCode, 6);
        QCOMPARE(there.err, denied);
    }

    void aPersonOverSshDecidesAnAgentsRequest()
    {
        // The agent is on the remote host (its daemon's socket); the person is here, over ssh.
        QProcess agent;
        agent.setProcessEnvironment(m_remote->environment());
        agent.start(binDir() + QStringLiteral("/airlockctl"),
            args(
                "--no-autostart", "--agent", "bot", "exec", "far", "-n", "--", "printf", "approved over %s\\n", "ssh"));
        QVERIFY(agent.waitForStarted(5000));
        QJsonObject request;
        QVERIFY(waitFor(
            [&] {
                request = jsonObject(remote(args("approvals", "--json")).out)
                              .value(QStringLiteral("approvals"))
                              .toArray()
                              .first()
                              .toObject();
                return !request.isEmpty();
            },
            20000));
        QCOMPARE(request.value(QStringLiteral("argv")).toArray(),
            QJsonArray({QStringLiteral("printf"), QStringLiteral("approved over %s\\n"), QStringLiteral("ssh")}));
        QCOMPARE(request.value(QStringLiteral("requester")).toString(), QStringLiteral("bot"));
        QCOMPARE(request.value(QStringLiteral("sandboxName")).toString(), QStringLiteral("far"));
        const QString id = request.value(QStringLiteral("id")).toString();
        const CliResult approved = remote(args("approve", id));
        QVERIFY2(approved.exitCode == 0, qPrintable(approved.describe()));
        QCOMPARE(approved.out, QStringLiteral("allowed %1\n").arg(id).toUtf8());
        QVERIFY(agent.waitForFinished(20000));
        QCOMPARE(agent.exitCode(), 0);
        QCOMPARE(agent.readAllStandardOutput(), QByteArray("approved over ssh\n"));
    }

    void runAndRmOverSsh()
    {
        const CliResult ran = remote(args("run", "-n", "--", "sh", "-c", "printf 'x\\ny\\n'; exit 5"));
        QCOMPARE(ran.exitCode, 5);
        QCOMPARE(ran.out, QByteArray("x\ny\n"));
        const CliResult removed = remote(args("rm", "far"));
        QVERIFY2(removed.exitCode == 0 && removed.out == "far\n", qPrintable(removed.describe()));
        // As the remote daemon itself says: nothing left, run's sandbox included.
        QCOMPARE(remoteSandboxes(), QStringList());
        QCOMPARE(m_remote->ctl(args("info", "far")).exitCode, 3);
        QVERIFY2(waitFor([&] { return bridges().isEmpty(); }, 5000), "airlockd --stdio outlived its client");
    }

    // ---- what ssh refuses: the client's error is ssh's own, at once (BatchMode) ----

    void aChangedHostKeyIsRefused()
    {
        QElapsedTimer t;
        t.start();
        const CliResult r = remote(args("ls"), {}, QStringLiteral("ssh-other-host"));
        QVERIFY2(r.exitCode == 4, qPrintable(r.describe()));
        QVERIFY2(
            r.err.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") && r.err.contains("Host key verification failed."),
            qPrintable(r.describe()));
        QVERIFY(t.elapsed() < 15000);
    }

    void aKeyTheServerDoesNotKnowIsRefused()
    {
        QElapsedTimer t;
        t.start();
        const CliResult r = remote(args("ls"), {}, QStringLiteral("ssh-stranger"));
        QVERIFY2(r.exitCode == 4, qPrintable(r.describe()));
        QVERIFY2(r.err.contains("root@127.0.0.1: Permission denied (publickey)."), qPrintable(r.describe()));
        QVERIFY(t.elapsed() < 15000);
        QVERIFY(bridges().isEmpty()); // no session was opened
    }
};

QTEST_MAIN(TestRemoteSsh)
#include "tst_remote_ssh.moc"
