// SPDX-License-Identifier: Apache-2.0
#include "tools/JsonSchema.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

#include <cmath>

namespace airlock::tools {

namespace {
// A schema's pattern as JSON Schema means it (ECMA-262): "$" only at the very end. PCRE also lets
// "$" match before a final newline, which would let "name\n" through "^[a-z]+$"; outside
// character classes and escapes it becomes "(?!\n)$".
QRegularExpression schemaPattern(const QString &pattern)
{
    QString out;
    bool inClass = false;
    for (qsizetype i = 0; i < pattern.size(); ++i) {
        const QChar c = pattern.at(i);
        if (c == QLatin1Char('\\') && i + 1 < pattern.size()) {
            out += c;
            out += pattern.at(++i);
            continue;
        }
        if (c == QLatin1Char('['))
            inClass = true;
        else if (c == QLatin1Char(']'))
            inClass = false;
        out += !inClass && c == QLatin1Char('$') ? QStringLiteral("(?!\\n)$") : QString(c);
    }
    return QRegularExpression(out);
}

constexpr int kMaxDepth = 32;

Error schemaError(const QString &pointer, const QString &what)
{
    return makeError(ErrorCode::InvalidArgument,
        QStringLiteral("schema %1: %2").arg(pointer.isEmpty() ? QStringLiteral("/") : pointer, what));
}

Error valueError(const QString &pointer, const QString &what)
{
    return makeError(ErrorCode::InvalidArgument,
        QStringLiteral("%1: %2").arg(pointer.isEmpty() ? QStringLiteral("arguments") : pointer, what));
}

QString typeOf(const QJsonValue &v)
{
    switch (v.type()) {
    case QJsonValue::Null:
        return QStringLiteral("null");
    case QJsonValue::Bool:
        return QStringLiteral("boolean");
    case QJsonValue::Double:
        return QStringLiteral("number");
    case QJsonValue::String:
        return QStringLiteral("string");
    case QJsonValue::Array:
        return QStringLiteral("array");
    case QJsonValue::Object:
        return QStringLiteral("object");
    default:
        return QStringLiteral("undefined");
    }
}

bool hasType(const QJsonValue &v, const QString &type)
{
    if (type == QLatin1String("integer"))
        return v.isDouble() && std::floor(v.toDouble()) == v.toDouble() && std::isfinite(v.toDouble());
    return typeOf(v) == type;
}

QString compact(const QJsonValue &v)
{
    return QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact)).mid(1).chopped(1).left(200);
}

// RFC 6901: '~' and '/' in a key.
QString escapeKey(QString key)
{
    return key.replace(QLatin1Char('~'), QStringLiteral("~0")).replace(QLatin1Char('/'), QStringLiteral("~1"));
}

QStringList types(const QJsonObject &schema)
{
    const QJsonValue t = schema.value(QStringLiteral("type"));
    if (t.isString())
        return {t.toString()};
    QStringList out;
    for (const QJsonValue &v : t.toArray())
        out.append(v.toString());
    return out;
}
} // namespace

Status JsonSchema::check(const QJsonObject &schema)
{
    return checkAt(schema, {}, 0);
}

