// SPDX-License-Identifier: Apache-2.0
#include "policy/Policy.h"
#include "net/BrokeredHttp.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QUrl>

namespace airlock::policy {

namespace {
constexpr int kMaxListEntries = 1000;

Error invalid(const QString &pointer, const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, QStringLiteral("%1: %2").arg(pointer, what));
}

Status onlyKeys(const QJsonObject &o, const QString &pointer, const QStringList &known)
{
    for (auto it = o.begin(); it != o.end(); ++it)
        if (!known.contains(it.key()))
            return invalid(pointer + QLatin1Char('/') + it.key(),
                QStringLiteral("unknown field (expected one of: %1)").arg(known.join(QStringLiteral(", "))));
    return Ok{};
}

Result<QJsonObject> objectAt(const QJsonObject &o, const QString &key, const QString &pointer)
{
    const QJsonValue v = o.value(key);
    if (v.isUndefined())
        return QJsonObject{};
    if (!v.isObject())
        return invalid(pointer, QStringLiteral("expected an object"));
    return v.toObject();
}

Result<QJsonArray> arrayAt(const QJsonObject &o, const QString &key, const QString &pointer)
{
    const QJsonValue v = o.value(key);
    if (v.isUndefined())
        return QJsonArray{};
    if (!v.isArray())
        return invalid(pointer, QStringLiteral("expected an array"));
    if (v.toArray().size() > kMaxListEntries)
        return invalid(pointer, QStringLiteral("at most %1 entries").arg(kMaxListEntries));
    return v.toArray();
}

Status decisionAt(const QJsonObject &o, const QString &key, const QString &pointer, bool required = false)
{
    const QJsonValue v = o.value(key);
    if (v.isUndefined() && !required)
        return Ok{};
    if (!v.isString() || !decisionFromName(v.toString()))
        return invalid(pointer, QStringLiteral("expected \"allow\", \"ask\" or \"deny\""));
    return Ok{};
}

// A command rule's words: "git status" or ["git", "status"].
Result<QStringList> commandWords(const QJsonValue &v, const QString &pointer)
{
    QStringList words;
    if (v.isString())
        words = v.toString().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    else if (v.isArray())
        for (const QJsonValue &w : v.toArray()) {
            if (!w.isString() || w.toString().isEmpty())
                return invalid(pointer, QStringLiteral("expected non-empty strings"));
            words.append(w.toString());
        }
    else
        return invalid(pointer, QStringLiteral("expected a string of words or an array of words"));
    if (words.isEmpty() || words.size() > 64)
        return invalid(pointer, QStringLiteral("expected 1 to 64 words"));
    return words;
}

Status validateNetwork(const QJsonObject &n)
{
    if (Status s = onlyKeys(n, QStringLiteral("/network"),
            {QStringLiteral("mode"), QStringLiteral("allow"), QStringLiteral("deny"), QStringLiteral("unknown"),
                QStringLiteral("resolveWildcards")});
        !s)
        return s;
    if (n.contains(QStringLiteral("mode"))) {
        static const QStringList modes = {QStringLiteral("none"), QStringLiteral("allowlist"), QStringLiteral("full")};
        if (!modes.contains(n.value(QStringLiteral("mode")).toString()))
            return invalid(
                QStringLiteral("/network/mode"), QStringLiteral("expected \"none\", \"allowlist\" or \"full\""));
    }
    for (const char *list : {"allow", "deny", "resolveWildcards"}) {
        const QString pointer = QStringLiteral("/network/%1").arg(QLatin1String(list));
        const bool wildcards = qstrcmp(list, "resolveWildcards") == 0;
        auto entries = arrayAt(n, QLatin1String(list), pointer);
        if (!entries)
            return entries.error();
        for (qsizetype i = 0; i < entries->size(); ++i) {
            const QJsonValue e = entries->at(i);
            if (!e.isString())
                return invalid(QStringLiteral("%1/%2").arg(pointer).arg(i),
                    wildcards ? QStringLiteral("expected a wildcard pattern string (\"*.example.com\")")
                              : QStringLiteral("expected a host pattern string"));
            auto host = normaliseHostPattern(e.toString());
            if (!host)
                return invalid(QStringLiteral("%1/%2").arg(pointer).arg(i), host.error().message);
            if (wildcards && !host->startsWith(QLatin1String("*.")))
                return invalid(QStringLiteral("%1/%2").arg(pointer).arg(i),
                    QStringLiteral("expected a wildcard pattern (\"*.example.com\", optionally with :PORT): names a "
                                   "rule lists exactly are looked up anyway"));
        }
    }
    if (n.contains(QStringLiteral("unknown"))) {
        const QString u = n.value(QStringLiteral("unknown")).toString();
        if (u != QLatin1String("deny") && u != QLatin1String("ask"))
            return invalid(QStringLiteral("/network/unknown"),
                QStringLiteral("expected \"deny\" or \"ask\" (what to do with a destination no rule names)"));
    }
    return Ok{};
}

// A brokered grant's {"host": H, "header": X}: a name the proxy can pose as, and the request
// header the secret goes in (never one that frames or routes the request).
Status validateBroker(const QJsonObject &grant, const QString &pointer)
{
    if (!grant.contains(QStringLiteral("broker")))
        return Ok{};
    if (!grant.value(QStringLiteral("broker")).isObject())
        return invalid(
            pointer, QStringLiteral("expected {\"host\": \"api.example.com\", \"header\": \"authorization\"}"));
    const QJsonObject b = grant.value(QStringLiteral("broker")).toObject();
    if (Status s = onlyKeys(b, pointer, {QStringLiteral("host"), QStringLiteral("header")}); !s)
        return s;
    if (auto host = brokeredHostName(b.value(QStringLiteral("host")).toString()); !host)
        return invalid(pointer + QStringLiteral("/host"), host.error().message);
    const QByteArray header = b.value(QStringLiteral("header")).toString().toLatin1().toLower();
    static const QList<QByteArray> kFraming{"host", "content-length", "transfer-encoding", "connection", "te",
        "upgrade", "expect", "trailer", "keep-alive", "accept-encoding", "range", "if-range"};
    if (!net::http::isToken(header) || header.size() > 100 || kFraming.contains(header) || header.startsWith("proxy-"))
        return invalid(pointer + QStringLiteral("/header"),
            QStringLiteral("expected the name of the request header the secret goes in (\"authorization\", "
                           "\"x-api-key\"); not one that frames or routes the request"));
    return Ok{};
}

Status validateCredentials(const QJsonObject &c)
{
    if (Status s = onlyKeys(c, QStringLiteral("/credentials"), {QStringLiteral("grants")}); !s)
        return s;
    auto grants = arrayAt(c, QStringLiteral("grants"), QStringLiteral("/credentials/grants"));
    if (!grants)
        return grants.error();
    static const QRegularExpression secretName(QStringLiteral("^[A-Za-z0-9_.-]{1,100}$"));
    static const QRegularExpression envName(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]{0,127}$"));
    for (qsizetype i = 0; i < grants->size(); ++i) {
        const QString pointer = QStringLiteral("/credentials/grants/%1").arg(i);
        if (!grants->at(i).isObject())
            return invalid(pointer,
                QStringLiteral("expected {\"secret\": NAME, \"env\": VAR} or {\"secret\": NAME, \"file\": PATH}"));
        const QJsonObject g = grants->at(i).toObject();
        if (Status s = onlyKeys(g, pointer,
                {QStringLiteral("secret"), QStringLiteral("env"), QStringLiteral("file"), QStringLiteral("broker")});
            !s)
            return s;
        if (Status s = validateBroker(g, pointer + QStringLiteral("/broker")); !s)
            return s;
        if (!secretName.match(g.value(QStringLiteral("secret")).toString()).hasMatch())
            return invalid(
                pointer + QStringLiteral("/secret"), QStringLiteral("expected a secret name (letters, digits, _ . -)"));
        const bool env = g.contains(QStringLiteral("env")), file = g.contains(QStringLiteral("file"));
        if (env == file)
            return invalid(pointer, QStringLiteral("expected exactly one of \"env\" and \"file\""));
        if (env && !envName.match(g.value(QStringLiteral("env")).toString()).hasMatch())
            return invalid(pointer + QStringLiteral("/env"), QStringLiteral("expected an environment variable name"));
        const QString path = g.value(QStringLiteral("file")).toString();
        if (file
            && (!path.startsWith(QLatin1Char('/')) || path.split(QLatin1Char('/')).contains(QStringLiteral(".."))
                || path.size() > 1024))
            return invalid(pointer + QStringLiteral("/file"),
                QStringLiteral("expected an absolute path inside the sandbox, without '..'"));
    }
    return Ok{};
}

Status validateTools(const QJsonObject &t)
{
    static const QRegularExpression toolName(QStringLiteral("^[a-z][a-z0-9_.-]{0,99}$"));
    for (auto it = t.begin(); it != t.end(); ++it) {
        const QString pointer = QStringLiteral("/tools/%1").arg(it.key());
        if (!toolName.match(it.key()).hasMatch())
            return invalid(pointer, QStringLiteral("expected a tool name (lower-case letters, digits, _ . -)"));
        if (!it.value().isObject())
            return invalid(
                pointer, QStringLiteral("expected {\"decision\": \"allow|ask|deny\", \"constraints\": {ARG: GLOB}}"));
        const QJsonObject p = it.value().toObject();
        if (Status s = onlyKeys(p, pointer, {QStringLiteral("decision"), QStringLiteral("constraints")}); !s)
            return s;
        if (Status s = decisionAt(p, QStringLiteral("decision"), pointer + QStringLiteral("/decision"), true); !s)
            return s;
        auto constraints = objectAt(p, QStringLiteral("constraints"), pointer + QStringLiteral("/constraints"));
        if (!constraints)
            return constraints.error();
        for (auto c = constraints->begin(); c != constraints->end(); ++c)
            if (!c.value().isString())
                return invalid(
                    pointer + QStringLiteral("/constraints/") + c.key(), QStringLiteral("expected a glob string"));
    }
    return Ok{};
}

Status validateCommands(const QJsonObject &c)
{
    if (Status s = onlyKeys(c, QStringLiteral("/commands"),
            {QStringLiteral("default"), QStringLiteral("rules"), QStringLiteral("everywhere"),
                QStringLiteral("judgeExecs")});
        !s)
        return s;
    if (c.contains(QStringLiteral("judgeExecs")) && !c.value(QStringLiteral("judgeExecs")).isBool())
        return invalid(QStringLiteral("/commands/judgeExecs"),
            QStringLiteral("expected true (every program a command starts is judged) or false"));
    auto everywhere = arrayAt(c, QStringLiteral("everywhere"), QStringLiteral("/commands/everywhere"));
    if (!everywhere)
        return everywhere.error();
    for (qsizetype i = 0; i < everywhere->size(); ++i) {
        const QString pointer = QStringLiteral("/commands/everywhere/%1").arg(i);
        const QJsonObject r = everywhere->at(i).toObject();
        if (!everywhere->at(i).isObject())
            return invalid(pointer,
                QStringLiteral("expected {\"command\": \"words\"} (and \"exact\": true for exactly those words)"));
        if (Status s = onlyKeys(r, pointer, {QStringLiteral("command"), QStringLiteral("exact")}); !s)
            return s;
        if (r.contains(QStringLiteral("exact")) && !r.value(QStringLiteral("exact")).isBool())
            return invalid(pointer + QStringLiteral("/exact"), QStringLiteral("expected true or false"));
        if (auto words = commandWords(r.value(QStringLiteral("command")), pointer + QStringLiteral("/command")); !words)
            return words.error();
    }
    if (Status s = decisionAt(c, QStringLiteral("default"), QStringLiteral("/commands/default")); !s)
        return s;
    auto rules = arrayAt(c, QStringLiteral("rules"), QStringLiteral("/commands/rules"));
    if (!rules)
        return rules.error();
    for (qsizetype i = 0; i < rules->size(); ++i) {
        const QString pointer = QStringLiteral("/commands/rules/%1").arg(i);
        const QJsonObject r = rules->at(i).toObject();
        if (!rules->at(i).isObject())
            return invalid(
                pointer, QStringLiteral("expected {\"decision\": \"allow|ask|deny\", \"command\": \"words\"}"));
        if (Status s
            = onlyKeys(r, pointer, {QStringLiteral("decision"), QStringLiteral("command"), QStringLiteral("exact")});
            !s)
            return s;
        if (r.contains(QStringLiteral("exact")) && !r.value(QStringLiteral("exact")).isBool())
            return invalid(pointer + QStringLiteral("/exact"), QStringLiteral("expected true or false"));
        if (Status s = decisionAt(r, QStringLiteral("decision"), pointer + QStringLiteral("/decision"), true); !s)
            return s;
        if (auto words = commandWords(r.value(QStringLiteral("command")), pointer + QStringLiteral("/command")); !words)
            return words.error();
    }
    return Ok{};
}

// filesystem and limits use the sandbox spec's own formats (and its validation).
Status validateSpecSections(const QJsonObject &doc)
{
    QJsonObject spec;
    auto fs = objectAt(doc, QStringLiteral("filesystem"), QStringLiteral("/filesystem"));
    if (!fs)
        return fs.error();
    if (Status s = onlyKeys(*fs, QStringLiteral("/filesystem"), {QStringLiteral("mounts")}); !s)
        return s;
    if (fs->contains(QStringLiteral("mounts")))
        spec.insert(QStringLiteral("mounts"), fs->value(QStringLiteral("mounts")));
    if (doc.contains(QStringLiteral("limits")))
        spec.insert(QStringLiteral("limits"), doc.value(QStringLiteral("limits")));
    auto parsed = SandboxSpec::fromJson(spec);
    if (!parsed) {
        QString message = parsed.error().message;
        message.replace(QStringLiteral("/mounts"), QStringLiteral("/filesystem/mounts"));
        return makeError(ErrorCode::InvalidArgument, message);
    }
    return Ok{};
}
} // namespace

