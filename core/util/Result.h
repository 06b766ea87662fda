// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

#include <optional>
#include <utility>
#include <variant>

namespace airlock {

// Error codes travel unchanged through the RPC protocol and `airlockctl --json`, so front ends react
// to a code rather than parse a sentence. Append only; the wire names are part of the protocol.
enum class ErrorCode {
    InvalidArgument, // a request, spec, name or limit is malformed
    NotFound, // unknown sandbox or execution
    AlreadyExists, // a sandbox with that name exists
    DaemonUnavailable, // no daemon answers and none could be started
    DaemonRunning, // another daemon already owns the socket
    BoundaryUnavailable, // bwrap, user namespaces, seccomp, Landlock or a required limit is missing
    LimitUnsupported, // the spec requires a limit this host cannot enforce
    ProtocolError, // malformed frame or message
    FrameTooLarge, // a frame above the hard maximum
    VersionMismatch, // the handshake found incompatible protocol versions
    HandshakeRequired, // a request arrived before the version handshake
    PathEscape, // a path resolves outside the sandbox workspace
    GuestViolation, // the guest broke the wire protocol; its sandbox was killed
    SandboxNotRunning, // the sandbox has stopped
    IoError, // an operating system call failed
    HistoryUnavailable, // the history cannot be written: new work is refused until it can (fail closed)
    Denied, // the policy or a person said no
    Internal,
    Busy, // too much is already waiting; try again later
    HostIdsTaken, // the host uids for sandboxes reach an account or a subordinate id range
    DiskFull, // the disk holding workspaces and history has no room for another workspace
    Conflict, // what is to be changed changed meanwhile (a host file since the sandbox was made)
};

QString errorCodeName(ErrorCode code);
std::optional<ErrorCode> errorCodeFromName(const QString &name);

struct Error {
    ErrorCode code = ErrorCode::Internal;
    QString message; // says what was wrong and, where possible, how to fix it
};

template<typename T> class [[nodiscard]] Result {
public:
    Result(T value)
        : m_v(std::move(value))
    {
    }
    Result(Error error)
        : m_v(std::move(error))
    {
    }

    bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }
    T &value() { return std::get<0>(m_v); }
    const T &value() const { return std::get<0>(m_v); }
    T &operator*() { return value(); }
    const T &operator*() const { return value(); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }
    const Error &error() const { return std::get<1>(m_v); }

private:
    std::variant<T, Error> m_v;
};

struct Ok { };
using Status = Result<Ok>;

inline Error makeError(ErrorCode code, QString message)
{
    return Error{code, std::move(message)};
}

} // namespace airlock
