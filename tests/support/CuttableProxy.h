// SPDX-License-Identifier: Apache-2.0
// A TCP relay a test can cut: clients connect to it on loopback, it connects each to the real
// address, and cut() drops every relayed connection at once (both sides see it closed), as a
// lost network path would end them. New connections go through again afterwards.
#pragma once

#include <QHostAddress>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>

namespace airlock::test {

class CuttableProxy final : public QObject {
public:
    CuttableProxy(QHostAddress target, quint16 port)
        : m_target(std::move(target))
        , m_port(port)
    {
        m_server.listen(QHostAddress::LocalHost);
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *in = m_server.nextPendingConnection()) {
                auto *out = new QTcpSocket(this);
                in->setParent(this);
                out->connectToHost(m_target, m_port);
                const auto pump = [](QTcpSocket *from, QTcpSocket *to) {
                    if (to->state() == QAbstractSocket::ConnectedState)
                        to->write(from->readAll());
                };
                connect(in, &QTcpSocket::readyRead, this, [in, out, pump] { pump(in, out); });
                connect(out, &QTcpSocket::readyRead, this, [in, out, pump] { pump(out, in); });
                connect(out, &QTcpSocket::connected, this, [in, out, pump] { pump(in, out); });
                connect(in, &QTcpSocket::disconnected, out, &QTcpSocket::disconnectFromHost);
                connect(out, &QTcpSocket::disconnected, in, &QTcpSocket::disconnectFromHost);
                m_pairs.append(std::pair{QPointer<QTcpSocket>(in), QPointer<QTcpSocket>(out)});
            }
        });
    }
    quint16 port() const { return m_server.serverPort(); }
    void cut()
    {
        for (const auto &[in, out] : std::as_const(m_pairs)) {
            if (in)
                in->abort();
            if (out)
                out->abort();
        }
        m_pairs.clear();
    }

private:
    QHostAddress m_target;
    quint16 m_port;
    QTcpServer m_server;
    QList<std::pair<QPointer<QTcpSocket>, QPointer<QTcpSocket>>> m_pairs;
};

} // namespace airlock::test