Result<std::pair<QString, QList<QHostAddress>>> parseResolveEntry(const QString &entry)
{
    const qsizetype eq = entry.indexOf(QLatin1Char('='));
    auto name = normaliseHostPattern(entry.left(eq));
    if (eq <= 0 || !name || name->startsWith(QLatin1String("*.")) || name->contains(QLatin1Char(':'))
        || NetworkRules::parseAddress(*name))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("expected NAME=ADDR[,ADDR], with a host name (no wildcard or port)"));
    QList<QHostAddress> addresses;
    for (const QString &a : entry.mid(eq + 1).split(QLatin1Char(','))) {
        const QHostAddress address(a.trimmed());
        if (address.isNull())
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("'%1' is not an IPv4 or IPv6 address").arg(a.left(100)));
        addresses.append(address);
    }
    return std::pair{*name, addresses};
}

Result<QString> normaliseHostPattern(const QString &pattern)
{
    QString host = pattern.trimmed();
    QString port;
    // [v6]:port, host:port, *.domain
    if (host.startsWith(QLatin1Char('['))) {
        const qsizetype close = host.indexOf(QLatin1Char(']'));
        if (close < 0)
            return makeError(ErrorCode::InvalidArgument, QStringLiteral("unbalanced [ in '%1'").arg(pattern.left(200)));
        if (close + 1 < host.size()) {
            if (host.at(close + 1) != QLatin1Char(':'))
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("expected :PORT after ] in '%1'").arg(pattern.left(200)));
            port = host.mid(close + 2);
        }
        host = host.mid(1, close - 1);
        if (QHostAddress(host).protocol() != QAbstractSocket::IPv6Protocol)
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("'%1' is not an IPv6 address").arg(host.left(200)));
        host = QLatin1Char('[') + QHostAddress(host).toString() + QLatin1Char(']');
    } else {
        const qsizetype colon = host.lastIndexOf(QLatin1Char(':'));
        if (colon >= 0) {
            port = host.mid(colon + 1);
            host = host.left(colon);
        }
        if (host.endsWith(QLatin1Char('.')))
            host.chop(1);
        const bool wildcard = host.startsWith(QLatin1String("*."));
        QString name = wildcard ? host.mid(2) : host;
        if (QHostAddress(name).protocol() == QAbstractSocket::IPv4Protocol && !wildcard) {
            host = QHostAddress(name).toString();
        } else {
            const QByteArray ace = QUrl::toAce(name);
            static const QRegularExpression label(QStringLiteral("^(?!-)[a-z0-9-]{1,63}(?<!-)$"));
            const QStringList labels = QString::fromLatin1(ace).toLower().split(QLatin1Char('.'));
            if (ace.isEmpty() || ace.size() > 253 || labels.size() < (wildcard ? 2 : 1))
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("'%1' is not a host name, *.domain, IPv4 address or [IPv6] address")
                        .arg(pattern.left(200)));
            for (const QString &l : labels)
                if (!label.match(l).hasMatch())
                    return makeError(ErrorCode::InvalidArgument,
                        QStringLiteral("'%1' is not a valid host name (label '%2')")
                            .arg(pattern.left(200), l.left(63)));
            host = (wildcard ? QStringLiteral("*.") : QString()) + labels.join(QLatin1Char('.'));
        }
    }
    if (!port.isEmpty() || pattern.trimmed().endsWith(QLatin1Char(':'))) {
        bool ok = false;
        const int p = port.toInt(&ok);
        if (!ok || p < 1 || p > 65535)
            return makeError(ErrorCode::InvalidArgument, QStringLiteral("port '%1' is not 1-65535").arg(port.left(20)));
        return QString(host + QLatin1Char(':') + QString::number(p));
    }
    return host;
}

