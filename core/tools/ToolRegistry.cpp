// SPDX-License-Identifier: Apache-2.0
#include "tools/ToolRegistry.h"

#include "model/Units.h"
#include "tools/JsonSchema.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QUrl>

namespace airlock::tools {

namespace {
Error bad(const QString &source, const QString &pointer, const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, QStringLiteral("%1: %2: %3").arg(source, pointer, what));
}

// "{name}" placeholders in a template string; "${...}" is literal (a program's own format, like
// dpkg-query's ${Version}).
QStringList placeholders(const QString &text)
{
    static const QRegularExpression re(QStringLiteral("(?<!\\$)\\{([A-Za-z_][A-Za-z0-9_]*|\\*)\\}"));
    QStringList out;
    for (auto it = re.globalMatch(text); it.hasNext();)
        out.append(it.next().captured(1));
    return out;
}

Result<QMap<QString, QString>> stringMap(
    const QJsonObject &parent, const char *key, const QString &source, const QString &pointer)
{
    QMap<QString, QString> out;
    const QJsonValue v = parent.value(QLatin1String(key));
    if (v.isUndefined())
        return out;
    if (!v.isObject())
        return bad(source, pointer, QStringLiteral("expected an object of strings"));
    const QJsonObject o = v.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (!it.value().isString())
            return bad(source, pointer + QLatin1Char('/') + it.key(), QStringLiteral("expected a string"));
        out.insert(it.key(), it.value().toString());
    }
    return out;
}

// Argument placeholders must name required arguments (a missing one would change what runs);
// secret placeholders are checked when the call runs.
Status checkPlaceholders(
    const QString &text, const QStringList &required, const QString &source, const QString &pointer, bool allowSecrets)
{
    static const QRegularExpression secret(QStringLiteral("\\{secret:[A-Za-z0-9_.-]{1,100}\\}"));
    QString rest = text;
    if (allowSecrets)
        rest.remove(secret);
    else if (secret.match(text).hasMatch())
        return bad(
            source, pointer, QStringLiteral("{secret:NAME} goes in a command's env or a request's headers only"));
    for (const QString &p : placeholders(rest))
        if (p != QLatin1String("*") && !required.contains(p))
            return bad(source, pointer, QStringLiteral("{%1} must name a required argument").arg(p));
    return Ok{};
}
} // namespace

QJsonObject ToolDeclaration::toJson() const
{
    QJsonObject executor;
    if (kind == Kind::Command) {
        executor = {{QStringLiteral("command"), QJsonArray::fromStringList(argv)},
            {QStringLiteral("stdin"), stdinArguments ? QStringLiteral("arguments") : QStringLiteral("none")}};
    } else {
        executor = {{QStringLiteral("method"), method}, {QStringLiteral("url"), url}};
    }
    return {{QStringLiteral("name"), name}, {QStringLiteral("description"), description},
        {QStringLiteral("inputSchema"), schema}, {QStringLiteral("executor"), executor},
        {QStringLiteral("timeoutMs"), timeoutMs}, {QStringLiteral("source"), source}};
}

