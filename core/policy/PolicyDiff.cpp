// SPDX-License-Identifier: Apache-2.0
#include "policy/PolicyDiff.h"

#include "model/DisplayText.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>

namespace airlock::policy {

namespace {
// Whole, never elided: what is cut off could be the part that matters ("decision": "allow").
QString scalar(const QJsonValue &v)
{
    if (v.isString())
        return display::escaped(v.toString());
    if (v.isBool())
        return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (v.isDouble())
        return QString::number(v.toDouble(), 'g', 15);
    if (v.isNull())
        return QStringLiteral("null");
    const QJsonDocument doc = v.isArray() ? QJsonDocument(v.toArray()) : QJsonDocument(v.toObject());
    return display::escaped(QString::fromUtf8(doc.toJson(QJsonDocument::Compact)));
}

void walk(const QJsonObject &object, const QString &prefix, QList<std::pair<QString, QString>> &out)
{
    for (auto it = object.begin(); it != object.end(); ++it) {
        const QString pointer
            = prefix + QLatin1Char('/') + display::escaped(it.key()); // keys are free-form (tool constraints)
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
    const QStringList was = lines(before), is = lines(after);
    Changes changes;
    // Multisets, counted rather than searched: a large import stays quick to compare.
    // The lines of `side` that the other side has no equal of, each equal line cancelling one.
    auto unmatched = [&changes](const QStringList &side, const QStringList &other, const QString &sign) {
        QHash<QString, int> count;
        for (const QString &line : other)
            ++count[line];
        for (const QString &line : side)
            if (int &n = count[line]; n > 0)
                --n;
            else
                changes.lines.append(sign + line);
    };
    unmatched(was, is, QStringLiteral("- "));
    unmatched(is, was, QStringLiteral("+ "));
    changes.reordered = changes.lines.isEmpty() && before != after;
    return changes;
}

} // namespace airlock::policy