Status validate(const QJsonObject &doc)
{
    if (Status s = onlyKeys(doc, QString(),
            {QStringLiteral("version"), QStringLiteral("network"), QStringLiteral("credentials"),
                QStringLiteral("tools"), QStringLiteral("commands"), QStringLiteral("filesystem"),
                QStringLiteral("limits"), QStringLiteral("description")});
        !s)
        return s;
    if (doc.contains(QStringLiteral("version")) && doc.value(QStringLiteral("version")).toInt(-1) != kPolicyVersion)
        return invalid(QStringLiteral("/version"),
            QStringLiteral("expected %1 (this Airlock's policy format)").arg(kPolicyVersion));
    if (doc.contains(QStringLiteral("description")) && !doc.value(QStringLiteral("description")).isString())
        return invalid(QStringLiteral("/description"), QStringLiteral("expected a string"));
    struct Section {
        const char *key;
        Status (*check)(const QJsonObject &);
    };
    for (const Section &section : {Section{"network", validateNetwork}, Section{"credentials", validateCredentials},
             Section{"tools", validateTools}, Section{"commands", validateCommands}}) {
        auto o = objectAt(doc, QLatin1String(section.key), QLatin1Char('/') + QLatin1String(section.key));
        if (!o)
            return o.error();
        if (Status s = section.check(*o); !s)
            return s;
    }
    return validateSpecSections(doc);
}

