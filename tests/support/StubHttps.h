// SPDX-License-Identifier: Apache-2.0
// A real HTTPS host for the credential broker's tests and benchmark: Node's https module
// (tests/support/stub_https.mjs) on port 443 of a loopback address of its own (127.0.N.M), with a
// certificate for the names asked for from a test authority made for the run (EC P-256, with the
// openssl command). A daemon reaches it with --resolve NAME=address() and --upstream-ca
// authorityPath(). Every request it got is one JSON object (method, url, raw header lines, body
// bytes, and for a model's turn the tool results the agent sent back).
#pragma once

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>

#include "TestHelpers.h"

namespace airlock::test {

class StubHttps {
public:
    ~StubHttps()
    {
        m_node.kill();
        m_node.waitForFinished();
    }

    // Listening, with a certificate for `names`; false (and why in error()) otherwise. With a
    // script (stub_model.mjs), it is also the model of the agent tests.
    bool start(const QStringList &names, const QString &script = {})
    {
        const QString ca = authorityPath(), caKey = m_dir.filePath(QStringLiteral("ca.key")),
                      cert = m_dir.filePath(QStringLiteral("host.pem")),
                      key = m_dir.filePath(QStringLiteral("host.key"));
        // Port 443 (the broker's only port) on a loopback address of its own, which the
        // certificate names too (a client on this machine may reach it by it).
        m_address = QStringLiteral("127.0.%1.%2")
                        .arg(QRandomGenerator::global()->bounded(1, 250))
                        .arg(QRandomGenerator::global()->bounded(2, 250));
        QStringList sans{QStringLiteral("IP:") + m_address};
        for (const QString &n : names)
            sans.append(QStringLiteral("DNS:") + n);
        if (!openssl({QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"), QStringLiteral("ec"),
                QStringLiteral("-pkeyopt"), QStringLiteral("ec_paramgen_curve:P-256"), QStringLiteral("-nodes"),
                QStringLiteral("-keyout"), caKey, QStringLiteral("-out"), ca, QStringLiteral("-days"),
                QStringLiteral("2"), QStringLiteral("-subj"), QStringLiteral("/CN=Broker Test Upstream CA"),
                QStringLiteral("-addext"), QStringLiteral("basicConstraints=critical,CA:TRUE"),
                QStringLiteral("-addext"), QStringLiteral("keyUsage=critical,keyCertSign")})
            || !openssl(
                {QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"), QStringLiteral("ec"),
                    QStringLiteral("-pkeyopt"), QStringLiteral("ec_paramgen_curve:P-256"), QStringLiteral("-nodes"),
                    QStringLiteral("-keyout"), key, QStringLiteral("-out"), cert, QStringLiteral("-days"),
                    QStringLiteral("2"), QStringLiteral("-subj"), QStringLiteral("/CN=") + names.value(0, m_address),
                    QStringLiteral("-addext"), QStringLiteral("subjectAltName=") + sans.join(QLatin1Char(',')),
                    QStringLiteral("-CA"), ca, QStringLiteral("-CAkey"), caKey}))
            return false;
        QStringList arguments{QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/support/stub_https.mjs"),
            QStringLiteral("--host"), m_address, QStringLiteral("--port"), QStringLiteral("443"),
            QStringLiteral("--cert"), cert, QStringLiteral("--key"), key};
        if (!script.isEmpty())
            arguments += {QStringLiteral("--script"), script};
        m_node.start(QStringLiteral("node"), arguments);
        const bool listening = waitFor(
            [&] {
                m_node.waitForReadyRead(200);
                return m_node.peek(4096).contains("LISTENING 443");
            },
            10000);
        m_node.readAllStandardOutput();
        if (!listening)
            m_error
                = QStringLiteral("the stub did not listen: ") + QString::fromLocal8Bit(m_node.readAllStandardError());
        return listening;
    }
    const QString &error() const { return m_error; }
    const QString &address() const { return m_address; }
    QString authorityPath() const { return m_dir.filePath(QStringLiteral("ca.pem")); }

    // The requests it has printed so far.
    QList<QJsonObject> requests()
    {
        m_node.waitForReadyRead(50);
        m_out += m_node.readAllStandardOutput();
        QList<QJsonObject> out;
        for (const QByteArray &line : m_out.split('\n'))
            if (line.startsWith('{'))
                out.append(QJsonDocument::fromJson(line).object());
        return out;
    }
    // The last request, once it has got more than `before` (empty after 5 s).
    QJsonObject next(qsizetype before)
    {
        QList<QJsonObject> all;
        waitFor(
            [&] {
                all = requests();
                return all.size() > before;
            },
            5000);
        return all.size() > before ? all.last() : QJsonObject();
    }
    // A header's value as a request had it ("" when absent).
    static QString header(const QJsonObject &request, const QString &name)
    {
        const QJsonArray raw = request.value(QStringLiteral("headers")).toArray();
        for (qsizetype i = 0; i + 1 < raw.size(); i += 2)
            if (raw.at(i).toString().compare(name, Qt::CaseInsensitive) == 0)
                return raw.at(i + 1).toString();
        return {};
    }

private:
    bool openssl(const QStringList &arguments)
    {
        QProcess p;
        p.start(QStringLiteral("openssl"), arguments);
        if (p.waitForFinished(30000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0)
            return true;
        m_error
            = QStringLiteral("openssl %1: %2").arg(arguments.first(), QString::fromLocal8Bit(p.readAllStandardError()));
        return false;
    }

    QTemporaryDir m_dir;
    QProcess m_node;
    QByteArray m_out;
    QString m_address, m_error;
};

} // namespace airlock::test