Status JsonSchema::checkAt(const QJsonObject &schema, const QString &pointer, int depth)
{
    if (depth > kMaxDepth)
        return schemaError(pointer, QStringLiteral("nested deeper than %1").arg(kMaxDepth));
    static const QStringList known = {QStringLiteral("type"), QStringLiteral("properties"), QStringLiteral("required"),
        QStringLiteral("additionalProperties"), QStringLiteral("enum"), QStringLiteral("const"),
        QStringLiteral("minLength"), QStringLiteral("maxLength"), QStringLiteral("pattern"), QStringLiteral("minimum"),
        QStringLiteral("maximum"), QStringLiteral("exclusiveMinimum"), QStringLiteral("exclusiveMaximum"),
        QStringLiteral("items"), QStringLiteral("minItems"), QStringLiteral("maxItems"), QStringLiteral("title"),
        QStringLiteral("description"), QStringLiteral("default"), QStringLiteral("examples"),
        QStringLiteral("$schema")};
    static const QStringList typeNames = {QStringLiteral("object"), QStringLiteral("array"), QStringLiteral("string"),
        QStringLiteral("number"), QStringLiteral("integer"), QStringLiteral("boolean"), QStringLiteral("null")};
    for (auto it = schema.begin(); it != schema.end(); ++it)
        if (!known.contains(it.key()))
            return schemaError(pointer + QLatin1Char('/') + escapeKey(it.key()),
                QStringLiteral("'%1' is not a keyword Airlock enforces; remove it or express it with: %2")
                    .arg(it.key(), known.mid(0, 17).join(QStringLiteral(", "))));
    if (schema.contains(QStringLiteral("type"))) {
        const QJsonValue t = schema.value(QStringLiteral("type"));
        if (!t.isString() && !t.isArray())
            return schemaError(
                pointer + QStringLiteral("/type"), QStringLiteral("expected a type name or a list of them"));
        for (const QString &name : types(schema))
            if (!typeNames.contains(name))
                return schemaError(
                    pointer + QStringLiteral("/type"), QStringLiteral("unknown type '%1'").arg(name.left(50)));
    }
    for (const char *key : {"minLength", "maxLength", "minItems", "maxItems"}) {
        const QJsonValue v = schema.value(QLatin1String(key));
        if (!v.isUndefined() && (!hasType(v, QStringLiteral("integer")) || v.toDouble() < 0))
            return schemaError(
                pointer + QLatin1Char('/') + QLatin1String(key), QStringLiteral("expected a non-negative integer"));
    }
    for (const char *key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
        if (schema.contains(QLatin1String(key)) && !schema.value(QLatin1String(key)).isDouble())
            return schemaError(pointer + QLatin1Char('/') + QLatin1String(key), QStringLiteral("expected a number"));
    if (schema.contains(QStringLiteral("pattern"))) {
        const QRegularExpression re = schemaPattern(schema.value(QStringLiteral("pattern")).toString());
        if (!schema.value(QStringLiteral("pattern")).isString() || !re.isValid())
            return schemaError(
                pointer + QStringLiteral("/pattern"), QStringLiteral("expected a valid regular expression"));
    }
    if (schema.contains(QStringLiteral("enum")) && !schema.value(QStringLiteral("enum")).isArray())
        return schemaError(pointer + QStringLiteral("/enum"), QStringLiteral("expected an array of allowed values"));
    if (schema.contains(QStringLiteral("required"))) {
        if (!schema.value(QStringLiteral("required")).isArray())
            return schemaError(
                pointer + QStringLiteral("/required"), QStringLiteral("expected an array of property names"));
        for (const QJsonValue &r : schema.value(QStringLiteral("required")).toArray())
            if (!r.isString())
                return schemaError(
                    pointer + QStringLiteral("/required"), QStringLiteral("expected an array of property names"));
    }
    if (schema.contains(QStringLiteral("additionalProperties"))
        && !schema.value(QStringLiteral("additionalProperties")).isBool())
        return schemaError(pointer + QStringLiteral("/additionalProperties"), QStringLiteral("expected true or false"));
    if (schema.contains(QStringLiteral("properties"))) {
        if (!schema.value(QStringLiteral("properties")).isObject())
            return schemaError(
                pointer + QStringLiteral("/properties"), QStringLiteral("expected an object of schemas"));
        const QJsonObject props = schema.value(QStringLiteral("properties")).toObject();
        for (auto it = props.begin(); it != props.end(); ++it) {
            const QString at = pointer + QStringLiteral("/properties/") + escapeKey(it.key());
            if (!it.value().isObject())
                return schemaError(at, QStringLiteral("expected a schema object"));
            if (Status s = checkAt(it.value().toObject(), at, depth + 1); !s)
                return s;
        }
    }
    if (schema.contains(QStringLiteral("items"))) {
        if (!schema.value(QStringLiteral("items")).isObject())
            return schemaError(pointer + QStringLiteral("/items"), QStringLiteral("expected a schema object"));
        if (Status s
            = checkAt(schema.value(QStringLiteral("items")).toObject(), pointer + QStringLiteral("/items"), depth + 1);
            !s)
            return s;
    }
    return Ok{};
}

Status JsonSchema::validate(const QJsonObject &schema, const QJsonValue &value)
{
    return validateAt(schema, value, {}, 0);
}

Status JsonSchema::validateAt(const QJsonObject &schema, const QJsonValue &value, const QString &pointer, int depth)
{
    if (depth > kMaxDepth)
        return valueError(pointer, QStringLiteral("nested deeper than %1").arg(kMaxDepth));
    const QStringList allowed = types(schema);
    if (!allowed.isEmpty()
        && std::none_of(allowed.cbegin(), allowed.cend(), [&](const QString &t) { return hasType(value, t); }))
        return valueError(
            pointer, QStringLiteral("expected %1, got %2").arg(allowed.join(QStringLiteral(" or ")), typeOf(value)));
    if (schema.contains(QStringLiteral("const")) && schema.value(QStringLiteral("const")) != value)
        return valueError(pointer, QStringLiteral("expected %1").arg(compact(schema.value(QStringLiteral("const")))));
    if (schema.contains(QStringLiteral("enum")) && !schema.value(QStringLiteral("enum")).toArray().contains(value))
        return valueError(
            pointer, QStringLiteral("expected one of %1").arg(compact(schema.value(QStringLiteral("enum")))));
    if (value.isString()) {
        const QString s = value.toString();
        const qsizetype length = s.toUcs4().size(); // code points, as JSON Schema counts
        if (schema.contains(QStringLiteral("minLength"))
            && length < qsizetype(schema.value(QStringLiteral("minLength")).toDouble()))
            return valueError(pointer,
                QStringLiteral("expected at least %1 characters")
                    .arg(schema.value(QStringLiteral("minLength")).toInt()));
        if (schema.contains(QStringLiteral("maxLength"))
            && length > qsizetype(schema.value(QStringLiteral("maxLength")).toDouble()))
            return valueError(pointer,
                QStringLiteral("expected at most %1 characters")
                    .arg(schema.value(QStringLiteral("maxLength")).toInt()));
        if (schema.contains(QStringLiteral("pattern"))) {
            const QString pattern = schema.value(QStringLiteral("pattern")).toString();
            if (!schemaPattern(pattern).match(s).hasMatch())
                return valueError(pointer, QStringLiteral("expected a string matching %1").arg(pattern.left(200)));
        }
    }
    if (value.isDouble()) {
        const double n = value.toDouble();
        const auto bound = [&](const char *key) { return schema.value(QLatin1String(key)).toDouble(); };
        if (schema.contains(QStringLiteral("minimum")) && n < bound("minimum"))
            return valueError(pointer, QStringLiteral("expected at least %1").arg(bound("minimum")));
        if (schema.contains(QStringLiteral("maximum")) && n > bound("maximum"))
            return valueError(pointer, QStringLiteral("expected at most %1").arg(bound("maximum")));
        if (schema.contains(QStringLiteral("exclusiveMinimum")) && n <= bound("exclusiveMinimum"))
            return valueError(pointer, QStringLiteral("expected more than %1").arg(bound("exclusiveMinimum")));
        if (schema.contains(QStringLiteral("exclusiveMaximum")) && n >= bound("exclusiveMaximum"))
            return valueError(pointer, QStringLiteral("expected less than %1").arg(bound("exclusiveMaximum")));
    }
    if (value.isArray()) {
        const QJsonArray a = value.toArray();
        if (schema.contains(QStringLiteral("minItems"))
            && a.size() < qsizetype(schema.value(QStringLiteral("minItems")).toDouble()))
            return valueError(pointer,
                QStringLiteral("expected at least %1 items").arg(schema.value(QStringLiteral("minItems")).toInt()));
        if (schema.contains(QStringLiteral("maxItems"))
            && a.size() > qsizetype(schema.value(QStringLiteral("maxItems")).toDouble()))
            return valueError(pointer,
                QStringLiteral("expected at most %1 items").arg(schema.value(QStringLiteral("maxItems")).toInt()));
        if (schema.contains(QStringLiteral("items")))
            for (qsizetype i = 0; i < a.size(); ++i)
                if (Status s = validateAt(schema.value(QStringLiteral("items")).toObject(), a.at(i),
                        QStringLiteral("%1/%2").arg(pointer).arg(i), depth + 1);
                    !s)
                    return s;
    }
    if (value.isObject()) {
        const QJsonObject o = value.toObject();
        const QJsonObject props = schema.value(QStringLiteral("properties")).toObject();
        for (const QJsonValue &r : schema.value(QStringLiteral("required")).toArray())
            if (!o.contains(r.toString()))
                return valueError(pointer + QLatin1Char('/') + escapeKey(r.toString()), QStringLiteral("is required"));
        for (auto it = o.begin(); it != o.end(); ++it) {
            const QString at = pointer + QLatin1Char('/') + escapeKey(it.key());
            if (props.contains(it.key())) {
                if (Status s = validateAt(props.value(it.key()).toObject(), it.value(), at, depth + 1); !s)
                    return s;
            } else if (schema.value(QStringLiteral("additionalProperties")) == QJsonValue(false)) {
                return valueError(at,
                    QStringLiteral("is not an argument of this tool (expected: %1)")
                        .arg(props.keys().join(QStringLiteral(", "))));
            }
        }
    }
    return Ok{};
}

} // namespace airlock::tools