Result<QJsonObject> readUserLayer(const QString &userFile)
{
    QFile file(userFile);
    if (!file.exists())
        return QJsonObject{};
    if (!file.open(QIODevice::ReadOnly))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("cannot read the user policy %1: %2").arg(userFile, file.errorString()));
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(file.read(1024 * 1024), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("the user policy %1 is not a JSON object (%2 at offset %3); fix or move it")
                .arg(userFile, err.errorString())
                .arg(err.offset));
    return doc.object();
}

Status writeUserLayer(const QString &userFile, const QJsonObject &layer)
{
    if (Status valid = validate(layer); !valid)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("policy: %1").arg(valid.error().message));
    return fs::writePrivateFile(userFile, QJsonDocument(layer).toJson(QJsonDocument::Indented));
}

Result<EffectivePolicy> resolveForSandbox(
    const QJsonObject &overrides, const QString &presetName, const QString &userFile)
{
    auto user = readUserLayerIfAny(userFile);
    if (!user)
        return user.error();
    return resolveForSandbox(overrides, presetName, *user);
}

Result<std::optional<QJsonObject>> readUserLayerIfAny(const QString &file)
{
    if (!QFile::exists(file))
        return std::optional<QJsonObject>();
    auto read = readUserLayer(file);
    if (!read)
        return read.error();
    return std::optional<QJsonObject>(*read);
}

