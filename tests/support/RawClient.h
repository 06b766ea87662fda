// SPDX-License-Identifier: Apache-2.0
#pragma once
// Speaking airlockd's frame format by hand, for tests that send what no client of ours would
// (tst_robustness, tst_untrusted_guest): frames, a raw client, and whether a daemon still serves.
#include "TestDaemon.h"
#include "rpc/Protocol.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QLocalSocket>
#include <QTest>
#include <QtEndian>

#include <optional>

namespace airlock::test {

inline QByteArray header(quint32 length, char kind)
{
    QByteArray h(4, '\0');
    qToBigEndian(length, h.data());
    h.append(kind);
    return h;
}

inline QByteArray frame(char kind, const QByteArray &payload)
{
    return header(quint32(payload.size() + 1), kind) + payload;
}

inline QByteArray jsonFrame(const QJsonObject &o)
{
    return frame(rpc::kJsonFrame, QJsonDocument(o).toJson(QJsonDocument::Compact));
}

inline QByteArray request(qint64 id, const QString &method, const QJsonObject &params = {})
{
    return jsonFrame(rpc::makeRequest(id, method, params));
}

inline QByteArray hello(int protocol = rpc::kProtocolVersion)
{
    return request(1, QStringLiteral("hello"),
        {{QStringLiteral("protocol"), protocol}, {QStringLiteral("client"), QStringLiteral("raw")}});
}

// A client that speaks the frame format by hand.
class RawClient final {
public:
    struct Frame {
        char kind = 0;
        QByteArray payload;
        QJsonObject json() const { return QJsonDocument::fromJson(payload).object(); }
    };

    explicit RawClient(const QString &socketPath)
    {
        QObject::connect(&m_socket, &QLocalSocket::readyRead, [this] { pump(); });
        m_socket.connectToServer(socketPath);
    }
    bool waitConnected(int ms = 5000) { return m_socket.waitForConnected(ms); }
    void send(const QByteArray &bytes)
    {
        m_socket.write(bytes);
        m_socket.flush();
    }
    bool isClosed() const { return m_socket.state() == QLocalSocket::UnconnectedState; }
    // Waits until the daemon has closed the connection.
    bool waitClosed(int ms = 5000)
    {
        return waitFor(
            [this] {
                pump();
                return isClosed();
            },
            ms);
    }
    void disconnect() { m_socket.abort(); }

    // The next frame, or nullopt on timeout.
    std::optional<Frame> next(int ms = 10000)
    {
        if (!waitFor(
                [this] {
                    pump();
                    return !m_frames.isEmpty() || m_bad;
                },
                ms)
            || m_frames.isEmpty())
            return std::nullopt;
        return m_frames.takeFirst();
    }
    // The reply to request `id` (event notifications in between are skipped).
    std::optional<QJsonObject> reply(qint64 id, int ms = 10000)
    {
        QJsonObject found;
        const bool ok = waitFor(
            [&] {
                pump();
                for (qsizetype i = 0; i < m_frames.size(); ++i) {
                    const QJsonObject o = m_frames.at(i).json();
                    if (m_frames.at(i).kind == rpc::kJsonFrame
                        && o.value(QStringLiteral("id")).toDouble(-1) == double(id)) {
                        found = o;
                        m_frames.removeAt(i);
                        return true;
                    }
                }
                return false;
            },
            ms);
        return ok ? std::optional<QJsonObject>(found) : std::nullopt;
    }
    bool hasReply(qint64 id)
    {
        pump();
        for (const Frame &f : std::as_const(m_frames))
            if (f.json().value(QStringLiteral("id")).toDouble(-1) == double(id))
                return true;
        return false;
    }
    qsizetype pendingFrames() const { return m_frames.size(); }

private:
    void pump()
    {
        m_buf.append(m_socket.readAll());
        while (m_buf.size() >= 5) {
            const quint32 len = qFromBigEndian<quint32>(m_buf.constData());
            if (len == 0 || len > rpc::kMaxFrameBytes) {
                m_bad = true;
                return;
            }
            if (m_buf.size() < 4 + qsizetype(len))
                return;
            m_frames.append({m_buf.at(4), m_buf.mid(5, len - 1)});
            m_buf.remove(0, 4 + len);
        }
    }

    QLocalSocket m_socket;
    QByteArray m_buf;
    QList<Frame> m_frames;
    bool m_bad = false;
};

inline QString describe(const QJsonObject &o)
{
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

// A brand-new connection completes the handshake and lists sandboxes.
inline bool serves(TestDaemon &daemon, QString *why)
{
    if (daemon.process().state() != QProcess::Running) {
        *why = QStringLiteral("the daemon is not running (exit %1)").arg(daemon.process().exitCode());
        return false;
    }
    RawClient c(daemon.socketPath());
    if (!c.waitConnected()) {
        *why = QStringLiteral("cannot connect");
        return false;
    }
    c.send(hello() + request(2, QStringLiteral("sandbox.list")));
    const auto h = c.reply(1), l = c.reply(2);
    if (!h
        || h->value(QStringLiteral("result")).toObject().value(QStringLiteral("protocol")).toInt()
            != rpc::kProtocolVersion) {
        *why = QStringLiteral("no hello result: ") + (h ? describe(*h) : QStringLiteral("timeout"));
        return false;
    }
    if (!l || !l->value(QStringLiteral("result")).toObject().value(QStringLiteral("sandboxes")).isArray()) {
        *why = QStringLiteral("no sandbox.list result: ") + (l ? describe(*l) : QStringLiteral("timeout"));
        return false;
    }
    return true;
}

} // namespace airlock::test
