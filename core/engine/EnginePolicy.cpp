// SPDX-License-Identifier: Apache-2.0
// The engine's policy side: each sandbox's layers, the person's defaults, rules added by "always",
// asking a person, host tools and the policy checker. (Sandboxes' lifecycle and I/O: Engine.cpp.)
#include "engine/CodeBinding.h"
#include "engine/Engine.h"
#include "model/BoundedArgv.h"
#include "net/EgressProxy.h"
#include "policy/CommandRisk.h"
#include "sandbox/WorkspaceFiles.h"

#include "approval/ApprovalBroker.h"
#include "log/Log.h"
#include "model/DisplayText.h"
#include "model/EventKinds.h"
#include "sandbox/Sandbox.h"
#include "tools/ToolGateway.h"
#include "util/Paths.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QUrl>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.engine");
    return l;
}
} // namespace

Result<QJsonObject> Engine::userDefaults() const
{
    auto layer = policy::readUserLayer(userPolicyFile());
    if (!layer)
        return layer.error();
    auto effective
        = policy::resolve({{QStringLiteral("builtin"), policy::builtinDefaults()}, {QStringLiteral("user"), *layer}});
    if (!effective)
        return effective.error();
    auto builtin = policy::resolve({{QStringLiteral("builtin"), policy::builtinDefaults()}});
    if (!builtin)
        return builtin.error();
    return QJsonObject{{QStringLiteral("file"), userPolicyFile()}, {QStringLiteral("policy"), *layer},
        {QStringLiteral("effective"), effective->document}, {QStringLiteral("sources"), effective->sources},
        {QStringLiteral("below"),
            QJsonObject{{QStringLiteral("policy"), builtin->document}, {QStringLiteral("sources"), builtin->sources}}}};
}

Status Engine::setUserDefaults(const QJsonObject &layer, const QString &by)
{
    if (Status written = policy::writeUserLayer(userPolicyFile(), layer); !written)
        return written;
    logger()->info("user policy defaults changed by {}", display::escaped(by, 200).toStdString());
    forgetMadeAhead();
    return Ok{};
}

QString Engine::userPolicyFile() const
{
    return m_config.userPolicyFile.isEmpty() ? paths::configDir() + QStringLiteral("/policy.json")
                                             : m_config.userPolicyFile;
}

QJsonObject Engine::policy(const Sandbox &s, bool effective) const
{
    if (!effective)
        return QJsonObject{{QStringLiteral("sandbox"), s.id()}, {QStringLiteral("version"), s.policyVersion()},
            {QStringLiteral("preset"), s.policy().preset}, {QStringLiteral("policy"), s.policyOverrides()}};
    QJsonObject reply{{QStringLiteral("sandbox"), s.id()}, {QStringLiteral("version"), s.policyVersion()},
        {QStringLiteral("preset"), s.policy().preset}, {QStringLiteral("policy"), s.policy().document},
        {QStringLiteral("sources"), s.policy().sources}};
    // What the layers under the sandbox's own say (built-in, the person's defaults, the preset):
    // what an editor of that layer shows as inherited, scalars included. The defaults file may
    // have changed since the sandbox was made: then this is what a new sandbox would inherit.
    if (auto below = policy::resolveForSandbox({}, s.policy().preset, userPolicyFile()))
        reply.insert(QStringLiteral("below"),
            QJsonObject{{QStringLiteral("policy"), below->document}, {QStringLiteral("sources"), below->sources}});
    return reply;
}