Result<EffectivePolicy> resolveForSandbox(
    const QJsonObject &overrides, const QString &presetName, const std::optional<QJsonObject> &userLayer)
{
    QList<Layer> layers{{QStringLiteral("builtin"), builtinDefaults()}};
    if (userLayer)
        layers.append({QStringLiteral("user"), *userLayer});
    const QString name = presetName.isEmpty() ? QStringLiteral("locked") : presetName;
    auto presetDoc = preset(name);
    if (!presetDoc)
        return presetDoc.error();
    layers.append({QStringLiteral("preset:") + name, *presetDoc});
    layers.append({QStringLiteral("sandbox"), overrides});
    return resolve(layers);
}

QJsonObject ToolVerdict::toJson() const
{
    return {{QStringLiteral("decision"), decisionName(decision)}, {QStringLiteral("reason"), reason}};
}

ToolVerdict evaluateTool(const EffectivePolicy &policy, const QString &tool, const QJsonObject &arguments)
{
    const auto it = policy.tools.constFind(tool);
    if (it == policy.tools.cend())
        return {
            Decision::Deny, QStringLiteral("the policy does not give this sandbox the tool '%1'").arg(tool.left(100))};
    const QString layer = policy.sources.value(QStringLiteral("/tools/") + tool).toString();
    for (auto c = it->constraints.cbegin(); c != it->constraints.cend(); ++c) {
        const QJsonValue v = arguments.value(c.key());
        // Only a string can be held to a pattern; anything else (absent, a number, an array of
        // addresses) does not match it. Nor does a path that climbs out with "..": a glob like
        // /srv/data/* must not let /srv/data/../../etc/passwd through.
        if (!v.isString() || v.toString().split(QLatin1Char('/')).contains(QStringLiteral(".."))
            || !globMatch(c.value(), v.toString()))
            return {Decision::Deny,
                QStringLiteral("%1: argument '%2' must match '%3' (%4)").arg(tool, c.key(), c.value(), layer)};
    }
    return {
        it->decision, QStringLiteral("%1 is '%2' for this sandbox (%3)").arg(tool, decisionName(it->decision), layer)};
}

