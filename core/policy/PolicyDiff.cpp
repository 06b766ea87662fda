// SPDX-License-Identifier: Apache-2.0
#include "policy/PolicyDiff.h"

#include "model/DisplayText.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace airlock::policy {

namespace {
QString scalar(const QJsonValue &v)
{
    if (v.isString())
        return display::escaped(v.toString(), 200);
    if (v.isBool())
        return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (v.isDouble())
        return QString::number(v.toDouble(), 'g', 15);
    if (v.isNull())
        return QStringLiteral("null");
    const QJsonDocument doc = v.isArray() ? QJsonDocument(v.toArray()) : QJsonDocument(v.toObject());
    return display::escaped(QString::fromUtf8(doc.toJson(QJsonDocument::Compact)), 300);
}

void walk(const QJsonObject &object, const QString &prefix, QList<std::pair<QString, QString>> &out)
{
    for (auto it = object.begin(); it != object.end(); ++it) {
        const QString pointer = prefix + QLatin1Char('/') + it.key();
        const QJsonValue v = it.value();
        if (v.isObject() && !v.toObject().isEmpty())
            walk(v.toObject(), pointer, out);
        else if (v.isArray() && !v.toArray().isEmpty())
            for (const QJsonValue &item : v.toArray())
                out.append({pointer, scalar(item)}); // a list: its items, each on its own line
        else
            out.append({pointer, QStringLiteral("= ") + scalar(v)});
    }
}
} // namespace

QList<std::pair<QString, QString>> flatten(const QJsonObject &document)
{
    QList<std::pair<QString, QString>> out;
    walk(document, QString(), out);
    return out;
}

Changes diff(const QJsonObject &before, const QJsonObject &after)
{
    auto lines = [](const QJsonObject &doc) {
        QStringList out;
        for (const auto &[pointer, value] : flatten(doc))
            out.append(pointer + QLatin1Char(' ') + value);
        return out;
    };
    QStringList was = lines(before), is = lines(after);
    Changes changes;
    // Multisets: each line of one side cancels one equal line of the other.
    QStringList removed;
    for (const QString &line : std::as_const(was)) {
        if (const qsizetype i = is.indexOf(line); i >= 0)
            is.removeAt(i);
        else
            removed.append(QStringLiteral("- ") + line);
    }
    changes.lines = removed;
    for (const QString &line : std::as_const(is))
        changes.lines.append(QStringLiteral("+ ") + line);
    changes.reordered = changes.lines.isEmpty() && before != after;
    return changes;
}

} // namespace airlock::policy
