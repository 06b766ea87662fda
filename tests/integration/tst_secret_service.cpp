// SPDX-License-Identifier: Apache-2.0
// Secrets in a real Secret Service: a private session bus (dbus-daemon) with GNOME Keyring on it,
// unlocked with a throwaway password, and airlockd told to use it. The value lives in the keyring
// only (the daemon keeps an index of names), survives a daemon restart, is granted like any other
// secret, and the daemon refuses to start when asked for a keyring that is not there. QtKeychain is
// in a module of its own (airlock-keychain.so), loaded only when a keyring is opened: a host's token
// saved by the CLI goes through it too, and a module that is missing or of another build is refused.
#include "TestHelpers.h"

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QJsonArray>
#include <QTemporaryDir>
#include <QTemporaryFile>
#include <QTest>

#include <csignal>

#include <sys/stat.h>

using namespace airlock;
using namespace airlock::test;

namespace {
const QByteArray kValue = "kr-7c0f3e1a9b2d44e8";
const QByteArray kHostToken = "alk_0123456789ab_kQ3xv9Rr2Lm8Tz5Wc1Yb7Nf4Hd6Gj0Ps2Ua9Ve3Xi8K"; // its shape only
} // namespace

class TestSecretService final : public QObject {
    Q_OBJECT
    QTemporaryDir m_session;
    QProcess m_bus, m_keyring;
    QProcessEnvironment m_env;
    std::unique_ptr<TestDaemon> m_daemon;