QJsonObject withSpecFields(QJsonObject overrides, const QJsonObject &spec)
{
    if (spec.contains(QStringLiteral("network"))) {
        QJsonObject network = overrides.value(QStringLiteral("network")).toObject();
        network.insert(QStringLiteral("mode"), spec.value(QStringLiteral("network")));
        overrides.insert(QStringLiteral("network"), network);
    }
    if (!spec.value(QStringLiteral("mounts")).toArray().isEmpty()) {
        QJsonObject fs = overrides.value(QStringLiteral("filesystem")).toObject();
        QJsonArray mounts = fs.value(QStringLiteral("mounts")).toArray();
        for (const QJsonValue &m : spec.value(QStringLiteral("mounts")).toArray())
            mounts.append(m);
        fs.insert(QStringLiteral("mounts"), mounts);
        overrides.insert(QStringLiteral("filesystem"), fs);
    }
    const QJsonObject specLimits = spec.value(QStringLiteral("limits")).toObject();
    if (!specLimits.isEmpty()) {
        QJsonObject limits = overrides.value(QStringLiteral("limits")).toObject();
        for (auto it = specLimits.begin(); it != specLimits.end(); ++it)
            limits.insert(it.key(), it.value());
        overrides.insert(QStringLiteral("limits"), limits);
    }
    return overrides;
}

QJsonObject builtinDefaults()
{
    // Programs an approved command does not cover when it starts them (beside a shell reading its
    // input, which is built in): pushing, remote shells and copies, package publishing.
    QJsonArray everywhere;
    for (const char *command : {"git push", "git send-pack", "ssh", "scp", "sftp", "npm publish", "yarn publish",
             "pnpm publish", "cargo publish", "twine upload", "python3 -m twine upload", "gem push"})
        everywhere.append(QJsonObject{{QStringLiteral("command"), QLatin1String(command)}});
    return QJsonObject{{QStringLiteral("version"), kPolicyVersion},
        {QStringLiteral("network"),
            QJsonObject{
                {QStringLiteral("mode"), QStringLiteral("none")}, {QStringLiteral("unknown"), QStringLiteral("deny")}}},
        {QStringLiteral("commands"),
            QJsonObject{
                {QStringLiteral("default"), QStringLiteral("ask")}, {QStringLiteral("everywhere"), everywhere}}}};
}

QStringList presetNames()
{
    return {QStringLiteral("locked"), QStringLiteral("package-install"), QStringLiteral("open")};
}

Result<QJsonObject> preset(const QString &name)
{
    if (!presetNames().contains(name))
        return makeError(ErrorCode::NotFound,
            QStringLiteral("no preset named '%1' (presets: %2)")
                .arg(name.left(100), presetNames().join(QStringLiteral(", "))));
    QFile f(QStringLiteral(":/airlock/presets/%1.json").arg(name));
    if (!f.open(QIODevice::ReadOnly))
        return makeError(ErrorCode::Internal, QStringLiteral("preset %1 is missing from this build").arg(name));
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return makeError(ErrorCode::Internal, QStringLiteral("preset %1 is not valid JSON").arg(name));
    return doc.object();
}

