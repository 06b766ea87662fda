// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QJsonObject>
#include <QStringList>

namespace airlock::policy {

// What changes between two policy documents, one line per value, for a person to read before
// applying: "- /commands/default = ask", "+ /network/allow site.test", "+ /commands/rules {…}".
// Lists are compared as sets (an item moved is not a change; see `reordered`). Untrusted strings
// are escaped.
struct Changes {
    QStringList lines;
    bool reordered = false; // the same items in another order
    bool isEmpty() const { return lines.isEmpty() && !reordered; }
};
Changes diff(const QJsonObject &before, const QJsonObject &after);

// Every value of a document as "pointer" → "value" lines (lists item by item), in document order.
QList<std::pair<QString, QString>> flatten(const QJsonObject &document);

} // namespace airlock::policy
