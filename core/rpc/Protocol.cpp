// SPDX-License-Identifier: Apache-2.0
#include "rpc/Protocol.h"

#include "model/EventKinds.h"

#include <QIODevice>

#include <QJsonDocument>
#include <QtEndian>

#include <limits>

namespace airlock::rpc {

namespace {
QByteArray frame(char kind, QByteArrayView payload)
{
    QByteArray out;
    out.resize(5 + payload.size());
    qToBigEndian(quint32(payload.size() + 1), out.data());
    out[4] = kind;
    memcpy(out.data() + 5, payload.data(), size_t(payload.size()));
    return out;
}

Error protocolError(const QString &what)
{
    return makeError(ErrorCode::ProtocolError, what);
}
// A JSON number as an integer of type T, 0 when T cannot hold it: converting a double outside the
// target's range is undefined behaviour, and these numbers come from the other end of a connection.
template<typename T> T integer(const QJsonValue &value)
{
    const double d = value.toDouble();
    if (!(d > double(std::numeric_limits<T>::min()) - 1 && d < double(std::numeric_limits<T>::max())))
        return 0;
    return T(d);
}
} // namespace

QByteArray encodeJson(const QJsonObject &message)
{
    return frame(kJsonFrame, QJsonDocument(message).toJson(QJsonDocument::Compact));
}

QByteArray encodeOutputHeader(const Event &e)
{
    const QByteArray header
        = QJsonDocument(QJsonObject{{QStringLiteral("sandbox"), e.sandbox}, {QStringLiteral("seq"), double(e.seq)},
                            {QStringLiteral("time"), double(e.timeMs)}, {QStringLiteral("exec"), double(e.exec)},
                            {QStringLiteral("stream"), e.stream}, {QStringLiteral("offset"), double(e.offset)}})
              .toJson(QJsonDocument::Compact);
    QByteArray out(9 + header.size(), Qt::Uninitialized);
    char *p = out.data();
    qToBigEndian(quint32(4 + header.size() + e.data.size() + 1), p);
    p[4] = kOutputFrame;
    qToBigEndian(quint32(header.size()), p + 5);
    memcpy(p + 9, header.constData(), size_t(header.size()));
    return out;
}

QByteArray encodeDataHeader(quint32 transfer, qsizetype bytes)
{
    QByteArray out(9, Qt::Uninitialized);
    char *p = out.data();
    qToBigEndian(quint32(1 + 4 + bytes), p);
    p[4] = kDataFrame;
    qToBigEndian(transfer, p + 5);
    return out;
}

void FrameReader::append(QByteArray bytes)
{
    // Frames handed out before refer to the buffer: it changes only here.
    if (m_pos == m_buf.size()) {
        m_buf = std::move(bytes); // the common case on a busy stream: no copy
        m_pos = 0;
        return;
    }
    if (m_pos > 0) {
        m_buf.remove(0, m_pos);
        m_pos = 0;
    }
    m_buf.append(bytes);
}

qint64 FrameReader::fill(QIODevice &from, qint64 available)
{
    if (available <= 0)
        return 0;
    // Frames handed out before refer to the buffer: it changes only here. What they used is let
    // go (QByteArray moves its start, no copy), and the new bytes are read straight after the rest.
    if (m_pos > 0) {
        m_buf.remove(0, m_pos);
        m_pos = 0;
    }
    const qsizetype kept = m_buf.size();
    m_buf.resize(kept + available);
    const qint64 n = from.read(m_buf.data() + kept, available);
    m_buf.resize(kept + std::max<qint64>(n, 0));
    return n;
}

Result<std::optional<Frame>> FrameReader::next()
{
    const qsizetype avail = m_buf.size() - m_pos;
    if (avail < 4)
        return std::optional<Frame>();
    const quint32 len = qFromBigEndian<quint32>(m_buf.constData() + m_pos);
    if (len == 0)
        return protocolError(QStringLiteral("empty frame"));
    if (len > kMaxFrameBytes)
        return makeError(ErrorCode::FrameTooLarge,
            QStringLiteral("frame of %1 bytes exceeds the %2-byte limit").arg(len).arg(kMaxFrameBytes));
    if (avail < 4 + qsizetype(len))
        return std::optional<Frame>();
    Frame f;
    f.kind = m_buf.at(m_pos + 4);
    f.payload = QByteArrayView(m_buf.constData() + m_pos + 5, len - 1);
    m_pos += 4 + len;
    if (f.kind != kJsonFrame && f.kind != kOutputFrame && f.kind != kDataFrame)
        return protocolError(QStringLiteral("unknown frame kind 0x%1").arg(quint8(f.kind), 2, 16, QLatin1Char('0')));
    return std::optional<Frame>(f);
}

Result<QJsonObject> decodeJson(QByteArrayView payload)
{
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromRawData(payload.data(), payload.size()), &err);
    if (err.error != QJsonParseError::NoError)
        return protocolError(QStringLiteral("invalid JSON at offset %1: %2").arg(err.offset).arg(err.errorString()));
    if (!doc.isObject())
        return protocolError(QStringLiteral("a JSON-RPC message must be an object"));
    const QJsonObject o = doc.object();
    if (o.value(QStringLiteral("jsonrpc")).toString() != QLatin1String("2.0"))
        return protocolError(QStringLiteral("missing \"jsonrpc\": \"2.0\""));
    return o;
}

