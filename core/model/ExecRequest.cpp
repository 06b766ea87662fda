// SPDX-License-Identifier: Apache-2.0
#include "model/ExecRequest.h"

#include "model/SandboxHome.h"

#include <QJsonArray>
#include <QRegularExpression>

namespace airlock {

namespace {
constexpr qsizetype kMaxArgs = 4096;
constexpr qsizetype kMaxTotalBytes = 256 * 1024;
constexpr uint64_t kMaxTimeoutMs = 7ull * 24 * 3600 * 1000;

Error invalid(const QString &pointer, const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, QStringLiteral("%1: %2").arg(pointer, what));
}

bool validEnvName(const QString &name)
{
    static const QRegularExpression re(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]{0,255}$"));
    return re.match(name).hasMatch();
}
} // namespace

Result<QPair<QString, QString>> parseEnvAssignment(const QString &text)
{
    const qsizetype eq = text.indexOf(QLatin1Char('='));
    const QString name = text.left(eq);
    if (eq <= 0 || !validEnvName(name))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("invalid environment assignment '%1': expected NAME=VALUE with NAME "
                           "made of letters, digits and _")
                .arg(text));
    const QString value = text.mid(eq + 1);
    if (value.contains(QChar(0)))
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("environment value of %1 contains NUL").arg(name));
    return qMakePair(name, value);
}

QJsonObject ExecRequest::toJson() const
{
    QJsonObject envObject;
    for (const auto &[k, v] : env)
        envObject.insert(k, v);
    QJsonObject o{{QStringLiteral("argv"), QJsonArray::fromStringList(argv)}, {QStringLiteral("cwd"), cwd},
        {QStringLiteral("env"), envObject}, {QStringLiteral("tty"), tty}, {QStringLiteral("stdin"), stdinOpen}};
    if (rows || cols) {
        o.insert(QStringLiteral("rows"), rows);
        o.insert(QStringLiteral("cols"), cols);
    }
    if (timeoutMs)
        o.insert(QStringLiteral("timeoutMs"), double(*timeoutMs));
    if (leaseMs)
        o.insert(QStringLiteral("leaseMs"), double(*leaseMs));
    if (!forAgent.isEmpty())
        o.insert(QStringLiteral("forAgent"), forAgent);
    return o;
}

