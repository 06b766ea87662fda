// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QJsonObject>
#include <QJsonValue>

namespace airlock::tools {

// The part of JSON Schema that tool declarations use: type, properties, required,
// additionalProperties (true/false), enum, const, minLength, maxLength, pattern, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, items, minItems, maxItems, plus the annotations (title,
// description, default, examples, $schema). Any other keyword makes the schema invalid: a
// constraint Airlock would not enforce must not look as if it were.
class JsonSchema {
public:
    // Checks a schema when its tool is declared; errors name the keyword by JSON pointer.
    static Status check(const QJsonObject &schema);
    // Checks a value (a tool call's arguments). Errors say where and what was expected:
    // "/to: expected a string matching ^[^@]+@[^@]+$".
    static Status validate(const QJsonObject &schema, const QJsonValue &value);

private:
    static Status checkAt(const QJsonObject &schema, const QString &pointer, int depth);
    static Status validateAt(const QJsonObject &schema, const QJsonValue &value, const QString &pointer, int depth);
};

} // namespace airlock::tools