Result<QJsonObject> Engine::setPolicy(Sandbox &s, const QJsonObject &overrides, const QString &by, const QString &run)
{
    auto user = policy::readUserLayerIfAny(userPolicyFile());
    if (!user)
        return user.error();
    auto effective = policy::resolveForSandbox(overrides, s.policy().preset, *user);
    if (!effective)
        return effective.error();
    if (Status fits = s.runtime().fitPolicy(*effective); !fits)
        return fits.error();
    // Only what the running sandbox can honour at once may change; the rest needs a new sandbox.
    const policy::EffectivePolicy &now = s.policy();
    if (effective->networkMode != now.networkMode)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("/network/mode: the network mode of a running sandbox cannot change "
                           "(it is %1); create a new sandbox")
                .arg(now.networkMode));
    const auto secretFiles = [](const policy::EffectivePolicy &p) {
        QStringList files;
        for (const policy::CredentialGrant &g : p.grants)
            if (!g.file.isEmpty())
                files.append(g.secret + QLatin1Char(' ') + g.file);
        return files;
    };
    if (secretFiles(*effective) != secretFiles(now))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("/credentials/grants: secrets granted as files are placed when a sandbox is "
                           "created; create a new sandbox to change them (grants as env apply at once)"));
    if (auto env = grantedSecrets(*effective, true); !env)
        return env.error();
    if (Status brokering = checkBrokered(*effective); !brokering)
        return brokering.error();
    if (effective->mounts != now.mounts || effective->limits != now.limits)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("/filesystem, /limits: mounts and limits are fixed when a sandbox "
                           "is created; create a new sandbox to change them"));
    const auto brokered = [](const policy::EffectivePolicy &p) {
        QStringList grants;
        for (const policy::CredentialGrant &g : p.grants)
            if (g.brokered())
                grants.append(g.secret + QLatin1Char(' ') + g.brokerHost + QLatin1Char(' ') + g.brokerHeader);
        return grants;
    };
    const bool brokerChanged = brokered(*effective) != brokered(now);
    s.setPolicy(*effective, overrides, by, run, *user);
    if (brokerChanged) // an open connection would go on with what was brokered before
        m_proxy->endBrokered(&s, QStringLiteral("the sandbox's brokered credentials changed"));
    saveRecord(s);
    return policy(s, true);
}

Result<QJsonObject> Engine::addCommandRule(
    const QString &ref, const QStringList &argv, const QStringList &env, const QString &by, const QString &run)
{
    auto found = find(ref);
    if (!found)
        return found.error();
    QJsonObject overrides = (*found)->policyOverrides();
    QJsonObject commands = overrides.value(QStringLiteral("commands")).toObject();
    QJsonArray rules = commands.value(QStringLiteral("rules")).toArray();
    // Exactly this argv, word for word: approving `rm -rf build` always must not allow `rm -rf build ~`.
    rules.append(QJsonObject{{QStringLiteral("decision"), QStringLiteral("allow")},
        {QStringLiteral("command"), QJsonArray::fromStringList(argv)}, {QStringLiteral("exact"), true}});
    commands.insert(QStringLiteral("rules"), rules);
    overrides.insert(QStringLiteral("commands"), commands);
    auto effective = policy::resolveForSandbox(overrides, (*found)->policy().preset, userPolicyFile());
    if (!effective)
        return effective.error();
    const policy::CommandVerdict v = effective->commands.evaluate(argv, env);
    if (v.decision != policy::Decision::Allow)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral(
                "an \"always\" rule for this command would not cover it (%1); approve it once, or add rules for "
                "its parts with 'airlockctl policy set'")
                .arg(v.reason));
    return setPolicy(**found, overrides, by, run);
}

Result<QJsonObject> Engine::addNetworkRule(
    const QString &ref, const QString &host, const QString &by, const QString &run)
{
    auto found = find(ref);
    if (!found)
        return found.error();
    QJsonObject overrides = (*found)->policyOverrides();
    QJsonObject network = overrides.value(QStringLiteral("network")).toObject();
    QJsonArray allow = network.contains(QStringLiteral("allow"))
        ? network.value(QStringLiteral("allow")).toArray()
        : QJsonArray::fromStringList((*found)->policy().networkAllow);
    if (!allow.contains(host))
        allow.append(host);
    network.insert(QStringLiteral("allow"), allow);
    overrides.insert(QStringLiteral("network"), network);
    return setPolicy(**found, overrides, by, run);
}