    bool keyringOnBus() const
    {
        QProcess check;
        check.setProcessEnvironment(m_env);
        check.start(QStringLiteral("dbus-send"),
            args("--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"));
        return check.waitForFinished(5000) && check.readAllStandardOutput().contains("boolean true");
    }
    QStringList filesContaining(const QByteArray &needle) const
    {
        QStringList hits;
        for (const QString &root : {m_daemon->rootDir(), m_session.path()}) {
            QDirIterator it(root, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
            while (it.hasNext()) {
                QFile f(it.next());
                if (f.open(QIODevice::ReadOnly) && f.readAll().contains(needle))
                    hits.append(f.fileName());
            }
        }
        return hits;
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_env = QProcessEnvironment::systemEnvironment();
        for (const char *dir : {"home", "data", "run"})
            QVERIFY(QDir().mkpath(m_session.filePath(QString::fromLatin1(dir))));
        QFile::setPermissions(m_session.filePath(QStringLiteral("run")),
            QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
        m_env.insert(QStringLiteral("HOME"), m_session.filePath(QStringLiteral("home")));
        m_env.insert(
            QStringLiteral("XDG_DATA_HOME"), m_session.filePath(QStringLiteral("data"))); // the keyring's files
        m_env.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_session.filePath(QStringLiteral("run")));
        m_bus.setProcessEnvironment(m_env);
        m_bus.start(QStringLiteral("dbus-daemon"), args("--session", "--nofork", "--print-address=1"));
        QVERIFY2(m_bus.waitForReadyRead(5000), "dbus-daemon did not start");
        const QString address = QString::fromUtf8(m_bus.readLine().trimmed());
        QVERIFY(address.startsWith(QLatin1String("unix:")));
        m_env.insert(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), address);
        m_keyring.setProcessEnvironment(m_env);
        m_keyring.start(
            QStringLiteral("gnome-keyring-daemon"), args("--foreground", "--unlock", "--components=secrets"));
        QVERIFY(m_keyring.waitForStarted());
        m_keyring.write("throwaway-password");
        m_keyring.closeWriteChannel();
        QVERIFY2(waitFor([&] { return keyringOnBus(); }, 10000), "GNOME Keyring did not come up on the session bus");

        QProcessEnvironment daemonEnv;
        daemonEnv.insert(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), address);
        m_daemon = std::make_unique<TestDaemon>(args("--secret-store", "secret-service"), daemonEnv);
        QVERIFY(m_daemon->start());
    }
    void cleanupTestCase()
    {
        m_daemon.reset();
        for (QProcess *p : {&m_keyring, &m_bus}) {
            p->terminate();
            if (!p->waitForFinished(3000))
                p->kill();
        }
    }

    void theKeyringHoldsTheValue()
    {
        const CliResult set = m_daemon->ctl(args("secret", "set", "DEPLOY_KEY"), kValue + '\n');
        QVERIFY2(set.exitCode == 0 && set.out == "set DEPLOY_KEY\n" && set.err.isEmpty(),
            qPrintable(set.describe())); // no "weaker" note
        const QJsonObject listed = jsonObject(m_daemon->ctl(args("secret", "ls", "--json")).out);
        QVERIFY(!listed.value(QStringLiteral("weaker")).toBool());
        QVERIFY2(listed.value(QStringLiteral("backend")).toString().startsWith(QStringLiteral("Secret Service")),
            qPrintable(listed.value(QStringLiteral("backend")).toString()));
        QCOMPARE(
            listed.value(QStringLiteral("secrets")).toArray().first().toObject().value(QStringLiteral("bytes")).toInt(),
            kValue.size());
        QVERIFY(!QFile::exists(m_daemon->configDir() + QStringLiteral("/secrets.json")));
        // Not in any file of the daemon's, nor in the keyring's own (which are encrypted).
        QCOMPARE(filesContaining(kValue), QStringList());
    }

    void itSurvivesARestartAndIsGranted()
    {
        m_daemon->stop();
        QVERIFY(m_daemon->start()); // nothing cached now: the value comes from the keyring
        const QByteArray expected = QCryptographicHash::hash(kValue, QCryptographicHash::Sha256).toHex();
        const CliResult r = m_daemon->ctl(
            args("run", "--policy", "-", "--", "sh", "-c", "printf %s \"$KEY\" | sha256sum | cut -c1-64"),
            R"({"credentials": {"grants": [{"secret": "DEPLOY_KEY", "env": "KEY"}]}})");
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, expected + '\n');
    }

    void removedMeansGoneFromTheKeyring()
    {
        QCOMPARE(m_daemon->ctl(args("secret", "rm", "DEPLOY_KEY")).exitCode, 0);
        m_daemon->stop();
        QVERIFY(m_daemon->start());
        const CliResult r = m_daemon->ctl(args("run", "--policy", "-", "--", "true"),
            R"({"credentials": {"grants": [{"secret": "DEPLOY_KEY", "env": "KEY"}]}})");
        QCOMPARE(r.exitCode, 3);
        QVERIFY2(r.err.contains("no secret named 'DEPLOY_KEY'"), qPrintable(r.describe()));
        QCOMPARE(m_daemon->ctl(args("secret", "ls", "--json")).out.contains("DEPLOY_KEY"), false);
    }

    // The CLI has no keyring code of its own: it loads the module to save a host's token, which then
    // lives in the keyring only, and loads it again to connect (the token is found: what fails is
    // the port, not "needs a token"). With the module gone, the same save is refused: never the file.
    void aHostTokenLivesInTheKeyringThroughTheModule()
    {
        QTemporaryFile tokenFile;
        QVERIFY(tokenFile.open());
        tokenFile.write(kHostToken + '\n');
        tokenFile.close();
        const QStringList add
            = args("hosts", "add", "far-box", "ws://127.0.0.1:9", "--token-file") + QStringList{tokenFile.fileName()};

        QProcessEnvironment env = m_daemon->environment();
        env.remove(QStringLiteral("AIRLOCK_TOKEN"));
        auto ctl = [&](const QStringList &arguments, const QString &module = {}) {
            QProcessEnvironment e = env;
            if (!module.isEmpty())
                e.insert(QStringLiteral("AIRLOCK_KEYCHAIN_MODULE"), module);
            QProcess p;
            p.setProcessEnvironment(e);
            p.start(binDir() + QStringLiteral("/airlockctl"), args("--no-autostart") + arguments);
            p.waitForFinished(30000);
            return std::pair{p.exitCode(), QString::fromUtf8(p.readAllStandardError())};
        };
        const QString missing = m_session.filePath(QStringLiteral("no-such-module.so"));
        const auto [refusedCode, refused] = ctl(add, missing);
        QCOMPARE(refusedCode, 5); // boundary_unavailable
        QCOMPARE(refused,
            QStringLiteral("airlockctl: cannot keep the token of 'far-box': the keyring module is not installed "
                           "(looked for %1); reinstall Airlock, or choose the file store\n")
                .arg(missing));
        QVERIFY(!QFile::exists(m_daemon->rootDir() + QStringLiteral("/config/airlock/host-tokens.json")));

        const auto [addedCode, addedErr] = ctl(add);
        QVERIFY2(addedCode == 0, qPrintable(addedErr));
        QString backend;
        for (const QJsonValue &h :
            jsonObject(m_daemon->ctl(args("hosts", "ls", "--json")).out).value(QStringLiteral("hosts")).toArray())
            if (h.toObject().value(QStringLiteral("name")).toString() == QLatin1String("far-box"))
                backend = h.toObject().value(QStringLiteral("token")).toString();
        QCOMPARE(backend, QStringLiteral("secret-service"));
        QVERIFY(tokenFile.remove());
        QCOMPARE(filesContaining(kHostToken.mid(18)), QStringList());

        const auto [usedCode, used] = ctl(args("--host", "far-box", "ls"));
        QVERIFY2(usedCode == 4
                && used.startsWith(QStringLiteral("airlockctl: cannot reach airlockd at ws://127.0.0.1:9: "))
                && !used.contains(QStringLiteral("token")),
            qPrintable(used));
        QCOMPARE(ctl(args("hosts", "rm", "far-box")).first, 0);
    }

    // A module that is not this build's keyring module is refused by name before the daemon
    // starts, whether the keyring was asked for or only preferred (auto): not loaded when others
    // may write it, said to be of another build when its interface differs, and never a reason
    // to put secrets in a file instead.
    void aKeyringModuleThatIsNotThisBuildsIsRefused_data()
    {
        QTest::addColumn<QString>("module");
        QTest::addColumn<QString>("choice");
        QTest::addColumn<QString>("why");
        const QString otherAbi = binDir() + QStringLiteral("/airlock-keychain-other-abi.so");
        QTest::newRow("another build") << otherAbi << QStringLiteral("secret-service")
                                       << QStringLiteral("is of another build (its interface 2, this program's 1): "
                                                         "restart the program after an upgrade");
        QTest::newRow("another build, auto") << otherAbi << QStringLiteral("auto")
                                             << QStringLiteral("is of another build (its interface 2, this "
                                                               "program's 1): restart the program after an upgrade");
        QTest::newRow("not a keyring module")
            << binDir() + QStringLiteral("/airlock-gvisor-preload.so") << QStringLiteral("secret-service")
            << QStringLiteral("is not a keyring module");
        QTest::newRow("writable by others") << QStringLiteral("writable") << QStringLiteral("auto")
                                            << QStringLiteral("is not owned by root or this user, or others may "
                                                              "write it or its directory");
    }
    void aKeyringModuleThatIsNotThisBuildsIsRefused()
    {
        QFETCH(QString, module);
        QFETCH(QString, choice);
        QFETCH(QString, why);
        QTemporaryDir modules;
        if (module == QLatin1String("writable")) { // this build's own module, but anyone may replace it
            module = modules.filePath(QStringLiteral("airlock-keychain.so"));
            QVERIFY(QFile::copy(binDir() + QStringLiteral("/airlock-keychain.so"), module));
            QVERIFY(::chmod(QFile::encodeName(module).constData(), 0666) == 0);
        }
        QProcessEnvironment env = m_daemon->environment();
        env.insert(QStringLiteral("AIRLOCK_KEYCHAIN_MODULE"), module);
        QTemporaryDir runtime;
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtime.path());
        QProcess d;
        d.setProcessEnvironment(env);
        d.start(binDir() + QStringLiteral("/airlockd"),
            args("--socket", runtime.filePath(QStringLiteral("s.sock")), "--secret-store") + QStringList{choice});
        QVERIFY(d.waitForFinished(10000));
        QCOMPARE(d.exitCode(), 2);
        QCOMPARE(QString::fromUtf8(d.readAllStandardError()),
            QStringLiteral("airlockd: --secret-store %1: the keyring module %2 %3; reinstall Airlock, or choose the "
                           "file store\n")
                .arg(choice, module, why));
        QVERIFY(!QFile::exists(m_daemon->configDir() + QStringLiteral("/secrets.json")));
    }

    // Where a copy of the program sits says nothing about where its module is: a copy of airlockd
    // in a directory under /tmp, beside a module and a ../libexec/airlock/ that anyone there could
    // have made, looks only where this build installs it (else it would load the planted one and
    // say it is of another build).
    void aCopyOfTheProgramDoesNotLoadAModuleBesideIt()
    {
        QTemporaryDir install;
        const QString bin = install.filePath(QStringLiteral("bin"));
        const QString libexec = install.filePath(QStringLiteral("libexec/airlock"));
        QVERIFY(QDir().mkpath(bin) && QDir().mkpath(libexec));
        QVERIFY(QFile::copy(binDir() + QStringLiteral("/airlockd"), bin + QStringLiteral("/airlockd")));
        QVERIFY(::chmod(QFile::encodeName(bin + QStringLiteral("/airlockd")).constData(), 0700) == 0);
        for (const QString &dir : {bin, libexec})
            QVERIFY(QFile::copy(binDir() + QStringLiteral("/airlock-keychain-other-abi.so"),
                dir + QStringLiteral("/airlock-keychain.so")));
        QProcessEnvironment env = m_daemon->environment();
        QTemporaryDir runtime;
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtime.path());
        QProcess d;
        d.setProcessEnvironment(env);
        d.start(bin + QStringLiteral("/airlockd"),
            args("--socket", runtime.filePath(QStringLiteral("s.sock")), "--secret-store", "secret-service"));
        if (!d.waitForFinished(10000)) { // an installed module answered: it did start
            d.terminate();
            d.waitForFinished(5000);
        }
        const QString err = QString::fromUtf8(d.readAllStandardError());
        QVERIFY2(!err.contains(install.path()) && !err.contains(QStringLiteral("another build")), qPrintable(err));
    }

    void askingForAKeyringThatIsNotThereFailsClosed()
    {
        QProcessEnvironment env = m_daemon->environment();
        env.remove(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"));
        QTemporaryDir runtime;
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtime.path());
        QProcess d;
        d.setProcessEnvironment(env);
        d.start(binDir() + QStringLiteral("/airlockd"),
            args("--socket", runtime.filePath(QStringLiteral("s.sock")), "--secret-store", "secret-service"));
        QVERIFY(d.waitForFinished(10000));
        QCOMPARE(d.exitCode(), 2);
        QCOMPARE(d.readAllStandardError(),
            QByteArray(
                "airlockd: --secret-store secret-service: no session bus (DBUS_SESSION_BUS_ADDRESS is not set)\n"));
    }
};

QTEST_GUILESS_MAIN(TestSecretService)
#include "tst_secret_service.moc"
