// SPDX-License-Identifier: Apache-2.0
#include "mcp/AgentConfig.h"

#include "policy/Policy.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QUrl>

namespace airlock::mcp {

namespace {

// A word for a POSIX shell: as it is when nothing in it is special, else in single quotes.
QString shellWord(const QString &word)
{
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_@%+=:,./-]+$"));
    if (!word.isEmpty() && plain.match(word).hasMatch())
        return word;
    QString quoted = word;
    return QLatin1Char('\'') + quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''")) + QLatin1Char('\'');
}

// A TOML basic string.
QString tomlString(const QString &text)
{
    QString out = QStringLiteral("\"");
    for (const QChar c : text) {
        if (c == QLatin1Char('"') || c == QLatin1Char('\\'))
            out += QLatin1Char('\\') + QString(c);
        else if (c.unicode() < 0x20 || c.unicode() == 0x7f)
            out += QStringLiteral("\\u%1").arg(c.unicode(), 4, 16, QLatin1Char('0'));
        else
            out += c;
    }
    return out + QLatin1Char('"');
}

QString json(const QJsonObject &object)
{
    return QString::fromUtf8(QJsonDocument(object).toJson(QJsonDocument::Indented)).trimmed();
}

} // namespace

QStringList AgentSetup::arguments() const
{
    QStringList args{QStringLiteral("mcp")};
    if (!preset.isEmpty())
        args << QStringLiteral("--preset") << preset;
    for (const QString &h : allow)
        args << QStringLiteral("--allow") << h;
    if (!host.isEmpty())
        args << QStringLiteral("--host") << host;
    return args;
}

QList<AgentConfig> agentConfigs(const AgentSetup &setup)
{
    const QStringList args = setup.arguments();
    QStringList shell{shellWord(setup.program)};
    for (const QString &a : args)
        shell.append(shellWord(a));
    QStringList toml;
    for (const QString &a : args)
        toml.append(tomlString(a));
    const QJsonObject server{
        {QStringLiteral("command"), setup.program}, {QStringLiteral("args"), QJsonArray::fromStringList(args)}};
    QJsonObject vscodeServer = server;
    vscodeServer.insert(QStringLiteral("type"), QStringLiteral("stdio"));
    return {
        {AgentClient::ClaudeCode, QStringLiteral("Claude Code"),
            QStringLiteral("Run in a terminal (add --scope user for every project):"),
            QStringLiteral("claude mcp add airlock -- ") + shell.join(QLatin1Char(' '))},
        {AgentClient::Codex, QStringLiteral("Codex"), QStringLiteral("Add to ~/.codex/config.toml:"),
            QStringLiteral("[mcp_servers.airlock]\ncommand = %1\nargs = [%2]")
                .arg(tomlString(setup.program), toml.join(QStringLiteral(", ")))},
        {AgentClient::Cursor, QStringLiteral("Cursor"),
            QStringLiteral("Add to ~/.cursor/mcp.json (or .cursor/mcp.json in a project):"),
            json({{QStringLiteral("mcpServers"), QJsonObject{{QStringLiteral("airlock"), server}}}})},
        {AgentClient::VsCode, QStringLiteral("VS Code"), QStringLiteral("Add to .vscode/mcp.json in the workspace:"),
            json({{QStringLiteral("servers"), QJsonObject{{QStringLiteral("airlock"), vscodeServer}}}})},
        {AgentClient::Generic, QStringLiteral("Other MCP clients"),
            QStringLiteral("An mcpServers entry (Claude Desktop and most clients); the server speaks MCP over stdio: ")
                + shell.join(QLatin1Char(' ')),
            json({{QStringLiteral("mcpServers"), QJsonObject{{QStringLiteral("airlock"), server}}}})},
    };
}

Result<QStringList> parseAllowedHosts(const QString &text)
{
    static const QRegularExpression separators(QStringLiteral("[\\s,]+"));
    QStringList out;
    for (const QString &word : text.split(separators, Qt::SkipEmptyParts)) {
        QString host = word;
        if (word.contains(QLatin1String("://"))) {
            const QUrl url(word, QUrl::StrictMode);
            const int port = url.port(url.scheme() == QLatin1String("http") ? 80
                    : url.scheme() == QLatin1String("https")                ? 443
                                                                            : -1);
            if (!url.isValid() || url.host().isEmpty() || port < 0)
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("'%1' is not a URL with a host and a port (http:// and https:// have theirs)")
                        .arg(word.left(200)));
            host = (url.host().contains(QLatin1Char(':')) ? QLatin1Char('[') + url.host() + QLatin1Char(']')
                                                          : url.host())
                + QLatin1Char(':') + QString::number(port);
        }
        auto pattern = policy::normaliseHostPattern(host);
        if (!pattern)
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("'%1': %2").arg(word.left(200), pattern.error().message));
        if (!out.contains(*pattern))
            out.append(*pattern);
    }
    return out;
}

} // namespace airlock::mcp
