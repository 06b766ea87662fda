// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

#include <cstdint>

// The parameters of RPC requests, read with the error that names what was wrong.
namespace airlock::rpc {

Error invalid(const QString &what);
// A non-empty string of at most 4096 characters.
Result<QString> stringParam(const QJsonObject &params, const char *key);
// params.exec: an execution id.
Result<uint32_t> execParam(const QJsonObject &params);
// Base64 bytes; empty when the parameter is absent.
Result<QByteArray> base64Param(const QJsonObject &params, const char *key);

} // namespace airlock::rpc