Result<EffectivePolicy> resolve(const QList<Layer> &layers)
{
    EffectivePolicy e;
    QJsonObject network, credentials, tools, commands, limits;
    QJsonArray allow, deny, resolveWildcards, grants, rules, everywhere, mounts;
    QStringList mountLayers;
    QJsonObject &src = e.sources;
    for (const Layer &layer : layers) {
        if (Status s = validate(layer.document); !s)
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("%1 policy: %2").arg(layer.name, s.error().message));
        if (layer.name.startsWith(QLatin1String("preset:")))
            e.preset = layer.name.mid(7);
        const QJsonObject n = layer.document.value(QStringLiteral("network")).toObject();
        for (const char *key : {"mode", "unknown"})
            if (n.contains(QLatin1String(key))) {
                network.insert(QLatin1String(key), n.value(QLatin1String(key)));
                src.insert(QStringLiteral("/network/%1").arg(QLatin1String(key)), layer.name);
            }
        for (const auto &[key, list] :
            {std::pair{"allow", &allow}, std::pair{"deny", &deny}, std::pair{"resolveWildcards", &resolveWildcards}})
            for (const QJsonValue &v : n.value(QLatin1String(key)).toArray()) {
                const QString host = *normaliseHostPattern(v.toString());
                if (list->contains(host))
                    continue;
                src.insert(QStringLiteral("/network/%1/%2").arg(QLatin1String(key)).arg(list->size()), layer.name);
                list->append(host);
            }
        for (const QJsonValue &g :
            layer.document.value(QStringLiteral("credentials")).toObject().value(QStringLiteral("grants")).toArray()) {
            src.insert(QStringLiteral("/credentials/grants/%1").arg(grants.size()), layer.name);
            grants.append(g);
        }
        const QJsonObject t = layer.document.value(QStringLiteral("tools")).toObject();
        for (auto it = t.begin(); it != t.end(); ++it) {
            tools.insert(it.key(), it.value());
            src.insert(QStringLiteral("/tools/%1").arg(it.key()), layer.name);
        }
        const QJsonObject c = layer.document.value(QStringLiteral("commands")).toObject();
        if (c.contains(QStringLiteral("default"))) {
            commands.insert(QStringLiteral("default"), c.value(QStringLiteral("default")));
            src.insert(QStringLiteral("/commands/default"), layer.name);
        }
        for (const QJsonValue &r : c.value(QStringLiteral("rules")).toArray()) {
            src.insert(QStringLiteral("/commands/rules/%1").arg(rules.size()), layer.name);
            rules.append(r);
        }
        for (const QJsonValue &r : c.value(QStringLiteral("everywhere")).toArray()) {
            if (everywhere.contains(r))
                continue;
            src.insert(QStringLiteral("/commands/everywhere/%1").arg(everywhere.size()), layer.name);
            everywhere.append(r);
        }
        if (c.contains(QStringLiteral("judgeExecs"))) {
            commands.insert(QStringLiteral("judgeExecs"), c.value(QStringLiteral("judgeExecs")));
            src.insert(QStringLiteral("/commands/judgeExecs"), layer.name);
        }
        for (const QJsonValue &m :
            layer.document.value(QStringLiteral("filesystem")).toObject().value(QStringLiteral("mounts")).toArray()) {
            // A later layer's mount at the same target replaces the earlier one.
            for (qsizetype i = 0; i < mounts.size(); ++i)
                if (mounts.at(i).toObject().value(QStringLiteral("path"))
                    == m.toObject().value(QStringLiteral("path"))) {
                    mounts.removeAt(i);
                    mountLayers.removeAt(i--);
                }
            mounts.append(m);
            mountLayers.append(layer.name);
        }
        const QJsonObject l = layer.document.value(QStringLiteral("limits")).toObject();
        for (auto it = l.begin(); it != l.end(); ++it) {
            limits.insert(it.key(), it.value());
            src.insert(QStringLiteral("/limits/%1").arg(it.key()), layer.name);
        }
    }
    for (qsizetype i = 0; i < mounts.size(); ++i)
        src.insert(QStringLiteral("/filesystem/mounts/%1").arg(i), mountLayers.at(i));
    network.insert(QStringLiteral("allow"), allow);
    network.insert(QStringLiteral("deny"), deny);
    if (!resolveWildcards.isEmpty())
        network.insert(QStringLiteral("resolveWildcards"), resolveWildcards);
    commands.insert(QStringLiteral("rules"), rules);
    commands.insert(QStringLiteral("everywhere"), everywhere);
    e.document = QJsonObject{{QStringLiteral("version"), kPolicyVersion}, {QStringLiteral("network"), network},
        {QStringLiteral("credentials"), QJsonObject{{QStringLiteral("grants"), grants}}},
        {QStringLiteral("tools"), tools}, {QStringLiteral("commands"), commands},
        {QStringLiteral("filesystem"), QJsonObject{{QStringLiteral("mounts"), mounts}}},
        {QStringLiteral("limits"), limits}};
    // The typed view.
    e.networkMode = network.value(QStringLiteral("mode")).toString(QStringLiteral("none"));
    for (const QJsonValue &v : allow)
        e.networkAllow.append(v.toString());
    for (const QJsonValue &v : deny)
        e.networkDeny.append(v.toString());
    for (const QJsonValue &v : resolveWildcards)
        e.networkResolveWildcards.append(v.toString());
    e.unknownDestination
        = network.value(QStringLiteral("unknown")).toString() == QLatin1String("ask") ? Decision::Ask : Decision::Deny;
    for (const QJsonValue &v : grants) {
        const QJsonObject g = v.toObject();
        const QJsonObject broker = g.value(QStringLiteral("broker")).toObject();
        const auto brokerHost = brokeredHostName(broker.value(QStringLiteral("host")).toString());
        e.grants.append({g.value(QStringLiteral("secret")).toString(), g.value(QStringLiteral("env")).toString(),
            g.value(QStringLiteral("file")).toString(), broker.isEmpty() || !brokerHost ? QString() : *brokerHost,
            broker.value(QStringLiteral("header")).toString().toLower()});
    }
    for (auto it = tools.begin(); it != tools.end(); ++it) {
        ToolPermission p;
        p.decision = *decisionFromName(it.value().toObject().value(QStringLiteral("decision")).toString());
        const QJsonObject c = it.value().toObject().value(QStringLiteral("constraints")).toObject();
        for (auto k = c.begin(); k != c.end(); ++k)
            p.constraints.insert(k.key(), k.value().toString());
        e.tools.insert(it.key(), p);
    }
    QList<CommandRule> commandRules;
    for (qsizetype i = 0; i < rules.size(); ++i) {
        const QJsonObject r = rules.at(i).toObject();
        commandRules.append({*decisionFromName(r.value(QStringLiteral("decision")).toString()),
            *commandWords(r.value(QStringLiteral("command")), {}),
            src.value(QStringLiteral("/commands/rules/%1").arg(i)).toString(),
            r.value(QStringLiteral("exact")).toBool()});
    }
    e.network
        = NetworkRules(e.networkMode, e.networkAllow, e.networkDeny, e.unknownDestination, e.networkResolveWildcards);
    QList<CommandRule> patterns;
    for (qsizetype i = 0; i < everywhere.size(); ++i) {
        const QJsonObject r = everywhere.at(i).toObject();
        patterns.append({Decision::Ask, *commandWords(r.value(QStringLiteral("command")), {}),
            src.value(QStringLiteral("/commands/everywhere/%1").arg(i)).toString(),
            r.value(QStringLiteral("exact")).toBool()});
    }
    e.commands = CommandRules(commandRules,
        decisionFromName(commands.value(QStringLiteral("default")).toString()).value_or(Decision::Ask), patterns);
    e.judgeExecs = commands.value(QStringLiteral("judgeExecs")).toBool(true);
    auto spec = SandboxSpec::fromJson({{QStringLiteral("mounts"), mounts}, {QStringLiteral("limits"), limits}});
    if (!spec)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("effective policy: %1").arg(spec.error().message));
    e.mounts = spec->mounts;
    e.limits = spec->limits;
    return e;
}