Result<QJsonObject> Engine::allowAlways(const ApprovalRequest &request, const QString &by)
{
    auto target = find(request.sandbox);
    if (!target || request.policyVersion != (*target)->policyVersion())
        return makeError(ErrorCode::Denied,
            QStringLiteral("the sandbox's policy changed while the request waited; approve once or ask again"));
    if (request.kind == QLatin1String("tool"))
        return addToolRule(request.sandbox, request.tool, by, request.run);
    if (request.kind == QLatin1String("network"))
        return addNetworkRule(request.sandbox,
            request.destination.section(QLatin1Char(' '), 0, 0).section(QLatin1Char(':'), 0, -2), by, request.run);
    // "Always" is about the command; it is given for the files the person saw. If one changed
    // since, no rule: approved once, the command is asked about again with what it is now.
    if (const QString changed = changedCode(request.files, bindCode(**target, request.argv, request.cwd));
        !changed.isEmpty())
        return makeError(ErrorCode::Denied,
            QStringLiteral("%1 changed after the question was asked: nothing decided. Approve once to be asked "
                           "again with what it says now, or deny")
                .arg(changed));
    QStringList envNames;
    for (const QString &kv : request.env)
        envNames.append(kv.section(QLatin1Char('='), 0, 0));
    return addCommandRule(request.sandbox, request.argv, envNames, by, request.run);
}

void Engine::recordDecision(const ApprovalRequest &request, const ApprovalDecision &d)
{
    auto sandbox = find(request.sandbox);
    if (!sandbox)
        return;
    QJsonObject decided{{QStringLiteral("id"), request.id}, {QStringLiteral("kind"), request.kind},
        {QStringLiteral("decision"), d.allowed ? QStringLiteral("allow") : QStringLiteral("deny")},
        {QStringLiteral("always"), d.always}, {QStringLiteral("expired"), d.expired}, {QStringLiteral("by"), d.by},
        {QStringLiteral("reason"), d.reason}, {QStringLiteral("requester"), request.requester},
        {QStringLiteral("requestedMs"), double(request.createdMs)}};
    if (request.exec)
        decided.insert(QStringLiteral("exec"), double(request.exec));
    // An agent's own command carries what it asked for: a refusal is a row of the history.
    if (request.kind == QLatin1String("command") && !request.exec) {
        const QJsonObject argv = boundedArgv(request.argv);
        for (auto k = argv.begin(); k != argv.end(); ++k)
            decided.insert(k.key(), k.value());
        QJsonArray envNames;
        for (const QString &kv : request.env)
            envNames.append(kv.section(QLatin1Char('='), 0, 0));
        decided.insert(QStringLiteral("cwd"), request.cwd);
        decided.insert(QStringLiteral("envNames"), envNames);
    }
    (*sandbox)->record(event::ApprovalDecided, decided, request.run);
}

void Engine::maskSecrets(ApprovalRequest &r) const
{
    auto found = find(r.sandbox);
    if (!found || (*found)->redactor().isEmpty())
        return;
    const Redactor &redactor = (*found)->redactor();
    Redactor::Hits hits;
    const QJsonObject masked = redactor.redactJson(
        {{QStringLiteral("argv"), QJsonArray::fromStringList(r.argv)},
            {QStringLiteral("env"), QJsonArray::fromStringList(r.env)}, {QStringLiteral("cwd"), r.cwd},
            {QStringLiteral("destination"), r.destination}, {QStringLiteral("reason"), r.reason},
            {QStringLiteral("arguments"), r.arguments}, {QStringLiteral("parts"), r.parts},
            {QStringLiteral("files"), r.files}, {QStringLiteral("chain"), QJsonArray::fromStringList(r.chain)}},
        &hits);
    if (!hits)
        return;
    const auto list = [&](const char *key) {
        QStringList out;
        for (const QJsonValue &v : masked.value(QLatin1String(key)).toArray())
            out.append(v.toString());
        return out;
    };
    r.argv = list("argv");
    r.env = list("env");
    r.cwd = masked.value(QStringLiteral("cwd")).toString();
    r.destination = masked.value(QStringLiteral("destination")).toString();
    r.reason = masked.value(QStringLiteral("reason")).toString();
    r.arguments = masked.value(QStringLiteral("arguments")).toObject();
    r.parts = masked.value(QStringLiteral("parts")).toArray();
    r.files = masked.value(QStringLiteral("files")).toArray();
    r.chain = list("chain");
}

