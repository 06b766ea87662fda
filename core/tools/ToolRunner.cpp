// SPDX-License-Identifier: Apache-2.0
#include "tools/ToolRunner.h"

#include "secrets/SecretStore.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QProcess>
#include <QRegularExpression>
#include <QTimer>
#include <QUrl>

namespace airlock::tools {

namespace {
QString scalarText(const QJsonValue &v)
{
    if (v.isString())
        return v.toString();
    if (v.isBool())
        return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (v.isDouble())
        return QString::number(v.toDouble(), 'g', 17);
    return QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact)).mid(1).chopped(1);
}

// Body templates: a string that is exactly "{arg}" becomes that argument's value (left out when
// absent), "{*}" all of them; everything else is kept as declared.
QJsonValue fillBody(const QJsonValue &t, const QJsonObject &arguments, bool *omit)
{
    static const QRegularExpression whole(QStringLiteral("^\\{([A-Za-z_][A-Za-z0-9_]*|\\*)\\}$"));
    if (t.isString()) {
        const auto m = whole.match(t.toString());
        if (!m.hasMatch())
            return t;
        if (m.captured(1) == QLatin1String("*"))
            return arguments;
        if (!arguments.contains(m.captured(1)))
            *omit = true;
        return arguments.value(m.captured(1));
    }
    if (t.isArray()) {
        QJsonArray out;
        for (const QJsonValue &v : t.toArray()) {
            bool gone = false;
            const QJsonValue filled = fillBody(v, arguments, &gone);
            if (!gone)
                out.append(filled);
        }
        return out;
    }
    if (t.isObject()) {
        QJsonObject out;
        const QJsonObject o = t.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            bool gone = false;
            const QJsonValue filled = fillBody(it.value(), arguments, &gone);
            if (!gone)
                out.insert(it.key(), filled);
        }
        return out;
    }
    return t;
}
} // namespace

ToolRunner::ToolRunner(SecretStore *secrets, QObject *parent)
    : QObject(parent)
    , m_secrets(secrets)
{
}

Result<QString> ToolRunner::fillSecrets(QString text, QList<std::pair<QString, QByteArray>> &used) const
{
    static const QRegularExpression re(QStringLiteral("\\{secret:([A-Za-z0-9_.-]{1,100})\\}"));
    for (auto m = re.match(text); m.hasMatch(); m = re.match(text)) {
        if (!m_secrets)
            return makeError(ErrorCode::BoundaryUnavailable,
                QStringLiteral("the tool needs secret '%1' but there is no secret store").arg(m.captured(1)));
        auto value = m_secrets->get(m.captured(1));
        if (!value)
            return makeError(
                value.error().code, QStringLiteral("the tool's own credential: %1").arg(value.error().message));
        used.append({m.captured(1), *value});
        text.replace(m.capturedStart(), m.capturedLength(), QString::fromUtf8(*value));
    }
    return text;
}

void ToolRunner::run(const ToolDeclaration &tool, const QJsonObject &arguments, Done done)
{
    if (tool.kind == ToolDeclaration::Kind::Command)
        runCommand(tool, arguments, std::move(done));
    else
        runHttp(tool, arguments, std::move(done));
}

void ToolRunner::runCommand(const ToolDeclaration &tool, const QJsonObject &arguments, Done done)
{
    Outcome outcome;
    // Whole-element placeholders, as the declaration check accepted them (a required argument's
    // name in braces): one argument, one argv element. Anything else is literal.
    static const QRegularExpression placeholder(QStringLiteral("^\\{([A-Za-z_][A-Za-z0-9_]*)\\}$"));
    QStringList argv;
    for (qsizetype i = 0; i < tool.argv.size(); ++i) {
        const auto m = placeholder.match(tool.argv[i]);
        argv.append(i > 0 && m.hasMatch() ? scalarText(arguments.value(m.captured(1))) : tool.argv[i]);
    }
    QProcessEnvironment env;
    env.insert(QStringLiteral("PATH"), QStringLiteral("/usr/local/bin:/usr/bin:/bin"));
    env.insert(QStringLiteral("LANG"), QStringLiteral("C.UTF-8"));
    env.insert(QStringLiteral("HOME"),
        QProcessEnvironment::systemEnvironment().value(QStringLiteral("HOME"), QStringLiteral("/")));
    for (auto it = tool.env.cbegin(); it != tool.env.cend(); ++it) {
        auto value = fillSecrets(it.value(), outcome.secretsUsed);
        if (!value) {
            outcome.result = value.error();
            return done(std::move(outcome));
        }
        env.insert(it.key(), *value);
    }
    auto *p = new QProcess(this);
    p->setProcessEnvironment(env);
    p->setWorkingDirectory(tool.cwd);
    p->setProgram(argv.first());
    p->setArguments(argv.mid(1));
    auto *timer = new QTimer(p);
    timer->setSingleShot(true);
    auto timedOut = std::make_shared<bool>(false);
    connect(timer, &QTimer::timeout, p, [p, timedOut] {
        *timedOut = true;
        p->kill();
    });
    auto out = std::make_shared<QByteArray>(), err = std::make_shared<QByteArray>();
    auto truncated = std::make_shared<bool>(false);
    const auto collect = [p, truncated](QProcess::ProcessChannel channel, QByteArray &into) {
        p->setReadChannel(channel);
        const QByteArray chunk = p->readAll();
        const qsizetype room = kMaxOutput - into.size();
        into.append(chunk.left(std::max<qsizetype>(room, 0)));
        if (chunk.size() > room)
            *truncated = true;
    };
    connect(p, &QProcess::readyReadStandardOutput, p, [=] { collect(QProcess::StandardOutput, *out); });
    connect(p, &QProcess::readyReadStandardError, p, [=] { collect(QProcess::StandardError, *err); });
    auto finished = std::make_shared<bool>(false);
    const auto finish = [=](Result<QJsonObject> result) {
        if (std::exchange(*finished, true))
            return;
        Outcome o = outcome;
        o.result = std::move(result);
        p->deleteLater();
        done(std::move(o));
    };
    connect(p, &QProcess::errorOccurred, p, [=](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart)
            finish(makeError(ErrorCode::IoError,
                QStringLiteral("the tool's program %1 could not start: %2").arg(argv.first(), p->errorString())));
    });
    connect(p, &QProcess::finished, p, [=](int code, QProcess::ExitStatus status) {
        collect(QProcess::StandardOutput, *out);
        collect(QProcess::StandardError, *err);
        if (*timedOut)
            return finish(makeError(
                ErrorCode::IoError, QStringLiteral("the tool did not finish within %1 ms").arg(tool.timeoutMs)));
        finish(
            QJsonObject{{QStringLiteral("exitCode"), status == QProcess::NormalExit ? QJsonValue(code) : QJsonValue()},
                {QStringLiteral("stdout"), QString::fromUtf8(*out)},
                {QStringLiteral("stderr"), QString::fromUtf8(*err)}, {QStringLiteral("truncated"), *truncated}});
    });
    timer->start(tool.timeoutMs);
    p->start(QIODevice::ReadWrite);
    if (tool.stdinArguments)
        p->write(QJsonDocument(arguments).toJson(QJsonDocument::Compact));
    p->closeWriteChannel();
}

