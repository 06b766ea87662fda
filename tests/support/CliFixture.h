// SPDX-License-Identifier: Apache-2.0
// What the airlockctl suites share: a daemon with one long-lived sandbox ("cli"), a scratch
// directory on the host, and ways to run the real airlockctl against them.
#pragma once

#include "TestDaemon.h"
#include "TestHelpers.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

namespace airlock::test {

class CliFixture {
protected:
    std::unique_ptr<TestDaemon> m_daemon;
    QString m_sb; // a long-lived sandbox named "cli"
    QTemporaryDir m_tmp;

    CliResult ctl(const QStringList &args, const QByteArray &stdinData = {}, int timeoutMs = 30000) const
    {
        return m_daemon->ctl(args, stdinData, timeoutMs);
    }
    // exec in the shared sandbox without stdin: sh -c SCRIPT.
    CliResult sh(const QString &script, const QStringList &options = {}) const
    {
        return ctl(QStringList{QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin")} + options
            + QStringList{QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"), script});
    }
    // An airlockctl process of our own (when the test needs to hold stdin open, signal it or change its environment).
    std::unique_ptr<QProcess> startCtl(const QStringList &args, const QProcessEnvironment &extraEnv = {}) const
    {
        auto p = std::make_unique<QProcess>();
        QProcessEnvironment env = m_daemon->environment();
        for (const QString &key : extraEnv.keys())
            env.insert(key, extraEnv.value(key));
        p->setProcessEnvironment(env);
        p->start(binDir() + QStringLiteral("/airlockctl"), QStringList{QStringLiteral("--no-autostart")} + args);
        return p;
    }
    static QJsonDocument parseJson(const QByteArray &bytes, QString *error)
    {
        QJsonParseError e{};
        const QJsonDocument doc = QJsonDocument::fromJson(bytes, &e);
        if (e.error != QJsonParseError::NoError)
            *error = QStringLiteral("invalid JSON (%1 at %2): %3")
                         .arg(e.errorString())
                         .arg(e.offset)
                         .arg(QString::fromUtf8(bytes.left(500)));
        return doc;
    }
    int sandboxCount() const
    {
        return QJsonDocument::fromJson(ctl({QStringLiteral("ls"), QStringLiteral("--json")}).out).array().size();
    }
    QString hostFile(const QString &name) const { return m_tmp.filePath(name); }
    // Host processes of the sandboxed command (airlockctl's own command line also contains it).
    static QList<qint64> sandboxedPids(const QByteArray &needle, qint64 ctlPid)
    {
        QList<qint64> pids = pidsWithCommandLine(needle);
        pids.removeAll(ctlPid);
        return pids;
    }

    // Call from initTestCase (QVERIFY returns from the caller's frame through this bool).
    bool startFixture(QString *error)
    {
        if (!m_tmp.isValid())
            return false;
        m_daemon = std::make_unique<TestDaemon>();
        if (!m_daemon->start())
            return false;
        m_sb = m_daemon->create({QStringLiteral("--name"), QStringLiteral("cli")}, error);
        return m_sb == QLatin1String("cli");
    }
};

} // namespace airlock::test
