// SPDX-License-Identifier: Apache-2.0
#include "util/Result.h"

#include <array>
#include <utility>

namespace airlock {

namespace {
constexpr std::array kNames = {
    std::pair{ErrorCode::InvalidArgument, "invalid_argument"},
    std::pair{ErrorCode::NotFound, "not_found"},
    std::pair{ErrorCode::AlreadyExists, "already_exists"},
    std::pair{ErrorCode::DaemonUnavailable, "daemon_unavailable"},
    std::pair{ErrorCode::DaemonRunning, "daemon_running"},
    std::pair{ErrorCode::BoundaryUnavailable, "boundary_unavailable"},
    std::pair{ErrorCode::LimitUnsupported, "limit_unsupported"},
    std::pair{ErrorCode::ProtocolError, "protocol_error"},
    std::pair{ErrorCode::FrameTooLarge, "frame_too_large"},
    std::pair{ErrorCode::VersionMismatch, "version_mismatch"},
    std::pair{ErrorCode::HandshakeRequired, "handshake_required"},
    std::pair{ErrorCode::PathEscape, "path_escape"},
    std::pair{ErrorCode::GuestViolation, "guest_violation"},
    std::pair{ErrorCode::SandboxNotRunning, "sandbox_not_running"},
    std::pair{ErrorCode::IoError, "io_error"},
    std::pair{ErrorCode::HistoryUnavailable, "history_unavailable"},
    std::pair{ErrorCode::Denied, "denied"},
    std::pair{ErrorCode::Busy, "busy"},
    std::pair{ErrorCode::HostIdsTaken, "host_ids_taken"},
    std::pair{ErrorCode::DiskFull, "disk_full"},
    std::pair{ErrorCode::Conflict, "conflict"},
    std::pair{ErrorCode::Internal, "internal"},
};
} // namespace

QString errorCodeName(ErrorCode code)
{
    for (const auto &[c, name] : kNames)
        if (c == code)
            return QString::fromLatin1(name);
    return QStringLiteral("internal");
}

std::optional<ErrorCode> errorCodeFromName(const QString &name)
{
    for (const auto &[c, n] : kNames)
        if (name == QLatin1String(n))
            return c;
    return std::nullopt;
}

} // namespace airlock
