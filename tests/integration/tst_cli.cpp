// SPDX-License-Identifier: Apache-2.0
// airlockctl as a user and a script see it: exit codes, exact bytes on stdout/stderr, stdin
// forwarding, environment, terminals, --json, refusals, cp and Ctrl-C, all through the real binary
// against a real daemon.
#include "CliFixture.h"
#include "util/Version.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocalServer>
#include <QLocalSocket>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <fcntl.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

// Forwards one airlockctl connection to the daemon, but holds back everything the daemon says from
// the moment the client sends exec.start until release().
class HoldingProxy final : public QObject {
public:
    bool listen(const QString &path, const QString &upstream)
    {
        m_upstreamPath = upstream;
        connect(&m_server, &QLocalServer::newConnection, this, [this] {
            m_client = m_server.nextPendingConnection();
            m_upstream.connectToServer(m_upstreamPath);
            if (!m_upstream.waitForConnected(5000))
                m_client->abort();
            connect(m_client, &QLocalSocket::readyRead, this, [this] {
                const QByteArray data = m_client->readAll();
                if (data.contains("\"exec.start\""))
                    m_holding = true;
                m_upstream.write(data);
            });
            connect(&m_upstream, &QLocalSocket::readyRead, this, [this] {
                const QByteArray data = m_upstream.readAll();
                if (m_holding)
                    m_held += data;
                else
                    m_client->write(data);
            });
            connect(m_client, &QLocalSocket::disconnected, &m_upstream, &QLocalSocket::disconnectFromServer);
        });
        return m_server.listen(path);
    }
    bool holding() const { return m_holding; }
    void release()
    {
        m_holding = false;
        if (m_client)
            m_client->write(std::exchange(m_held, {}));
    }

private:
    QLocalServer m_server;
    QLocalSocket *m_client = nullptr;
    QLocalSocket m_upstream;
    QString m_upstreamPath;
    QByteArray m_held;
    bool m_holding = false;
};

class TestCli final : public QObject, public CliFixture {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QString error;
        QVERIFY2(startFixture(&error), qPrintable(error));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // ---- exec: exit codes and output streams ----

    void execReturnsTheCommandsExitCode_data()
    {
        QTest::addColumn<QString>("script");
        QTest::addColumn<int>("exitCode");
        QTest::newRow("a command that succeeds exits 0") << "true" << 0;
        QTest::newRow("exit 3 comes back as 3") << "exit 3" << 3;
        QTest::newRow("exit 255 comes back as 255") << "exit 255" << 255;
        QTest::newRow("death by SIGKILL is 128+9") << "kill -9 $$" << 137;
        QTest::newRow("death by SIGTERM is 128+15") << "kill -15 $$" << 143;
    }
    void execReturnsTheCommandsExitCode()
    {
        QFETCH(QString, script);
        QFETCH(int, exitCode);
        const CliResult r = sh(script);
        QVERIFY2(!r.crashed, qPrintable(r.describe()));
        QVERIFY2(r.exitCode == exitCode, qPrintable(r.describe()));
        QCOMPARE(r.out, QByteArray());
        QCOMPARE(r.err, QByteArray());
    }

    void missingProgramExits127WithTheReason()
    {
        const CliResult r = ctl({QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--"),
            QStringLiteral("no-such-program-airlock")});
        QVERIFY2(r.exitCode == 127, qPrintable(r.describe()));
        QCOMPARE(r.out, QByteArray());
        QCOMPARE(QString::fromUtf8(r.err),
            QStringLiteral("airlockctl: cannot execute 'no-such-program-airlock': No such file or directory\n"));
        // A file that exists but may not be executed is 126.
        QCOMPARE(sh(QStringLiteral("printf 'echo no' > /workspace/noexec; chmod 644 /workspace/noexec")).exitCode, 0);
        const CliResult noexec = ctl({QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--"),
            QStringLiteral("/workspace/noexec")});
        QVERIFY2(noexec.exitCode == 126, qPrintable(noexec.describe()));
        QCOMPARE(QString::fromUtf8(noexec.err),
            QStringLiteral("airlockctl: cannot execute '/workspace/noexec': Permission denied\n"));
    }

