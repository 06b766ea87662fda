// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QStringList>

namespace airlock::tools {

// A host-side tool as declared in configuration (one JSON file each). It runs outside every
// sandbox with the daemon's rights, so each call is validated against `schema` and gated by the
// calling sandbox's policy. Arguments are data: a command gets them as whole argv elements or as
// JSON on stdin, never through a shell; a request gets them percent-encoded in its URL or as JSON
// values in its body. "{secret:NAME}" in a command's env or a request's headers is the tool's own
// credential, read from the secret store when the call runs.
struct ToolDeclaration {
    enum class Kind { Command, Http };
    QString name, description, source;
    QJsonObject schema;
    Kind kind = Kind::Command;
    int timeoutMs = 30000;
    // command
    QStringList argv; // "{arg}" elements are replaced by that argument ("${x}" is literal)
    bool stdinArguments = false; // the arguments as JSON on stdin
    QMap<QString, QString> env;
    QString cwd = QStringLiteral("/");
    // http
    QString method, url; // "{arg}" in the URL: percent-encoded argument
    QMap<QString, QString> headers;
    QJsonValue body; // "{arg}" string values: that argument's JSON value; "{*}": all

    QJsonObject toJson() const; // what clients see (templates, never secret values)
};

class ToolRegistry {
public:
    static Result<ToolDeclaration> parse(const QJsonObject &json, const QString &source);
    // Loads every *.json of the directories (missing ones are fine). Returns one message per file
    // that was left out and why.
    QStringList load(const QStringList &dirs);
    const ToolDeclaration *find(const QString &name) const;
    const QList<ToolDeclaration> &all() const { return m_tools; }

private:
    QList<ToolDeclaration> m_tools;
};

} // namespace airlock::tools
