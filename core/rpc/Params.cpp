// SPDX-License-Identifier: Apache-2.0
#include "rpc/Params.h"

#include <QJsonValue>

namespace airlock::rpc {

Error invalid(const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, what);
}

Result<QString> stringParam(const QJsonObject &params, const char *key)
{
    const QJsonValue v = params.value(QLatin1String(key));
    if (!v.isString() || v.toString().isEmpty() || v.toString().size() > 4096)
        return invalid(QStringLiteral("params.%1: expected a non-empty string").arg(QLatin1String(key)));
    return v.toString();
}

Result<uint32_t> execParam(const QJsonObject &params)
{
    const double v = params.value(QStringLiteral("exec")).toDouble(-1);
    if (v < 1 || v > 4294967295.0 || v != double(uint32_t(v)))
        return invalid(QStringLiteral("params.exec: expected an execution id"));
    return uint32_t(v);
}

Result<QByteArray> base64Param(const QJsonObject &params, const char *key)
{
    const QJsonValue v = params.value(QLatin1String(key));
    if (v.isUndefined())
        return QByteArray();
    auto decoded = QByteArray::fromBase64Encoding(v.toString().toLatin1(), QByteArray::AbortOnBase64DecodingErrors);
    if (!v.isString() || !decoded)
        return invalid(QStringLiteral("params.%1: expected base64").arg(QLatin1String(key)));
    return *decoded;
}

} // namespace airlock::rpc
