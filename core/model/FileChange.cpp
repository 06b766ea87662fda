// SPDX-License-Identifier: Apache-2.0
#include "model/FileChange.h"

#include <QJsonArray>

#include <algorithm>
#include <array>

namespace airlock::cow {

namespace {
constexpr std::array kStatuses{Change::Status::Added, Change::Status::Modified, Change::Status::Deleted};
constexpr std::array kKinds{Change::Kind::File, Change::Kind::Directory, Change::Kind::Symlink, Change::Kind::Other};

Error bad(const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, what);
}
} // namespace

QString statusName(Change::Status status)
{
    switch (status) {
    case Change::Status::Added:
        return QStringLiteral("added");
    case Change::Status::Modified:
        return QStringLiteral("modified");
    case Change::Status::Deleted:
        return QStringLiteral("deleted");
    }
    return {};
}

QString kindName(Change::Kind kind)
{
    switch (kind) {
    case Change::Kind::File:
        return QStringLiteral("file");
    case Change::Kind::Directory:
        return QStringLiteral("directory");
    case Change::Kind::Symlink:
        return QStringLiteral("symlink");
    case Change::Kind::Other:
        return QStringLiteral("other");
    }
    return {};
}

bool isChangePath(const QString &path)
{
    if (path.isEmpty() || path.size() > 4096 || path.contains(QChar(0)))
        return false;
    for (const QStringView name : QStringView(path).split(QLatin1Char('/')))
        if (name.isEmpty() || name == QLatin1String(".") || name == QLatin1String(".."))
            return false;
    return true;
}

QJsonObject Change::toJson() const
{
    QJsonObject o{{QStringLiteral("path"), path}, {QStringLiteral("status"), statusName(status)},
        {QStringLiteral("kind"), kindName(kind)}, {QStringLiteral("size"), double(size)},
        {QStringLiteral("mode"), int(mode)}};
    if (modeOnly)
        o.insert(QStringLiteral("modeOnly"), true);
    return o;
}

Result<Change> Change::fromJson(const QJsonObject &json)
{
    Change c;
    c.path = json.value(QStringLiteral("path")).toString();
    if (!isChangePath(c.path))
        return bad(QStringLiteral("change.path: expected a relative path without '.' or '..', not '%1'").arg(c.path));
    const QString status = json.value(QStringLiteral("status")).toString();
    const auto s = std::find_if(kStatuses.begin(), kStatuses.end(), [&](auto v) { return statusName(v) == status; });
    if (s == kStatuses.end())
        return bad(QStringLiteral("change.status: expected added, modified or deleted, not '%1'").arg(status));
    c.status = *s;
    const QString kind = json.value(QStringLiteral("kind")).toString();
    const auto k = std::find_if(kKinds.begin(), kKinds.end(), [&](auto v) { return kindName(v) == kind; });
    if (k == kKinds.end())
        return bad(QStringLiteral("change.kind: expected file, directory, symlink or other, not '%1'").arg(kind));
    c.kind = *k;
    c.size = qint64(json.value(QStringLiteral("size")).toDouble());
    const int mode = json.value(QStringLiteral("mode")).toInt(-1);
    if (c.size < 0 || mode < 0 || mode > 07777)
        return bad(
            QStringLiteral("change %1: size and mode are expected to be a count and permission bits").arg(c.path));
    c.mode = uint32_t(mode);
    c.modeOnly = json.value(QStringLiteral("modeOnly")).toBool();
    return c;
}

QJsonObject MountChanges::toJson() const
{
    QJsonArray list;
    for (const Change &c : changes)
        list.append(c.toJson());
    return QJsonObject{{QStringLiteral("index"), index}, {QStringLiteral("host"), hostPath},
        {QStringLiteral("path"), sandboxPath}, {QStringLiteral("changes"), list}};
}

Result<MountChanges> MountChanges::fromJson(const QJsonObject &json)
{
    MountChanges m;
    m.index = json.value(QStringLiteral("index")).toInt(-1);
    m.hostPath = json.value(QStringLiteral("host")).toString();
    m.sandboxPath = json.value(QStringLiteral("path")).toString();
    if (m.index < 0 || !m.hostPath.startsWith(QLatin1Char('/')) || !m.sandboxPath.startsWith(QLatin1Char('/')))
        return bad(QStringLiteral("mount: expected its index and its host and sandbox paths (absolute)"));
    for (const QJsonValue &v : json.value(QStringLiteral("changes")).toArray()) {
        auto c = Change::fromJson(v.toObject());
        if (!c)
            return c.error();
        m.changes.append(*c);
    }
    return m;
}

QJsonObject SandboxChanges::toJson() const
{
    QJsonArray list;
    for (const MountChanges &m : mounts)
        list.append(m.toJson());
    return QJsonObject{{QStringLiteral("sandbox"), sandbox}, {QStringLiteral("createdMs"), double(createdMs)},
        {QStringLiteral("mounts"), list}};
}

Result<SandboxChanges> SandboxChanges::fromJson(const QJsonObject &json)
{
    SandboxChanges s;
    s.sandbox = json.value(QStringLiteral("sandbox")).toString();
    s.createdMs = qint64(json.value(QStringLiteral("createdMs")).toDouble());
    for (const QJsonValue &v : json.value(QStringLiteral("mounts")).toArray()) {
        auto m = MountChanges::fromJson(v.toObject());
        if (!m)
            return m.error();
        s.mounts.append(*m);
    }
    return s;
}

} // namespace airlock::cow