Result<QString> brokeredHostName(const QString &host)
{
    const auto refused = [&](const QString &why) {
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("'%1' is not a host a credential can be brokered for: %2").arg(host.left(200), why));
    };
    if (NetworkRules::parseAddress(host))
        return refused(QStringLiteral("an address, not a name (name the host its certificate is for)"));
    auto name = normaliseHostPattern(host);
    if (!name)
        return refused(name.error().message);
    if (name->startsWith(QLatin1String("*.")))
        return refused(QStringLiteral("a wildcard (name each host, e.g. api.example.com)"));
    if (name->contains(QLatin1Char(':')))
        return refused(QStringLiteral("a port (the proxy brokers on 443 only; name the host alone)"));
    if (!name->contains(QLatin1Char('.')))
        return refused(QStringLiteral("a name of one label (name the host in full, e.g. api.example.com)"));
    // An address in another spelling ("127.1.", "0x7f.1") is one once normalised; a name whose last
    // label is a number is taken for an address by URL parsers.
    const QString last = name->section(QLatin1Char('.'), -1);
    bool number = false;
    last.toULongLong(&number, 10);
    if (NetworkRules::parseAddress(*name) || number || last.startsWith(QLatin1String("0x")))
        return refused(QStringLiteral("an address, not a name (name the host its certificate is for)"));
    return name;
}

} // namespace airlock::policy