Result<ExecRequest> ExecRequest::fromJson(const QJsonObject &json)
{
    ExecRequest r;
    const QJsonValue argv = json.value(QStringLiteral("argv"));
    if (!argv.isArray() || argv.toArray().isEmpty())
        return invalid(QStringLiteral("/argv"), QStringLiteral("expected a non-empty array of strings"));
    const QJsonArray argArray = argv.toArray();
    if (argArray.size() > kMaxArgs)
        return invalid(QStringLiteral("/argv"), QStringLiteral("at most %1 arguments").arg(kMaxArgs));
    qsizetype total = 0;
    for (qsizetype i = 0; i < argArray.size(); ++i) {
        if (!argArray.at(i).isString())
            return invalid(QStringLiteral("/argv/%1").arg(i), QStringLiteral("expected a string"));
        const QString a = argArray.at(i).toString();
        if (a.contains(QChar(0)))
            return invalid(QStringLiteral("/argv/%1").arg(i), QStringLiteral("contains a NUL character"));
        total += a.toUtf8().size() + 1;
        r.argv.append(a);
    }
    if (r.argv.first().isEmpty())
        return invalid(QStringLiteral("/argv/0"), QStringLiteral("the program name is empty"));
    if (json.contains(QStringLiteral("cwd"))) {
        r.cwd = json.value(QStringLiteral("cwd")).toString();
        if (!r.cwd.startsWith(QLatin1Char('/')) || r.cwd.contains(QChar(0)) || r.cwd.size() > 4096)
            return invalid(QStringLiteral("/cwd"), QStringLiteral("expected an absolute path inside the sandbox"));
    }
    const QJsonValue env = json.value(QStringLiteral("env"));
    if (!env.isUndefined() && !env.isObject())
        return invalid(QStringLiteral("/env"), QStringLiteral("expected an object of strings"));
    const QJsonObject envObject = env.toObject();
    if (envObject.size() > 1024)
        return invalid(QStringLiteral("/env"), QStringLiteral("at most 1024 variables"));
    for (auto it = envObject.begin(); it != envObject.end(); ++it) {
        const QString ptr = QStringLiteral("/env/%1").arg(it.key());
        if (!validEnvName(it.key()))
            return invalid(ptr, QStringLiteral("invalid variable name (letters, digits and _)"));
        if (!it.value().isString() || it.value().toString().contains(QChar(0)))
            return invalid(ptr, QStringLiteral("expected a string without NUL"));
        total += it.key().size() + it.value().toString().toUtf8().size() + 2;
        r.env.append({it.key(), it.value().toString()});
    }
    if (total > kMaxTotalBytes)
        return invalid(
            QStringLiteral("/argv"), QStringLiteral("arguments and environment exceed %1 bytes").arg(kMaxTotalBytes));
    r.tty = json.value(QStringLiteral("tty")).toBool(false);
    r.stdinOpen = json.value(QStringLiteral("stdin")).toBool(false);
    for (const char *key : {"rows", "cols"}) {
        const QJsonValue v = json.value(QLatin1String(key));
        if (v.isUndefined())
            continue;
        const int n = v.toInt(-1);
        if (n < 0 || n > 10000)
            return invalid(QStringLiteral("/%1").arg(QLatin1String(key)), QStringLiteral("expected 0..10000"));
        (key[0] == 'r' ? r.rows : r.cols) = static_cast<uint16_t>(n);
    }
    if (json.contains(QStringLiteral("leaseMs"))) {
        const double t = json.value(QStringLiteral("leaseMs")).toDouble(-1);
        if (t < 1 || t > 86'400'000.0 || t != double(uint64_t(t)))
            return invalid(QStringLiteral("/leaseMs"), QStringLiteral("expected 1 ms .. 24 h"));
        r.leaseMs = static_cast<uint64_t>(t);
    }
    if (json.contains(QStringLiteral("forAgent"))) {
        static const QRegularExpression kAgent(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"));
        r.forAgent = json.value(QStringLiteral("forAgent")).toString();
        if (!kAgent.match(r.forAgent).hasMatch())
            return invalid(QStringLiteral("/forAgent"),
                QStringLiteral("expected an agent's name: 1 to 64 letters, digits, '.', '_' or '-'"));
    }
    if (json.contains(QStringLiteral("timeoutMs"))) {
        const double t = json.value(QStringLiteral("timeoutMs")).toDouble(-1);
        if (t < 1 || t > double(kMaxTimeoutMs))
            return invalid(QStringLiteral("/timeoutMs"), QStringLiteral("expected 1 ms .. 7 days"));
        r.timeoutMs = static_cast<uint64_t>(t);
    }
    return r;
}

QStringList ExecRequest::effectiveEnvironment() const
{
    QList<QPair<QString, QString>> merged = {
        {QStringLiteral("PATH"),
            QStringLiteral("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/.airlock/bin")},
        {QStringLiteral("HOME"), QString::fromLatin1(kSandboxHome)},
        {QStringLiteral("LANG"), QStringLiteral("C.UTF-8")},
        // Every view of the output renders colours (and shows every other sequence inert), so
        // programs are told they may use them, with or without a terminal; NO_COLOR in the
        // request's environment asks the programs that honour it not to.
        {QStringLiteral("TERM"), QStringLiteral("xterm-256color")},
    };
    for (const auto &kv : env) {
        auto it = std::find_if(merged.begin(), merged.end(), [&](const auto &m) { return m.first == kv.first; });
        if (it != merged.end())
            it->second = kv.second;
        else
            merged.append(kv);
    }
    QStringList out;
    for (const auto &[k, v] : merged)
        out.append(k + QLatin1Char('=') + v);
    return out;
}

} // namespace airlock