void ToolRunner::runHttp(const ToolDeclaration &tool, const QJsonObject &arguments, Done done)
{
    Outcome outcome;
    static const QRegularExpression placeholder(QStringLiteral("\\{([A-Za-z_][A-Za-z0-9_]*)\\}"));
    QString url = tool.url;
    for (auto m = placeholder.match(url); m.hasMatch(); m = placeholder.match(url, m.capturedStart() + 1)) {
        const QString value = scalarText(arguments.value(m.captured(1)));
        // "." and ".." are path steps, not data: they would move the request to another endpoint.
        if (value == QLatin1String(".") || value == QLatin1String("..")) {
            outcome.result = makeError(ErrorCode::InvalidArgument,
                QStringLiteral("%1: argument '%2' cannot be \"%3\" (it would change the URL's path)")
                    .arg(tool.name, m.captured(1), value));
            return done(std::move(outcome));
        }
        url.replace(m.capturedStart(), m.capturedLength(), QString::fromLatin1(QUrl::toPercentEncoding(value)));
    }
    // And whatever the arguments, the request goes where the declaration points.
    const QString fixedPrefix
        = tool.url.left(tool.url.indexOf(QLatin1Char('{')) < 0 ? tool.url.size() : tool.url.indexOf(QLatin1Char('{')));
    const QUrl target(url);
    if (!target.isValid()
        || !target.toString(QUrl::FullyEncoded).startsWith(QUrl(fixedPrefix).toString(QUrl::FullyEncoded))
        || target.host() != QUrl(tool.url.section(QLatin1Char('{'), 0, 0)).host()) {
        outcome.result = makeError(ErrorCode::InvalidArgument,
            QStringLiteral("%1: the arguments would send the request elsewhere than declared").arg(tool.name));
        return done(std::move(outcome));
    }
    QNetworkRequest request{target};
    request.setTransferTimeout(tool.timeoutMs);
    request.setAttribute(
        QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy); // where it goes is declared
    for (auto it = tool.headers.cbegin(); it != tool.headers.cend(); ++it) {
        auto value = fillSecrets(it.value(), outcome.secretsUsed);
        if (!value) {
            outcome.result = value.error();
            return done(std::move(outcome));
        }
        request.setRawHeader(it.key().toLatin1(), value->toUtf8());
    }
    QByteArray body;
    if (!tool.body.isUndefined() && !tool.body.isNull()) {
        bool omit = false;
        const QJsonValue filled = fillBody(tool.body, arguments, &omit);
        body = QJsonDocument(QJsonArray{filled}).toJson(QJsonDocument::Compact).mid(1).chopped(1);
        if (!request.hasRawHeader("Content-Type"))
            request.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    }
    if (!m_network)
        m_network = new QNetworkAccessManager(this);
    QNetworkReply *reply = m_network->sendCustomRequest(request, tool.method.toLatin1(), body);
    connect(reply, &QNetworkReply::finished, this, [reply, outcome, done]() mutable {
        reply->deleteLater();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        if (status == 0) {
            outcome.result = makeError(
                ErrorCode::IoError, QStringLiteral("the tool's request failed: %1").arg(reply->errorString()));
            return done(std::move(outcome));
        }
        const QByteArray raw = reply->read(kMaxOutput + 1);
        QJsonParseError err{};
        const QJsonDocument doc = QJsonDocument::fromJson(raw.left(kMaxOutput), &err);
        outcome.result = QJsonObject{{QStringLiteral("status"), status},
            {QStringLiteral("body"),
                err.error == QJsonParseError::NoError
                    ? (doc.isObject() ? QJsonValue(doc.object()) : QJsonValue(doc.array()))
                    : QJsonValue(QString::fromUtf8(raw.left(kMaxOutput)))},
            {QStringLiteral("truncated"), raw.size() > kMaxOutput}};
        done(std::move(outcome));
    });
}

} // namespace airlock::tools