Result<ToolDeclaration> ToolRegistry::parse(const QJsonObject &json, const QString &source)
{
    static const QRegularExpression toolName(QStringLiteral("^[a-z][a-z0-9_.-]{0,99}$"));
    for (auto it = json.begin(); it != json.end(); ++it)
        if (!QStringList{QStringLiteral("name"), QStringLiteral("description"), QStringLiteral("arguments"),
                QStringLiteral("command"), QStringLiteral("http")}
                 .contains(it.key()))
            return bad(source, QLatin1Char('/') + it.key(),
                QStringLiteral("unknown field (expected name, description, arguments, command or http)"));
    ToolDeclaration t;
    t.source = source;
    t.name = json.value(QStringLiteral("name")).toString();
    if (!toolName.match(t.name).hasMatch())
        return bad(source, QStringLiteral("/name"),
            QStringLiteral("expected a tool name (lower-case letters, digits, _ . -)"));
    t.description = json.value(QStringLiteral("description")).toString();
    if (t.description.isEmpty())
        return bad(source, QStringLiteral("/description"),
            QStringLiteral("expected a description: it is what agents and people read"));
    t.schema = json.value(QStringLiteral("arguments")).toObject();
    if (!json.value(QStringLiteral("arguments")).isObject()
        || t.schema.value(QStringLiteral("type")).toString() != QLatin1String("object"))
        return bad(source, QStringLiteral("/arguments"), QStringLiteral("expected a JSON Schema of type \"object\""));
    if (Status s = JsonSchema::check(t.schema); !s)
        return bad(source, QStringLiteral("/arguments"), s.error().message);
    QStringList required;
    for (const QJsonValue &r : t.schema.value(QStringLiteral("required")).toArray())
        required.append(r.toString());

    const bool command = json.contains(QStringLiteral("command")), http = json.contains(QStringLiteral("http"));
    if (command == http)
        return bad(
            source, QStringLiteral("/"), QStringLiteral("expected exactly one executor: \"command\" or \"http\""));
    const QString pointer = command ? QStringLiteral("/command") : QStringLiteral("/http");
    const QJsonObject e = json.value(command ? QStringLiteral("command") : QStringLiteral("http")).toObject();
    if (e.contains(QStringLiteral("timeout"))) {
        auto ms = units::parseDurationMs(e.value(QStringLiteral("timeout")).toString());
        if (!ms || *ms < 100 || *ms > 600000)
            return bad(source, pointer + QStringLiteral("/timeout"),
                QStringLiteral("expected a duration from 100ms to 10m, like \"30s\""));
        t.timeoutMs = int(*ms);
    }
    if (command) {
        t.kind = ToolDeclaration::Kind::Command;
        for (auto it = e.begin(); it != e.end(); ++it)
            if (!QStringList{QStringLiteral("argv"), QStringLiteral("stdin"), QStringLiteral("env"),
                    QStringLiteral("cwd"), QStringLiteral("timeout")}
                     .contains(it.key()))
                return bad(source, pointer + QLatin1Char('/') + it.key(),
                    QStringLiteral("unknown field (expected argv, stdin, env, cwd, timeout)"));
        for (const QJsonValue &a : e.value(QStringLiteral("argv")).toArray()) {
            if (!a.isString())
                return bad(source, pointer + QStringLiteral("/argv"), QStringLiteral("expected strings"));
            t.argv.append(a.toString());
        }
        if (t.argv.isEmpty() || !QFileInfo(t.argv.first()).isAbsolute())
            return bad(source, pointer + QStringLiteral("/argv"),
                QStringLiteral("expected a program by absolute path, then its arguments"));
        for (qsizetype i = 0; i < t.argv.size(); ++i) {
            const QStringList ps = placeholders(t.argv[i]);
            const QString at = QStringLiteral("%1/argv/%2").arg(pointer).arg(i);
            // A placeholder is a whole element: an argument is one word of data, never part of one.
            if (!ps.isEmpty()
                && (i == 0 || t.argv[i] != QLatin1Char('{') + ps.first() + QLatin1Char('}')
                    || ps.first() == QLatin1String("*")))
                return bad(source, at,
                    QStringLiteral("a placeholder must be a whole argument, like \"{path}\", and not the program"));
            if (Status s = checkPlaceholders(t.argv[i], required, source, at, false); !s)
                return s.error();
        }
        const QString in = e.value(QStringLiteral("stdin")).toString(QStringLiteral("none"));
        if (in != QLatin1String("none") && in != QLatin1String("arguments"))
            return bad(source, pointer + QStringLiteral("/stdin"),
                QStringLiteral("expected \"none\" or \"arguments\" (the arguments as JSON)"));
        t.stdinArguments = in == QLatin1String("arguments");
        auto env = stringMap(e, "env", source, pointer + QStringLiteral("/env"));
        if (!env)
            return env.error();
        for (auto it = env->cbegin(); it != env->cend(); ++it)
            if (Status s
                = checkPlaceholders(it.value(), {}, source, pointer + QStringLiteral("/env/") + it.key(), true);
                !s)
                return s.error();
        t.env = *env;
        t.cwd = e.value(QStringLiteral("cwd")).toString(QStringLiteral("/"));
        if (!QFileInfo(t.cwd).isAbsolute())
            return bad(source, pointer + QStringLiteral("/cwd"), QStringLiteral("expected an absolute path"));
    } else {
        t.kind = ToolDeclaration::Kind::Http;
        for (auto it = e.begin(); it != e.end(); ++it)
            if (!QStringList{QStringLiteral("method"), QStringLiteral("url"), QStringLiteral("headers"),
                    QStringLiteral("body"), QStringLiteral("timeout")}
                     .contains(it.key()))
                return bad(source, pointer + QLatin1Char('/') + it.key(),
                    QStringLiteral("unknown field (expected method, url, headers, body, timeout)"));
        t.method = e.value(QStringLiteral("method")).toString(QStringLiteral("POST")).toUpper();
        if (!QStringList{QStringLiteral("GET"), QStringLiteral("POST"), QStringLiteral("PUT"), QStringLiteral("PATCH"),
                QStringLiteral("DELETE")}
                 .contains(t.method))
            return bad(source, pointer + QStringLiteral("/method"),
                QStringLiteral("expected GET, POST, PUT, PATCH or DELETE"));
        t.url = e.value(QStringLiteral("url")).toString();
        const QUrl probe(
            QString(t.url).replace(QRegularExpression(QStringLiteral("\\{[^}]*\\}")), QStringLiteral("x")));
        if (!probe.isValid() || (probe.scheme() != QLatin1String("http") && probe.scheme() != QLatin1String("https"))
            || probe.host().isEmpty())
            return bad(source, pointer + QStringLiteral("/url"), QStringLiteral("expected an http:// or https:// URL"));
        if (t.url.section(QLatin1Char('/'), 2, 2).contains(QLatin1Char('{')))
            return bad(source, pointer + QStringLiteral("/url"),
                QStringLiteral("arguments may fill the path and query, never the host"));
        if (Status s = checkPlaceholders(t.url, required, source, pointer + QStringLiteral("/url"), false); !s)
            return s.error();
        auto headers = stringMap(e, "headers", source, pointer + QStringLiteral("/headers"));
        if (!headers)
            return headers.error();
        for (auto it = headers->cbegin(); it != headers->cend(); ++it)
            if (Status s
                = checkPlaceholders(it.value(), {}, source, pointer + QStringLiteral("/headers/") + it.key(), true);
                !s)
                return s.error();
        t.headers = *headers;
        t.body = e.value(QStringLiteral("body"));
    }
    return t;
}

QStringList ToolRegistry::load(const QStringList &dirs)
{
    QStringList problems;
    for (const QString &dir : dirs) {
        const QFileInfoList files = QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
        for (const QFileInfo &fi : files) {
            QFile f(fi.filePath());
            QJsonParseError err{};
            const QJsonDocument doc
                = f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.read(1024 * 1024), &err) : QJsonDocument();
            if (!doc.isObject()) {
                problems.append(QStringLiteral("%1: not a JSON object (%2)").arg(fi.filePath(), err.errorString()));
                continue;
            }
            auto tool = parse(doc.object(), fi.filePath());
            if (!tool) {
                problems.append(tool.error().message);
                continue;
            }
            if (find(tool->name)) {
                problems.append(QStringLiteral("%1: a tool named '%2' is already declared in %3")
                                    .arg(fi.filePath(), tool->name, find(tool->name)->source));
                continue;
            }
            m_tools.append(*tool);
        }
    }
    return problems;
}

const ToolDeclaration *ToolRegistry::find(const QString &name) const
{
    for (const ToolDeclaration &t : m_tools)
        if (t.name == name)
            return &t;
    return nullptr;
}

} // namespace airlock::tools