void Engine::askPerson(Sandbox *sandbox, ApprovalRequest r, Answer answer)
{
    // A sandbox cannot bury a person in questions: a few at a time, the rest are denied.
    constexpr int kMaxPendingPerSandbox = 16;
    int waiting = 0;
    for (const ApprovalRequest &p : m_approvals.pending())
        waiting += p.sandbox == sandbox->id() ? 1 : 0;
    r.sandbox = sandbox->id();
    r.sandboxName = sandbox->name();
    if (r.run.isEmpty())
        r.run = sandbox->currentRun();
    r.policyVersion = sandbox->policyVersion();
    if (auto caps = capabilities(sandbox->id()))
        r.capabilities = *caps;
    if (waiting >= kMaxPendingPerSandbox)
        return answer(r,
            {false, false, QStringLiteral("airlockd"),
                QStringLiteral("%1 requests of this sandbox already wait for a person").arg(waiting)});
    describeForPerson(*sandbox, r);
    maskSecrets(r);
    const ApprovalRequest pending
        = m_approvals.request(r, [this, answer](const ApprovalRequest &req, const ApprovalDecision &d) {
              recordDecision(req, d);
              answer(req, d);
          });
    QJsonObject requested = pending.toJson();
    requested.remove(QStringLiteral("nonce")); // the event stream is not where decisions come from
    // Recorded as bounded as a program's record (the card has it all); the parts are the card's.
    requested.remove(QStringLiteral("parts"));
    const QJsonObject argv = boundedArgv(pending.argv);
    for (auto k = argv.begin(); k != argv.end(); ++k)
        requested.insert(k.key(), k.value());
    sandbox->record(event::ApprovalRequested, requested, r.run);
}

QJsonArray Engine::bindCode(const Sandbox &sandbox, const QStringList &argv, const QString &cwd) const
{
    return airlock::bindCode(WorkspaceFiles(sandbox.workspaceDir(), sandbox.hostUid()), argv, cwd);
}

void Engine::describeForPerson(const Sandbox &sandbox, ApprovalRequest &r) const
{
    if (r.kind == QLatin1String("command") && !r.argv.isEmpty()) {
        QStringList envNames;
        for (const QString &kv : std::as_const(r.env))
            envNames.append(kv.section(QLatin1Char('='), 0, 0));
        const policy::CommandRules &rules = sandbox.policy().commands;
        for (const QStringList &part : policy::commandParts(r.argv)) {
            const policy::CommandVerdict v = r.exec ? rules.evaluateNested(part) : rules.evaluate(part, envNames);
            r.parts.append(QJsonObject{{QStringLiteral("argv"), QJsonArray::fromStringList(part)},
                {QStringLiteral("decision"), policy::decisionName(v.decision)}, {QStringLiteral("rule"), v.rule},
                {QStringLiteral("layer"), v.layer}});
        }
        r.risk = policy::riskSummary(r.argv);
    } else if (r.kind == QLatin1String("network")) {
        // The proxy knows the sandbox, not the process: what was running in it when it connected.
        r.risk = QStringLiteral("opens a connection that no rule allows");
        const QStringList running = sandbox.runningCommands();
        r.chain = running.isEmpty()
            ? QStringList{QStringLiteral("nothing was running: a process left behind by an earlier command")}
            : running.mid(0, 5);
    } else if (r.kind == QLatin1String("tool")) {
        r.risk = QStringLiteral("runs the host tool %1 outside the sandbox, with its own rights").arg(r.tool);
    }
}

