// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"
#include "util/Result.h"

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>

#include <optional>

class QIODevice;

// Airlock's RPC: JSON-RPC 2.0 messages in length-prefixed frames.
//
//   frame  = u32 big-endian length | u8 kind | payload        (length counts kind + payload)
//   kind   = 'J' JSON-RPC message (UTF-8 JSON object)
//          | 'O' output event: u32 big-endian header length | header JSON | raw output bytes
//          | 'D' file data: u32 big-endian transfer | raw bytes (cp: fs.upload, fs.download)
//
// Output and files are the high-volume traffic, so they travel as bytes rather than base64 inside
// JSON; an output header carries the same fields as every other event (sandbox, seq, time, exec,
// stream), a data frame only the transfer that fs.upload or fs.download named.
// The first request on a connection must be "hello" (version handshake). Frames above
// kMaxFrameBytes, unknown kinds and invalid JSON close the connection after a typed error.
namespace airlock::rpc {

inline constexpr int kProtocolVersion = 1;
inline constexpr quint32 kMaxFrameBytes = 4 * 1024 * 1024;
inline constexpr char kJsonFrame = 'J';
inline constexpr char kOutputFrame = 'O';
inline constexpr char kDataFrame = 'D';
inline constexpr qsizetype kMaxDataChunk = 1024 * 1024; // of a file per data frame, at most
// What senders put in one: a few frames fit the receiver's read-ahead (Connection), so none is
// pieced together from several reads.
inline constexpr qsizetype kDataChunk = 256 * 1024;

QByteArray encodeJson(const QJsonObject &message);
// Everything of an output frame but the bytes themselves, which follow it on the wire: a sender
// writes the two without first copying the data into one buffer.
QByteArray encodeOutputHeader(const Event &event);
// The same for a data frame of `bytes` bytes of transfer `transfer`.
QByteArray encodeDataHeader(quint32 transfer, qsizetype bytes);

struct Frame {
    char kind = 0;
    QByteArrayView payload; // into the reader's buffer: valid until its next append()
};

// Accumulates bytes from a stream and cuts frames without copying them.
class FrameReader {
public:
    void append(QByteArray bytes);
    // The same, read from `from` straight into the buffer (one copy fewer than append(readAll())):
    // how many bytes were read.
    qint64 fill(QIODevice &from, qint64 available);
    // A frame, nothing yet (nullopt), or an error (FrameTooLarge / ProtocolError).
    Result<std::optional<Frame>> next();

private:
    QByteArray m_buf;
    qsizetype m_pos = 0;
};

// Decoding of frame payloads; bounded and validated.
Result<QJsonObject> decodeJson(QByteArrayView payload);
Result<Event> decodeOutput(QByteArrayView payload); // copies the output bytes once, into Event::data
struct DataChunk {
    quint32 transfer = 0;
    QByteArrayView bytes; // into the payload: no copy
};
Result<DataChunk> decodeData(QByteArrayView payload);

// JSON-RPC envelopes.
QJsonObject makeRequest(qint64 id, const QString &method, const QJsonObject &params);
QJsonObject makeResult(const QJsonValue &id, const QJsonValue &result);
QJsonObject makeErrorReply(const QJsonValue &id, const Error &error);
QJsonObject makeNotification(const QString &method, const QJsonObject &params);
// The error inside a reply, mapped back to our codes.
Error errorFromReply(const QJsonObject &errorObject);
int jsonRpcCode(ErrorCode code);

QJsonObject eventToJson(const Event &event);
Result<Event> eventFromJson(const QJsonObject &json);

} // namespace airlock::rpc