Result<Event> decodeOutput(QByteArrayView payload)
{
    if (payload.size() < 4)
        return protocolError(QStringLiteral("output frame too short"));
    const quint32 hlen = qFromBigEndian<quint32>(payload.data());
    if (hlen > quint32(payload.size() - 4) || hlen > 4096)
        return protocolError(QStringLiteral("output frame header length %1 is invalid").arg(hlen));
    QJsonParseError err{};
    const QJsonObject h = QJsonDocument::fromJson(QByteArray(payload.data() + 4, hlen), &err).object();
    if (err.error != QJsonParseError::NoError || !h.value(QStringLiteral("sandbox")).isString())
        return protocolError(QStringLiteral("output frame header is not valid JSON"));
    Event e;
    e.kind = event::ExecOutput;
    e.sandbox = h.value(QStringLiteral("sandbox")).toString();
    e.seq = integer<uint64_t>(h.value(QStringLiteral("seq")));
    e.timeMs = integer<qint64>(h.value(QStringLiteral("time")));
    e.exec = integer<uint32_t>(h.value(QStringLiteral("exec")));
    e.stream = h.value(QStringLiteral("stream")).toInt();
    e.offset = integer<qint64>(h.value(QStringLiteral("offset")));
    if (e.stream != 1 && e.stream != 2)
        return protocolError(QStringLiteral("output frame with invalid stream %1").arg(e.stream));
    e.data = payload.sliced(4 + hlen).toByteArray();
    return e;
}

Result<DataChunk> decodeData(QByteArrayView payload)
{
    if (payload.size() < 4)
        return protocolError(QStringLiteral("data frame too short"));
    if (payload.size() - 4 > kMaxDataChunk)
        return protocolError(QStringLiteral("data frame of %1 bytes exceeds the %2-byte chunk")
                                 .arg(payload.size() - 4)
                                 .arg(kMaxDataChunk));
    return DataChunk{qFromBigEndian<quint32>(payload.data()), payload.sliced(4)};
}

QJsonObject makeRequest(qint64 id, const QString &method, const QJsonObject &params)
{
    return {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), double(id)},
        {QStringLiteral("method"), method}, {QStringLiteral("params"), params}};
}

QJsonObject makeResult(const QJsonValue &id, const QJsonValue &result)
{
    return {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), id},
        {QStringLiteral("result"), result}};
}

int jsonRpcCode(ErrorCode code)
{
    switch (code) {
    case ErrorCode::ProtocolError:
        return -32600;
    case ErrorCode::InvalidArgument:
        return -32602;
    default:
        return -32000 - int(code);
    }
}

QJsonObject makeErrorReply(const QJsonValue &id, const Error &error)
{
    return {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), id},
        {QStringLiteral("error"),
            QJsonObject{{QStringLiteral("code"), jsonRpcCode(error.code)}, {QStringLiteral("message"), error.message},
                {QStringLiteral("data"), QJsonObject{{QStringLiteral("type"), errorCodeName(error.code)}}}}}};
}

QJsonObject makeNotification(const QString &method, const QJsonObject &params)
{
    return {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("method"), method},
        {QStringLiteral("params"), params}};
}

Error errorFromReply(const QJsonObject &e)
{
    const QString type = e.value(QStringLiteral("data")).toObject().value(QStringLiteral("type")).toString();
    const ErrorCode code = errorCodeFromName(type).value_or(
        e.value(QStringLiteral("code")).toInt() == -32601 ? ErrorCode::InvalidArgument : ErrorCode::Internal);
    return makeError(code, e.value(QStringLiteral("message")).toString());
}

QJsonObject eventToJson(const Event &e)
{
    return {{QStringLiteral("sandbox"), e.sandbox}, {QStringLiteral("seq"), double(e.seq)},
        {QStringLiteral("time"), double(e.timeMs)}, {QStringLiteral("kind"), e.kind}, {QStringLiteral("run"), e.run},
        {QStringLiteral("payload"), e.payload}};
}

Result<Event> eventFromJson(const QJsonObject &json)
{
    Event e;
    e.sandbox = json.value(QStringLiteral("sandbox")).toString();
    e.seq = integer<uint64_t>(json.value(QStringLiteral("seq")));
    e.timeMs = integer<qint64>(json.value(QStringLiteral("time")));
    e.kind = json.value(QStringLiteral("kind")).toString();
    e.run = json.value(QStringLiteral("run")).toString();
    e.payload = json.value(QStringLiteral("payload")).toObject();
    if (e.sandbox.isEmpty() || e.kind.isEmpty())
        return protocolError(QStringLiteral("event without sandbox or kind"));
    e.exec = integer<uint32_t>(e.payload.value(QStringLiteral("exec")));
    return e;
}

} // namespace airlock::rpc