void Engine::askAboutProgram(Sandbox *sandbox, uint32_t execId, const ExecAttempt &a, const policy::CommandVerdict &v)
{
    const Sandbox::JudgedExecution judged = sandbox->judged(execId);
    const ExecCover &cover = judged.cover;
    ApprovalRequest r;
    r.requester = cover.requester.isEmpty() ? QStringLiteral("a program in the sandbox") : cover.requester;
    r.argv = a.asRun(); // what runs, path first: argv[0] is the process's to choose
    r.cwd = a.cwd;
    r.rule = v.rule;
    r.layer = v.layer;
    r.reason = v.reason;
    r.exec = execId;
    r.notification = a.id;
    r.chain = {QStringLiteral("%1 (pid %2, started by pid %3)").arg(a.path).arg(a.pid).arg(a.parentPid),
        QStringLiteral("under execution %1: %2")
            .arg(execId)
            .arg(display::commandLine(QJsonArray::fromStringList(judged.argv), 200)),
        cover.decidedBy};
    r.run = judged.run;
    QPointer<Sandbox> alive(sandbox);
    askPerson(sandbox, r, [alive, execId, a](const ApprovalRequest &, const ApprovalDecision &d) {
        if (alive)
            alive->answerExec(execId, a, d.allowed, d.by);
    });
}

Result<QJsonObject> Engine::addToolRule(const QString &ref, const QString &tool, const QString &by, const QString &run)
{
    auto found = find(ref);
    if (!found)
        return found.error();
    QJsonObject overrides = (*found)->policyOverrides();
    QJsonObject tools = overrides.value(QStringLiteral("tools")).toObject();
    // The effective entry (with its argument constraints), now allowed.
    QJsonObject entry = (*found)->policy().document.value(QStringLiteral("tools")).toObject().value(tool).toObject();
    entry.insert(QStringLiteral("decision"), QStringLiteral("allow"));
    tools.insert(tool, entry);
    overrides.insert(QStringLiteral("tools"), tools);
    return setPolicy(**found, overrides, by, run);
}

QJsonArray Engine::listTools(const Sandbox &sandbox) const
{
    return m_tools->list(sandbox);
}

void Engine::callTool(Sandbox &sandbox, tools::ToolCall call, std::function<void(Result<QJsonObject>)> done)
{
    if (call.run.isEmpty())
        call.run = sandbox.currentRun();
    m_tools->call(&sandbox, std::move(call), std::move(done));
}

Result<QJsonObject> Engine::capabilities(const QString &ref) const
{
    auto found = find(ref);
    if (!found)
        return found.error();
    const policy::EffectivePolicy &p = (*found)->policy();
    QJsonArray writable{QStringLiteral("/workspace"), QStringLiteral("/tmp"), QStringLiteral("/var/tmp")};
    for (const Mount &m : p.mounts)
        if (m.writable)
            writable.append(QString(m.sandboxPath + QStringLiteral(" (host ") + m.hostPath + QLatin1Char(')')));
    QJsonArray grants, tools;
    for (const policy::CredentialGrant &g : p.grants)
        grants.append(QString(
            g.secret + (g.env.isEmpty() ? QStringLiteral(" as file ") + g.file : QStringLiteral(" as $") + g.env)));
    for (auto it = p.tools.cbegin(); it != p.tools.cend(); ++it)
        tools.append(QString(it.key() + QLatin1Char(' ') + policy::decisionName(it->decision)));
    QJsonValue network = p.networkMode == QLatin1String("full") ? QJsonValue(QStringLiteral("FULL (host network)"))
        : p.networkMode == QLatin1String("none")                ? QJsonValue(QStringLiteral("none"))
                                                 : QJsonValue(QJsonArray::fromStringList(p.networkAllow));
    return QJsonObject{{QStringLiteral("network"), network}, {QStringLiteral("credentials"), grants},
        {QStringLiteral("writable"), writable}, {QStringLiteral("tools"), tools}};
}