    void stdoutAndStderrStaySeparate()
    {
        const CliResult r = sh(QStringLiteral("printf 'to-out\\n'; printf 'to-err\\n' >&2; printf 'more-out'"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, QByteArray("to-out\nmore-out"));
        QCOMPARE(r.err, QByteArray("to-err\n"));
    }

    // Output that floods a pipe (`exec … | cat`) gets a pipe of 1 MiB, not the usual 64 KiB: it
    // reaches the reader in a few large writes (a 2 GiB stream through `| cat` took 4.2 s here,
    // 2.7 s with it; issue 23). A short output leaves the pipe as it is: its size counts against
    // the user's pipe allowance. Read off the pipe itself, with every byte.
    void aPipeThatAFloodGoesIntoIsWidened_data()
    {
        QTest::addColumn<int>("bytes");
        QTest::addColumn<int>("pipeSize");
        QTest::newRow("5 bytes") << 5 << 65536;
        QTest::newRow("5 MiB") << (5 << 20) << (1 << 20);
    }
    void aPipeThatAFloodGoesIntoIsWidened()
    {
        QFETCH(int, bytes);
        QFETCH(int, pipeSize);
        int fds[2];
        QVERIFY(::pipe2(fds, O_CLOEXEC) == 0);
        QCOMPARE(::fcntl(fds[0], F_GETPIPE_SZ), 65536);
        QVERIFY(::fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
        QProcess p;
        p.setProcessEnvironment(m_daemon->environment());
        p.setStandardErrorFile(QProcess::nullDevice());
        const int writeEnd = fds[1];
        p.setChildProcessModifier([writeEnd] { ::dup2(writeEnd, STDOUT_FILENO); });
        p.start(binDir() + QStringLiteral("/airlockctl"),
            QStringList{QStringLiteral("--no-autostart"), QStringLiteral("exec"), m_sb, QStringLiteral("-n"),
                QStringLiteral("--"), QStringLiteral("head"), QStringLiteral("-c"), QString::number(bytes),
                QStringLiteral("/dev/zero")});
        QVERIFY(p.waitForStarted());
        ::close(fds[1]);
        qint64 read = 0;
        int widest = 0;
        char buf[65536];
        QElapsedTimer t;
        t.start();
        for (ssize_t n = 0; t.elapsed() < 30000;) {
            widest = std::max(widest, ::fcntl(fds[0], F_GETPIPE_SZ));
            n = ::read(fds[0], buf, sizeof buf);
            if (n > 0)
                read += n;
            else if (n == 0)
                break; // every writer is gone
            else
                p.waitForFinished(5);
        }
        ::close(fds[0]);
        QVERIFY(p.state() == QProcess::NotRunning || p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 0);
        QCOMPARE(read, qint64(bytes));
        QCOMPARE(widest, pipeSize);
    }

    void timeoutKillsTheCommandWith124()
    {
        QElapsedTimer t;
        t.start();
        const CliResult r = sh(QStringLiteral("sleep 30"), {QStringLiteral("--timeout"), QStringLiteral("300ms")});
        QVERIFY2(r.exitCode == 124, qPrintable(r.describe()));
        QCOMPARE(QString::fromUtf8(r.err), QStringLiteral("airlockctl: the command timed out and was killed\n"));
        QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
    }

    // ---- stdin ----

    void stdinArrivesByteForByte_data()
    {
        QTest::addColumn<QByteArray>("input");
        QByteArray all;
        for (int i = 0; i < 256; ++i)
            all.append(char(i));
        QTest::newRow("every byte value 0..255 (NUL, ^D, ^C, 0xff) passes unchanged") << all;
        QByteArray big(1024 * 1024 + 17, Qt::Uninitialized);
        QRandomGenerator rng(4711);
        for (char &c : big)
            c = char(rng.bounded(256));
        QTest::newRow("1 MiB + 17 random bytes pass unchanged (several 256 KiB chunks)") << big;
        QTest::newRow("no input gives no output") << QByteArray();
    }
    // A pipe's or a file's input goes in only with -i: a loop that reads a list and runs one
    // command per line gets every line (the first command used to swallow the rest).
    void aPipesInputGoesInOnlyWhenAskedFor()
    {
        QProcess loop;
        QProcessEnvironment env = m_daemon->environment();
        env.insert(QStringLiteral("CTL"), binDir() + QStringLiteral("/airlockctl"));
        env.insert(QStringLiteral("SB"), m_sb);
        loop.setProcessEnvironment(env);
        loop.start(QStringLiteral("sh"),
            {QStringLiteral("-c"),
                QStringLiteral("printf 'a\\nb\\nc\\n' | while read x; do \"$CTL\" --no-autostart exec \"$SB\" -- sh -c "
                               "'echo $0 $(wc -c)' \"$x\"; done")});
        QVERIFY(loop.waitForFinished(60000));
        QCOMPARE(loop.readAllStandardOutput(), QByteArray("a 0\nb 0\nc 0\n"));
        QCOMPARE(ctl({QStringLiteral("exec"), m_sb, QStringLiteral("--"), QStringLiteral("wc"), QStringLiteral("-c")},
                     "four")
                     .out,
            QByteArray("0\n"));
        QCOMPARE(ctl({QStringLiteral("exec"), QStringLiteral("-i"), m_sb, QStringLiteral("--"), QStringLiteral("wc"),
                         QStringLiteral("-c")},
                     "four")
                     .out,
            QByteArray("4\n"));
        // -n wins over -i.
        QCOMPARE(ctl({QStringLiteral("exec"), QStringLiteral("-in"), m_sb, QStringLiteral("--"), QStringLiteral("wc"),
                         QStringLiteral("-c")},
                     "four")
                     .out,
            QByteArray("0\n"));
    }

    void stdinArrivesByteForByte()
    {
        QFETCH(QByteArray, input);
        const CliResult r = ctl(
            {QStringLiteral("exec"), QStringLiteral("-i"), m_sb, QStringLiteral("--"), QStringLiteral("cat")}, input);
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out.size(), input.size());
        QVERIFY(r.out == input);
        QCOMPARE(r.err, QByteArray());
    }

    void noStdinMeansImmediateEof()
    {
        // Our stdin stays open with data waiting: with --no-stdin none of it may reach cat, which
        // must see EOF at once instead of waiting for us.
        auto p = startCtl(
            {QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--"), QStringLiteral("cat")});
        QVERIFY(p->waitForStarted(5000));
        p->write("must-not-arrive\n");
        QVERIFY2(p->waitForFinished(10000), "cat waited for stdin although --no-stdin was given");
        QCOMPARE(p->exitStatus(), QProcess::NormalExit);
        QCOMPARE(p->exitCode(), 0);
        QCOMPARE(p->readAllStandardOutput(), QByteArray());
        QCOMPARE(p->readAllStandardError(), QByteArray());
    }

    // ---- environment and working directory ----

    void onlyExplicitEnvironmentReachesTheCommand()
    {
        QProcessEnvironment canary;
        canary.insert(QStringLiteral("AIRLOCK_CLI_CANARY"), QStringLiteral("zz"));
        auto p = startCtl(
            {QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--env"), QStringLiteral("A=1"),
                QStringLiteral("--env"), QStringLiteral("B=x y"), QStringLiteral("-e"), QStringLiteral("EMPTY="),
                QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"),
                QStringLiteral("printf '[%s][%s][%s][%s][%s]' \"$A\" \"$B\" \"${EMPTY-unset}\" "
                               "\"${AIRLOCK_CLI_CANARY-unset}\" \"$HOME\"")},
            canary);
        QVERIFY(p->waitForFinished(20000));
        QCOMPARE(p->exitCode(), 0);
        QCOMPARE(p->readAllStandardOutput(), QByteArray("[1][x y][][unset][/home/sandbox]"));
        // The canary was really in airlockctl's environment.
        QVERIFY(p->processEnvironment().value(QStringLiteral("AIRLOCK_CLI_CANARY")) == QLatin1String("zz"));
        // And nothing of it shows up anywhere in the command's environment.
        const CliResult env = sh(QStringLiteral("env"));
        QVERIFY2(env.exitCode == 0 && env.out.contains("PATH="), qPrintable(env.describe()));
        QVERIFY(!env.out.contains("AIRLOCK"));
    }

    void cwdSelectsTheWorkingDirectory_data()
    {
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<QByteArray>("pwd");
        QTest::newRow("the default is /workspace") << QStringList() << QByteArray("/workspace\n");
        QTest::newRow("--cwd /tmp runs in /tmp")
            << QStringList{QStringLiteral("--cwd"), QStringLiteral("/tmp")} << QByteArray("/tmp\n");
    }
    void cwdSelectsTheWorkingDirectory()
    {
        QFETCH(QStringList, options);
        QFETCH(QByteArray, pwd);
        const CliResult r = sh(QStringLiteral("pwd"), options);
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, pwd);
    }

    void missingCwdIsReported()
    {
        const CliResult r = sh(QStringLiteral("pwd"), {QStringLiteral("--cwd"), QStringLiteral("/no/such/dir")});
        QVERIFY2(r.exitCode == 127 || r.exitCode == 126, qPrintable(r.describe()));
        QVERIFY2(r.err.contains("cannot change directory to '/no/such/dir': No such file or directory"),
            qPrintable(r.describe()));
        QCOMPARE(r.out, QByteArray());
    }

    // ---- terminals ----

    void ttyGivesAPseudoTerminal()
    {
        const CliResult r = ctl({QStringLiteral("exec"), m_sb, QStringLiteral("--tty"), QStringLiteral("--no-stdin"),
            QStringLiteral("--"), QStringLiteral("tty")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        static const QRegularExpression pts(QStringLiteral("^/dev/pts/[0-9]+\r\n$"));
        QVERIFY2(pts.match(QString::fromUtf8(r.out)).hasMatch(), qPrintable(r.describe()));
        // Without --tty stdin is not a terminal.
        const CliResult plain = ctl(
            {QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--"), QStringLiteral("tty")});
        QVERIFY2(plain.exitCode == 1, qPrintable(plain.describe()));
        QCOMPARE(plain.out, QByteArray("not a tty\n"));
    }

    void ttyMergesStderrIntoStdout()
    {
        // One terminal carries both streams: the guest reports everything as stdout, with the
        // terminal's newline translation, and TERM is set.
        const CliResult r
            = ctl({QStringLiteral("exec"), m_sb, QStringLiteral("-t"), QStringLiteral("-n"), QStringLiteral("--"),
                QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("echo out; echo err >&2; echo $TERM")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, QByteArray("out\r\nerr\r\nxterm-256color\r\n"));
        QCOMPARE(r.err, QByteArray());
        // The same in --json: everything under "stdout", counted as stdout bytes.
        const CliResult j
            = ctl({QStringLiteral("exec"), m_sb, QStringLiteral("--json"), QStringLiteral("-t"), QStringLiteral("-n"),
                QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("echo err >&2")});
        QString error;
        const QJsonObject o = parseJson(j.out, &error).object();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(o.value(QStringLiteral("stdout")).toString(), QStringLiteral("err\r\n"));
        QCOMPARE(o.value(QStringLiteral("stderr")).toString(), QString());
        QCOMPARE(o.value(QStringLiteral("bytesErr")).toInt(-1), 0);
        QCOMPARE(o.value(QStringLiteral("bytesOut")).toInt(-1), 5);
    }

    // ---- start ----

    // What the dynamic loader maps for airlockctl, transitively (it starts nothing: the loader only
    // lists). The daemon's libraries and the keyring's are not among them: each costs every CLI
    // call its start (about 3 ms of 9 together, issue 23), and the keyring is a module loaded when
    // used. The same listing for airlockd shows them, so the check can see a library that creeps back.
    void theCliLoadsNoneOfTheDaemonsLibraries()
    {
        auto loaded = [](const QString &program) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("LD_TRACE_LOADED_OBJECTS"), QStringLiteral("1"));
            p.setProcessEnvironment(env);
            p.start(binDir() + QLatin1Char('/') + program, QStringList());
            p.waitForFinished(10000);
            QStringList names;
            for (const QByteArray &line : p.readAllStandardOutput().split('\n'))
                if (!line.trimmed().isEmpty())
                    names.append(QString::fromLatin1(line.trimmed().split(' ').first()));
            return names;
        };
        const QStringList daemonOnly{QStringLiteral("libqt6keychain"), QStringLiteral("libQt6DBus"),
            QStringLiteral("libdbus-1"), QStringLiteral("libsqlite3"), QStringLiteral("libseccomp"),
            QStringLiteral("libcrypto.so"), QStringLiteral("libsecret")};
        auto matching = [&](const QStringList &names) {
            QStringList hits;
            for (const QString &name : names)
                for (const QString &lib : daemonOnly)
                    if (name.startsWith(lib))
                        hits.append(name);
            return hits;
        };
        const QStringList cli = loaded(QStringLiteral("airlockctl"));
        QVERIFY2(cli.contains(QStringLiteral("libQt6Core.so.6")), qPrintable(cli.join(QLatin1Char(' '))));
        QCOMPARE(matching(cli), QStringList());
        // Nor is anything loaded later on the way to an answer (the keyring module among them).
        QProcess traced;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("LD_DEBUG"), QStringLiteral("files"));
        traced.setProcessEnvironment(env);
        traced.start(binDir() + QStringLiteral("/airlockctl"), {QStringLiteral("--version")});
        QVERIFY(traced.waitForFinished(10000));
        const QByteArray files = traced.readAllStandardError();
        QVERIFY2(files.contains("needed by") && !files.contains("dynamically loaded by"), files.constData());
        const QStringList daemon = matching(loaded(QStringLiteral("airlockd")));
        QVERIFY2(daemon.contains(QStringLiteral("libsqlite3.so.0"))
                && daemon.contains(QStringLiteral("libseccomp.so.2"))
                && daemon.contains(QStringLiteral("libcrypto.so.3")),
            qPrintable(daemon.join(QLatin1Char(' '))));
    }

    // ---- --json ----

    void jsonOutputOfEveryCommand()
    {
        QString error;
        // create
        const CliResult created
            = ctl({QStringLiteral("create"), QStringLiteral("--json"), QStringLiteral("--name"), QStringLiteral("js")});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        const QJsonObject c = parseJson(created.out, &error).object();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(c.value(QStringLiteral("name")).toString(), QStringLiteral("js"));
        QCOMPARE(c.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        QCOMPARE(c.value(QStringLiteral("network")).toString(), QStringLiteral("none"));
        QCOMPARE(c.value(QStringLiteral("hostNetwork")), QJsonValue(false));
        QVERIFY(c.value(QStringLiteral("failure")).isNull());
        QVERIFY2(QRegularExpression(QStringLiteral("^[0-9a-f]{12}$"))
                     .match(c.value(QStringLiteral("id")).toString())
                     .hasMatch(),
            qPrintable(c.value(QStringLiteral("id")).toString()));
        const QString id = c.value(QStringLiteral("id")).toString();
        QVERIFY(c.value(QStringLiteral("isolation"))
                    .toObject()
                    .value(QStringLiteral("namespaces"))
                    .toArray()
                    .contains(QStringLiteral("net")));
        QVERIFY(c.value(QStringLiteral("limits")).isObject());
        QVERIFY(QFileInfo(c.value(QStringLiteral("workspace")).toString()).isDir());
        QCOMPARE(created.err, QByteArray());

        // ls
        const CliResult listed = ctl({QStringLiteral("ls"), QStringLiteral("--json")});
        QVERIFY2(listed.exitCode == 0, qPrintable(listed.describe()));
        const QJsonDocument l = parseJson(listed.out, &error);
        QVERIFY2(error.isEmpty() && l.isArray(), qPrintable(error + QString::fromUtf8(listed.out)));
        QJsonObject entry;
        for (const QJsonValue &v : l.array())
            if (v.toObject().value(QStringLiteral("name")) == QLatin1String("js"))
                entry = v.toObject();
        QCOMPARE(entry.value(QStringLiteral("id")).toString(), id);
        QCOMPARE(entry.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        QCOMPARE(entry.value(QStringLiteral("executions")).toInt(-1), 0);

        // info (by id prefix, which resolves like the name)
        const CliResult info = ctl({QStringLiteral("info"), QStringLiteral("--json"), id.left(8)});
        QVERIFY2(info.exitCode == 0, qPrintable(info.describe()));
        const QJsonObject i = parseJson(info.out, &error).object();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(i.value(QStringLiteral("name")).toString(), QStringLiteral("js"));
        QCOMPARE(i.value(QStringLiteral("id")).toString(), id);
        QCOMPARE(i.value(QStringLiteral("isolation")).toObject().value(QStringLiteral("sandboxUid")).toInt(), 1000);
        QCOMPARE(i.value(QStringLiteral("isolation")).toObject().value(QStringLiteral("noNewPrivs")), QJsonValue(true));

        // exec
        const CliResult exec = ctl({QStringLiteral("exec"), QStringLiteral("--json"), QStringLiteral("-n"),
            QStringLiteral("js"), QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"),
            QStringLiteral("printf 'out'; printf 'err' >&2; exit 3")});
        QVERIFY2(exec.exitCode == 3, qPrintable(exec.describe()));
        const QJsonObject e = parseJson(exec.out, &error).object();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(e.value(QStringLiteral("status")).toString(), QStringLiteral("failed"));
        QCOMPARE(e.value(QStringLiteral("exitCode")), QJsonValue(3));
        QVERIFY(e.value(QStringLiteral("signal")).isNull());
        QCOMPARE(e.value(QStringLiteral("stdout")).toString(), QStringLiteral("out"));
        QCOMPARE(e.value(QStringLiteral("stderr")).toString(), QStringLiteral("err"));
        QCOMPARE(e.value(QStringLiteral("sandbox")).toString(), id);
        QCOMPARE(exec.err, QByteArray()); // nothing streamed besides the document

        // exec --json of a killed command
        const CliResult killed
            = ctl({QStringLiteral("exec"), QStringLiteral("--json"), QStringLiteral("-n"), QStringLiteral("js"),
                QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("kill -9 $$")});
        QVERIFY2(killed.exitCode == 137, qPrintable(killed.describe()));
        const QJsonObject k = parseJson(killed.out, &error).object();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(k.value(QStringLiteral("status")).toString(), QStringLiteral("killed"));
        QVERIFY(k.value(QStringLiteral("exitCode")).isNull());
        QCOMPARE(k.value(QStringLiteral("signal")), QJsonValue(9));

        // rm
        const CliResult removed = ctl({QStringLiteral("rm"), QStringLiteral("--json"), QStringLiteral("js")});
        QVERIFY2(removed.exitCode == 0, qPrintable(removed.describe()));
        const QJsonDocument r = parseJson(removed.out, &error);
        QVERIFY2(error.isEmpty() && r.isArray(), qPrintable(error));
        QCOMPARE(r.array().size(), 1);
        QCOMPARE(r.array().at(0).toObject().value(QStringLiteral("name")).toString(), QStringLiteral("js"));
        QCOMPARE(r.array().at(0).toObject().value(QStringLiteral("id")).toString(), id);
        QVERIFY(r.array().at(0).toObject().value(QStringLiteral("workspace")).isNull());
        QVERIFY(!QFileInfo::exists(c.value(QStringLiteral("workspace")).toString()));
    }

    void jsonErrorsAreTyped_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("message");
        const QString notFound = QStringLiteral("no sandbox named 'nosuch' (see 'airlockctl ls')");
        QTest::newRow("info of an unknown sandbox is not_found")
            << QStringList{QStringLiteral("info"), QStringLiteral("--json"), QStringLiteral("nosuch")} << 3
            << "not_found" << notFound;
        QTest::newRow("rm of an unknown sandbox is not_found")
            << QStringList{QStringLiteral("rm"), QStringLiteral("--json"), QStringLiteral("nosuch")} << 3 << "not_found"
            << notFound;
        QTest::newRow("--json as a global option works the same")
            << QStringList{QStringLiteral("--json"), QStringLiteral("info"), QStringLiteral("nosuch")} << 3
            << "not_found" << notFound;
        QTest::newRow("a duplicate name is already_exists")
            << QStringList{QStringLiteral("create"), QStringLiteral("--json"), QStringLiteral("--name"),
                   QStringLiteral("cli")}
            << 2 << "already_exists"
            << "a sandbox named 'cli' already exists; pick another --name or remove it with 'airlockctl rm cli'";
        QTest::newRow("an invalid limit is invalid_argument")
            << QStringList{QStringLiteral("create"), QStringLiteral("--json"), QStringLiteral("--memory"),
                   QStringLiteral("lots")}
            << 2 << "invalid_argument"
            << "--memory: invalid size 'lots': expected a positive number (example: 512M); it takes from 8.0 MiB to "
               "4096 TiB";
        QTest::newRow("a path escape in cp is path_escape") << QStringList{QStringLiteral("cp"),
            QStringLiteral("--json"), QStringLiteral("cli:../x"), QStringLiteral("/tmp/airlock-never")}
                                                            << 6 << "path_escape"
                                                            << "'../x' contains '..'; refused";
        QTest::newRow("exec in an unknown sandbox is not_found") << QStringList{QStringLiteral("exec"),
            QStringLiteral("--json"), QStringLiteral("-n"), QStringLiteral("nosuch"), QStringLiteral("--"),
            QStringLiteral("true")} << 3 << "not_found" << notFound;
    }
    void jsonErrorsAreTyped()
    {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, code);
        QFETCH(QString, message);
        const CliResult r = ctl(args);
        QVERIFY2(r.exitCode == exitCode, qPrintable(r.describe()));
        QString error;
        const QJsonObject o = parseJson(r.out, &error).object();
        QVERIFY2(error.isEmpty(), qPrintable(error + QStringLiteral("\n") + r.describe()));
        QCOMPARE(o.keys(), QStringList{QStringLiteral("error")});
        QCOMPARE(o.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString(), code);
        QCOMPARE(o.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(), message);
        QCOMPARE(r.err, QByteArray());
    }

    // ---- run ----

    void runCreatesRunsAndDeletes()
    {
        // A daemon of its own, so that "no sandbox is left" is exact.
        TestDaemon daemon;
        QVERIFY(daemon.start());
        // Where this daemon keeps workspaces (learnt from a sandbox that is removed again).
        const QJsonObject probe
            = QJsonDocument::fromJson(daemon.ctl({QStringLiteral("create"), QStringLiteral("--json")}).out).object();
        const QString workspaces = QFileInfo(probe.value(QStringLiteral("workspace")).toString()).path();
        QVERIFY2(QFileInfo(workspaces).isDir(), qPrintable(workspaces));
        QCOMPARE(daemon.ctl({QStringLiteral("rm"), probe.value(QStringLiteral("id")).toString()}).exitCode, 0);
        QCOMPARE(daemon.ctl({QStringLiteral("ls"), QStringLiteral("--json")}).out.trimmed(), QByteArray("[\n]"));
        QCOMPARE(sandboxWorkspaces(workspaces), QStringList());
        const CliResult r = daemon.ctl({QStringLiteral("run"), QStringLiteral("--"), QStringLiteral("sh"),
            QStringLiteral("-c"), QStringLiteral("echo hi; hostname >&2; exit 4")});
        QVERIFY2(r.exitCode == 4, qPrintable(r.describe()));
        QCOMPARE(r.out, QByteArray("hi\n"));
        QVERIFY2(QRegularExpression(QStringLiteral("^sb-[0-9a-f]{6}\n$")).match(QString::fromUtf8(r.err)).hasMatch(),
            qPrintable(r.describe()));
        const CliResult ls = daemon.ctl({QStringLiteral("ls"), QStringLiteral("--json")});
        QVERIFY2(ls.exitCode == 0, qPrintable(ls.describe()));
        QString error;
        const QJsonDocument doc = parseJson(ls.out, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(doc.isArray());
        QCOMPARE(doc.array().size(), 0);
        // (Its workspace is gone too, and the next one is made ahead: tst_oneshot.)
        // run takes create options: the name is used, and it is gone afterwards as well.
        const CliResult named = daemon.ctl({QStringLiteral("run"), QStringLiteral("--name"), QStringLiteral("once"),
            QStringLiteral("--"), QStringLiteral("hostname")});
        QVERIFY2(named.exitCode == 0, qPrintable(named.describe()));
        QCOMPARE(named.out, QByteArray("once\n"));
        QCOMPARE(daemon.ctl({QStringLiteral("info"), QStringLiteral("once")}).exitCode, 3);
    }

    void aClosedStdoutStopsTheCommand()
    {
        // `airlockctl exec ... | head` must behave like a local pipeline: once the reader is gone the
        // remote command is killed instead of running (and producing) forever.
        QProcess p;
        p.setProcessEnvironment(m_daemon->environment());
        const QString ctlPath = binDir() + QStringLiteral("/airlockctl");
        p.start(QStringLiteral("bash"),
            {QStringLiteral("-c"),
                QStringLiteral(
                    "'%1' --no-autostart exec %2 -n -- yes airlock-pipe | head -c 13; echo \"rc=${PIPESTATUS[0]}\"")
                    .arg(ctlPath, m_sb)});
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.readAllStandardOutput(), QByteArray("airlock-pipe\nrc=137\n"));
        QVERIFY(waitFor([] { return pidsWithCommandLine("yes airlock-pipe").isEmpty(); }, 2000));
    }

    void outputBeyondTheLimitIsCutAndTheCommandKilled()
    {
        const CliResult r = ctl({QStringLiteral("run"), QStringLiteral("--output-limit"), QStringLiteral("4K"),
            QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"),
            QStringLiteral("yes 0123456789abcdef")});
        QVERIFY2(r.exitCode == 137, qPrintable(r.describe()));
        QCOMPARE(r.out.size(), 4096);
        QCOMPARE(r.out, QByteArray("0123456789abcdef\n").repeated(241).left(4096));
        QCOMPARE(QString::fromUtf8(r.err),
            QStringLiteral(
                "\nairlockctl: output exceeded the sandbox's limit of 4096 bytes; the command was killed\n"));
    }

    // ---- Ctrl-C ----

    void signalsToAirlockctlReachTheCommand_data()
    {
        QTest::addColumn<int>("signo");
        QTest::addColumn<int>("exitCode");
        QTest::newRow("Ctrl-C (SIGINT) interrupts the command: 128+2") << int(SIGINT) << 130;
        QTest::newRow("SIGTERM kills the command: 128+9") << int(SIGTERM) << 137;
        QTest::newRow("SIGHUP (terminal gone) kills the command: 128+9") << int(SIGHUP) << 137;
    }
    void signalsToAirlockctlReachTheCommand()
    {
        QFETCH(int, signo);
        QFETCH(int, exitCode);
        // A distinctive duration so that concurrently running suites cannot be mistaken for ours; the
        // script names it through a variable so that only the sleep itself matches.
        const QByteArray needle = "sleep 77.4711";
        auto p = startCtl({QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--"),
            QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("s=77.4711; echo ready; exec sleep $s")});
        QVERIFY(p->waitForStarted(5000));
        const qint64 ctlPid = p->processId();
        // "ready" on airlockctl's stdout: it knows the execution (see lostSignalRightAfterStart for
        // why the test waits for this), and the sleep runs on the host.
        QVERIFY2(waitFor([&] { return p->peek(64) == "ready\n" && !sandboxedPids(needle, ctlPid).isEmpty(); }, 10000),
            "sleep 77 never started");
        QCOMPARE(::kill(pid_t(ctlPid), signo), 0);
        QVERIFY2(p->waitForFinished(3000), "airlockctl did not exit within 3 s of the signal");
        QCOMPARE(p->exitStatus(), QProcess::NormalExit);
        QCOMPARE(p->exitCode(), exitCode);
        QCOMPARE(p->readAllStandardOutput(), QByteArray("ready\n"));
        QVERIFY2(
            waitFor([&] { return sandboxedPids(needle, ctlPid).isEmpty(); }, 2000), "the sandboxed sleep survived");
        QCOMPARE(QJsonDocument::fromJson(ctl({QStringLiteral("info"), QStringLiteral("--json"), m_sb}).out)
                     .object()
                     .value(QStringLiteral("executions"))
                     .toInt(-1),
            0);
    }

    void secondCtrlCKillsACommandThatIgnoresTheFirst()
    {
        auto p = startCtl(
            {QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--"), QStringLiteral("sh"),
                QStringLiteral("-c"), QStringLiteral("trap '' INT; s=78.4711; echo ready; sleep $s; echo survived")});
        QVERIFY(p->waitForStarted(5000));
        const qint64 ctlPid = p->processId();
        QVERIFY(waitFor(
            [&] { return p->peek(64) == "ready\n" && !sandboxedPids("sleep 78.4711", ctlPid).isEmpty(); }, 10000));
        QCOMPARE(::kill(pid_t(ctlPid), SIGINT), 0);
        QVERIFY2(!p->waitForFinished(500),
            qPrintable(
                QStringLiteral("the first Ctrl-C should only interrupt, and this command ignores it; exit %1: %2")
                    .arg(p->exitCode())
                    .arg(QString::fromUtf8(p->readAllStandardError()))));
        QCOMPARE(::kill(pid_t(ctlPid), SIGINT), 0);
        QVERIFY2(p->waitForFinished(3000), "the second Ctrl-C did not kill the command");
        QCOMPARE(p->exitCode(), 137);
        QCOMPARE(p->readAllStandardOutput(), QByteArray("ready\n"));
        QVERIFY(waitFor([&] { return sandboxedPids("sleep 78.4711", ctlPid).isEmpty(); }, 2000));
    }

    void lostSignalRightAfterStart()
    {
        // airlockctl blocks SIGINT and reads it from a signalfd before it sends exec.start, but until the
        // reply names the execution it cannot forward a signal. A proxy between airlockctl and the
        // daemon holds that reply back, so Ctrl-C lands exactly in this window, deterministically.
        HoldingProxy proxy;
        QVERIFY(proxy.listen(m_tmp.filePath(QStringLiteral("proxy.sock")), m_daemon->socketPath()));
        const QByteArray needle = "sleep 77.4712";
        QProcess p;
        p.setProcessEnvironment(m_daemon->environment());
        p.start(binDir() + QStringLiteral("/airlockctl"),
            {QStringLiteral("--socket"), m_tmp.filePath(QStringLiteral("proxy.sock")), QStringLiteral("--no-autostart"),
                QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--"),
                QStringLiteral("sleep"), QStringLiteral("77.4712")});
        QVERIFY(p.waitForStarted(5000));
        const qint64 ctlPid = p.processId();
        // The command runs (the daemon got exec.start) while its reply waits in the proxy.
        QVERIFY2(waitFor([&] { return !sandboxedPids(needle, ctlPid).isEmpty(); }, 10000), "sleep never started");
        QVERIFY(proxy.holding());
        QCOMPARE(::kill(pid_t(ctlPid), SIGINT), 0);
        QTest::qWait(300); // airlockctl drains its signalfd while it waits for the reply
        proxy.release();
        const bool interrupted = waitFor([&] { return p.state() == QProcess::NotRunning; }, 3000);
        if (!interrupted) {
            // Clean up: a second Ctrl-C is forwarded as SIGKILL now that the execution is known.
            ::kill(pid_t(ctlPid), SIGINT);
            QVERIFY(waitFor([&] { return p.state() == QProcess::NotRunning; }, 5000));
            QCOMPARE(p.exitCode(), 137);
        }
        QVERIFY(waitFor([&] { return sandboxedPids(needle, ctlPid).isEmpty(); }, 2000));
        QVERIFY2(interrupted, "the Ctrl-C was lost: airlockctl still ran 3 s after the reply arrived");
        QCOMPARE(p.exitCode(), 130);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
