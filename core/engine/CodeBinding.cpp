// SPDX-License-Identifier: Apache-2.0
#include "engine/CodeBinding.h"

#include "policy/CommandRisk.h"
#include "sandbox/WorkspaceFiles.h"

#include <QCryptographicHash>
#include <QDir>
#include <QJsonObject>

namespace airlock {

namespace {
constexpr qint64 kMaxBound = 16 * 1024 * 1024;
constexpr qint64 kMaxRead = 32 * 1024 * 1024;
constexpr qsizetype kMaxFiles = 16;
constexpr qint64 kChunk = 1024 * 1024;
constexpr int kHeadLines = 5;
} // namespace

QJsonArray bindCode(const WorkspaceFiles &files, const QStringList &argv, const QString &cwd)
{
    QJsonArray out;
    QStringList seen;
    const QString dir = cwd.isEmpty() ? QStringLiteral("/workspace") : cwd;
    qint64 budget = kMaxRead; // what one request may make the daemon read, in all
    for (const policy::CodeFile &f : policy::codeFiles(argv)) {
        if (!f.problem.isEmpty()) {
            out.append(QJsonObject{{QStringLiteral("path"), f.path}, {QStringLiteral("problem"), f.problem}});
            continue;
        }
        const QString path
            = QDir::cleanPath(f.path.startsWith(QLatin1Char('/')) ? f.path : dir + QLatin1Char('/') + f.path);
        if (seen.contains(path))
            continue;
        seen.append(path);
        if (seen.size() > kMaxFiles || budget <= 0) {
            out.append(QJsonObject{{QStringLiteral("path"), path},
                {QStringLiteral("problem"),
                    QStringLiteral("past the 16 files and 32 MiB one approval reads: not bound")}});
            continue;
        }
        QCryptographicHash sha(QCryptographicHash::Sha256);
        QByteArray head;
        QString problem;
        qint64 size = 0;
        for (qint64 offset = 0;;) {
            auto chunk = files.read(path, offset, kChunk);
            if (!chunk) {
                problem = chunk.error().message;
                break;
            }
            size = chunk->size;
            if (size > kMaxBound || size > budget) {
                problem = size > kMaxBound ? QStringLiteral("larger than 16 MiB: not bound")
                                           : QStringLiteral("past the 32 MiB one approval reads: not bound");
                break;
            }
            sha.addData(chunk->data);
            if (head.count('\n') < kHeadLines && head.size() < 4096)
                head += chunk->data.left(4096);
            offset += chunk->data.size();
            if (chunk->eof || chunk->data.isEmpty())
                break;
        }
        budget -= size;
        if (!problem.isEmpty()) {
            if (!f.optional)
                out.append(QJsonObject{{QStringLiteral("path"), path}, {QStringLiteral("problem"), problem}});
            continue;
        }
        QString text = QString::fromUtf8(head);
        if (text.endsWith(QLatin1Char('\n')))
            text.chop(1);
        QStringList lines = text.split(QLatin1Char('\n')).mid(0, kHeadLines);
        for (QString &line : lines)
            line = line.left(200);
        out.append(QJsonObject{{QStringLiteral("path"), path},
            {QStringLiteral("sha256"), QString::fromLatin1(sha.result().toHex())},
            {QStringLiteral("size"), double(size)}, {QStringLiteral("head"), QJsonArray::fromStringList(lines)}});
    }
    return out;
}

QString changedCode(const QJsonArray &bound, const QJsonArray &now)
{
    const auto key = [](const QJsonValue &v) -> QString {
        const QJsonObject o = v.toObject();
        return o.value(QStringLiteral("path")).toString() + QLatin1Char(' ')
            + o.value(QStringLiteral("sha256")).toString();
    };
    QStringList before, after;
    for (const QJsonValue &v : bound)
        before.append(key(v));
    for (const QJsonValue &v : now)
        after.append(key(v));
    // Changed or gone; or there now and not then (a default makefile that appeared).
    for (const auto &[from, to] : {std::pair{&before, &after}, std::pair{&after, &before}})
        for (const QString &k : *from)
            if (!to->contains(k))
                return k.section(QLatin1Char(' '), 0, -2);
    return {};
}

} // namespace airlock