namespace {
// The destination of a URL as the network rules see it: host (IPv6 in brackets) and port.
Result<QPair<QString, int>> destinationOf(const QString &text)
{
    const QUrl url(text, QUrl::StrictMode);
    static const QHash<QString, int> defaultPorts{{QStringLiteral("http"), 80}, {QStringLiteral("https"), 443},
        {QStringLiteral("ws"), 80}, {QStringLiteral("wss"), 443}, {QStringLiteral("ftp"), 21},
        {QStringLiteral("ssh"), 22}};
    const int port = url.port(defaultPorts.value(url.scheme().toLower(), -1));
    if (!url.isValid() || url.host().isEmpty() || port < 1)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("'%1' is not a URL with a host (and a port, or a scheme that has one)").arg(text.left(200)));
    QString host = url.host(QUrl::FullyEncoded);
    if (host.contains(QLatin1Char(':')))
        host = QLatin1Char('[') + host + QLatin1Char(']');
    return qMakePair(host, port);
}
} // namespace

namespace {
// What one effective policy says about a request (a URL, a tool call or an argv).
Result<QJsonObject> verdictUnder(const policy::EffectivePolicy &p, const QJsonObject &request)
{
    if (request.contains(QStringLiteral("url"))) {
        auto destination = destinationOf(request.value(QStringLiteral("url")).toString());
        if (!destination)
            return destination.error();
        QJsonObject verdict = p.network.evaluate(destination->first, quint16(destination->second)).toJson();
        verdict.insert(QStringLiteral("port"), destination->second);
        return verdict;
    }
    if (request.contains(QStringLiteral("tool")))
        return policy::evaluateTool(
            p, request.value(QStringLiteral("tool")).toString(), request.value(QStringLiteral("arguments")).toObject())
            .toJson();
    QStringList argv;
    for (const QJsonValue &v : request.value(QStringLiteral("argv")).toArray())
        argv.append(v.toString());
    return p.commands.evaluate(argv).toJson();
}
} // namespace

Result<QJsonObject> Engine::check(
    const Sandbox &sandbox, const QJsonObject &request, const std::optional<QJsonObject> &draft) const
{
    auto verdict = verdictUnder(sandbox.policy(), request);
    if (!verdict)
        return verdict.error();
    // A draft of the sandbox's own layer (an editor's pending change): the same request judged as
    // if it were applied, beside what is in force. Nothing is changed.
    if (draft) {
        // Mounts and limits are fixed while a sandbox runs: judged as they are (a draft's own
        // host paths are never looked at).
        QJsonObject layer = *draft;
        const QJsonObject own = sandbox.policyOverrides();
        for (const QString &fixed : {QStringLiteral("filesystem"), QStringLiteral("limits")}) {
            if (own.contains(fixed))
                layer.insert(fixed, own.value(fixed));
            else
                layer.remove(fixed);
        }
        auto drafted = policy::resolveForSandbox(layer, sandbox.policy().preset, userPolicyFile());
        if (!drafted)
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("params.policy (the draft): %1").arg(drafted.error().message));
        auto after = verdictUnder(*drafted, request);
        if (!after)
            return after.error();
        verdict->insert(QStringLiteral("draft"), *after);
    }
    for (auto it = request.begin(); it != request.end(); ++it)
        verdict->insert(it.key(), it.value());
    verdict->insert(QStringLiteral("policyVersion"), sandbox.policyVersion());
    return verdict;
}

} // namespace airlock
