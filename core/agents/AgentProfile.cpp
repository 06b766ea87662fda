// SPDX-License-Identifier: Apache-2.0
#include "agents/AgentProfile.h"

#include "model/DisplayText.h"
#include "policy/Policy.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QStandardPaths>

#include <pwd.h>
#include <unistd.h>

namespace airlock::agents {

namespace {
constexpr int kProfileVersion = 1;
constexpr qint64 kMaxProfileBytes = 256 * 1024;

Error invalid(const QString &where, const QString &pointer, const QString &what)
{
    return makeError(
        ErrorCode::InvalidArgument, QStringLiteral("the agent profile %1: %2: %3").arg(where, pointer, what));
}

// The fields of one JSON object, read with their types checked; the first error is kept.
class Fields {
public:
    Fields(const QJsonObject &o, QString where, QString pointer)
        : m_o(o)
        , m_where(std::move(where))
        , m_pointer(std::move(pointer))
    {
    }
    void only(const QStringList &known)
    {
        for (auto it = m_o.begin(); it != m_o.end() && !m_error; ++it)
            if (!known.contains(it.key()))
                fail(it.key(),
                    QStringLiteral("unknown field (expected one of: %1)").arg(known.join(QStringLiteral(", "))));
    }
    QString text(const QString &key, bool required, qsizetype max = 1000)
    {
        const QJsonValue v = m_o.value(key);
        if (v.isUndefined() && !required)
            return {};
        if (!v.isString() || v.toString().isEmpty() || v.toString().size() > max)
            fail(key, QStringLiteral("expected a text of 1 to %1 characters").arg(max));
        return v.toString();
    }
    QStringList texts(const QString &key, qsizetype maxItems = 64)
    {
        const QJsonValue v = m_o.value(key);
        QStringList out;
        if (v.isUndefined())
            return out;
        if (!v.isArray() || v.toArray().size() > maxItems)
            fail(key, QStringLiteral("expected an array of at most %1 texts").arg(maxItems));
        for (const QJsonValue &item : v.toArray()) {
            if (!item.isString() || item.toString().size() > 4096)
                fail(key, QStringLiteral("expected an array of texts"));
            out.append(item.toString());
        }
        return out;
    }
    QJsonObject object(const QString &key)
    {
        const QJsonValue v = m_o.value(key);
        if (!v.isUndefined() && !v.isObject())
            fail(key, QStringLiteral("expected an object"));
        return v.toObject();
    }
    void fail(const QString &key, const QString &what)
    {
        if (!m_error)
            m_error = invalid(m_where, m_pointer + QLatin1Char('/') + key, what);
    }
    const std::optional<Error> &error() const { return m_error; }

private:
    const QJsonObject &m_o;
    QString m_where, m_pointer;
    std::optional<Error> m_error;
};

bool under(const QString &path, const QString &dir)
{
    return path == dir || path.startsWith(dir + QLatin1Char('/'));
}

// The directory a program's package is: the outermost node_modules around it (a package finds
// its dependencies beside it), a Python environment (its scripts name its interpreter), else the
// program's own directory.
QString packageRoot(const QString &program)
{
    const QString dir = QFileInfo(program).absolutePath();
    static const QLatin1StringView kModules("/node_modules");
    static const QRegularExpression kModulesFolder(QStringLiteral("/node_modules(/|$)"));
    if (const auto m = kModulesFolder.match(dir); m.hasMatch())
        return dir.left(m.capturedStart() + kModules.size());
    // A Python environment's script: ENV/bin/PROGRAM beside ENV/pyvenv.cfg.
    const QString env = QFileInfo(dir).absolutePath();
    if (QFileInfo(dir).fileName() == QLatin1String("bin") && QFileInfo::exists(env + QStringLiteral("/pyvenv.cfg")))
        return env;
    return dir;
}

// The person's own folders a sandbox must never get whole: the home (by $HOME and by the user
// database: either may be wrong) and the runtime folder (the ssh agent's, D-Bus's, the display's
// sockets).
QStringList personalFolders()
{
    QStringList out;
    const passwd *pw = ::getpwuid(::getuid());
    for (const QString &dir : {QDir::homePath(), pw ? QString::fromLocal8Bit(pw->pw_dir) : QString(),
             qEnvironmentVariable("XDG_RUNTIME_DIR"), QStringLiteral("/run/user/%1").arg(::getuid())})
        if (const QString real = QFileInfo(dir).canonicalFilePath(); !real.isEmpty() && real != QLatin1String("/"))
            out.append(real);
    return out;
}

// More than a folder of its own: the file system's top, a folder directly below it, or one that
// is or holds a personal folder (or is inside the runtime folder).
bool tooWide(const QString &root)
{
    if (root.count(QLatin1Char('/')) < 2)
        return true;
    const QStringList personal = personalFolders();
    const QString runtime = QFileInfo(qEnvironmentVariable("XDG_RUNTIME_DIR")).canonicalFilePath();
    return std::any_of(personal.begin(), personal.end(), [&](const QString &p) { return under(p, root); })
        || (!runtime.isEmpty() && runtime != QLatin1String("/") && under(root, runtime));
}
} // namespace

Result<AgentProfile> AgentProfile::fromJson(const QJsonObject &json, const QString &name)
{
    static const QRegularExpression kName(QStringLiteral("^[a-z0-9][a-z0-9_.-]{0,63}$"));
    if (!kName.match(name).hasMatch())
        return invalid(name.left(100), QStringLiteral("/"),
            QStringLiteral("the name must be 1 to 64 lower-case letters, digits, '.', '_' or '-'"));
    Fields f(json, name, QString());
    f.only({QStringLiteral("version"), QStringLiteral("title"), QStringLiteral("description"),
        QStringLiteral("command"), QStringLiteral("install"), QStringLiteral("args"), QStringLiteral("task"),
        QStringLiteral("env"), QStringLiteral("api"), QStringLiteral("registries"), QStringLiteral("state")});
    if (json.value(QStringLiteral("version")).toInt(-1) != kProfileVersion)
        f.fail(QStringLiteral("version"), QStringLiteral("expected %1").arg(kProfileVersion));
    AgentProfile p;
    p.name = name;
    p.title = f.text(QStringLiteral("title"), true, 100);
    p.description = f.text(QStringLiteral("description"), false);
    // Shown to the person as they are: nothing that display::escaped would show otherwise (a
    // title could redraw the line that says where the key goes, or hide part of itself).
    for (const auto &[key, text] : {std::pair{"title", &p.title}, std::pair{"description", &p.description}})
        if (display::escaped(*text) != *text)
            f.fail(
                QLatin1String(key), QStringLiteral("expected printable text, without control or invisible characters"));
    p.command = f.text(QStringLiteral("command"), true, 1024);
    if (!p.command.isEmpty() && p.command.contains(QLatin1Char('/')) && !QDir::isAbsolutePath(p.command))
        f.fail(QStringLiteral("command"), QStringLiteral("expected a program's name or an absolute path"));
    p.install = f.text(QStringLiteral("install"), false);
    p.args = f.texts(QStringLiteral("args"));
    p.task = f.texts(QStringLiteral("task"));
    const QJsonObject env = f.object(QStringLiteral("env"));
    for (auto it = env.begin(); it != env.end(); ++it) {
        auto kv = parseEnvAssignment(it.key() + QLatin1Char('=') + it.value().toString());
        if (!it.value().isString() || !kv || kv->first != it.key())
            f.fail(
                QStringLiteral("env/") + it.key(), QStringLiteral("expected NAME: \"value\" with a variable's name"));
        else
            p.env.append(*kv);
    }
    const QJsonObject api = f.object(QStringLiteral("api"));
    if (json.contains(QStringLiteral("api"))) {
        Fields a(api, name, QStringLiteral("/api"));
        a.only({QStringLiteral("host"), QStringLiteral("secret"), QStringLiteral("env"), QStringLiteral("header")});
        p.api = {a.text(QStringLiteral("host"), true), a.text(QStringLiteral("secret"), true),
            a.text(QStringLiteral("env"), true), a.text(QStringLiteral("header"), true)};
        if (a.error())
            return *a.error();
    }
    p.registries = f.texts(QStringLiteral("registries"));
    for (const QString &host : std::as_const(p.registries))
        if (auto normal = policy::normaliseHostPattern(host); !normal)
            f.fail(QStringLiteral("registries"), normal.error().message);
    p.state = f.texts(QStringLiteral("state"));
    for (const QString &path : std::as_const(p.state))
        if (!path.startsWith(QLatin1String("~/")) || path.split(QLatin1Char('/')).contains(QStringLiteral("..")))
            f.fail(QStringLiteral("state"), QStringLiteral("expected paths in the home, such as ~/.claude"));
    if (f.error())
        return *f.error();
    // What it asks of the sandbox is checked by the policy's own validator.
    if (Status s = policy::validate(p.policyLayer()); !s)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("the agent profile %1 makes an invalid policy: %2").arg(name, s.error().message));
    return p;
}

Result<AgentProfile> AgentProfile::fromFile(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return makeError(
            ErrorCode::NotFound, QStringLiteral("cannot read the agent profile %1: %2").arg(path, file.errorString()));
    const QByteArray text = file.read(kMaxProfileBytes + 1);
    if (text.size() > kMaxProfileBytes)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("the agent profile %1 is larger than %2 KiB").arg(path).arg(kMaxProfileBytes / 1024));
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(text, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("the agent profile %1 is not a JSON object (%2 at offset %3)")
                .arg(path, err.error != QJsonParseError::NoError ? err.errorString() : QStringLiteral("not an object"))
                .arg(err.offset));
    return fromJson(doc.object(), QFileInfo(path).completeBaseName());
}

AgentProfile AgentProfile::forCommand(const QString &command)
{
    AgentProfile p;
    p.name = QFileInfo(command).fileName();
    p.title = p.name;
    p.command = command;
    return p;
}

QJsonObject AgentProfile::toJson() const
{
    QJsonObject env;
    for (const auto &[k, v] : this->env)
        env.insert(k, v);
    QJsonObject o{{QStringLiteral("name"), name}, {QStringLiteral("title"), title},
        {QStringLiteral("description"), description}, {QStringLiteral("command"), command},
        {QStringLiteral("install"), install}, {QStringLiteral("args"), QJsonArray::fromStringList(args)},
        {QStringLiteral("task"), QJsonArray::fromStringList(task)}, {QStringLiteral("env"), env},
        {QStringLiteral("registries"), QJsonArray::fromStringList(registries)},
        {QStringLiteral("state"), QJsonArray::fromStringList(state)}};
    if (!api.host.isEmpty())
        o.insert(QStringLiteral("api"),
            QJsonObject{{QStringLiteral("host"), api.host}, {QStringLiteral("secret"), api.secret},
                {QStringLiteral("env"), api.env}, {QStringLiteral("header"), api.header}});
    return o;
}

QStringList AgentProfile::hosts() const
{
    return (api.host.isEmpty() ? QStringList() : QStringList{api.host}) + registries;
}

QJsonObject AgentProfile::grant() const
{
    if (api.host.isEmpty())
        return {};
    return {{QStringLiteral("secret"), api.secret}, {QStringLiteral("env"), api.env},
        {QStringLiteral("broker"),
            QJsonObject{{QStringLiteral("host"), api.host}, {QStringLiteral("header"), api.header}}}};
}

QJsonObject AgentProfile::policyLayer() const
{
    QJsonObject layer{{QStringLiteral("version"), 1}};
    if (const QStringList allow = hosts(); !allow.isEmpty())
        layer.insert(QStringLiteral("network"),
            QJsonObject{{QStringLiteral("mode"), QStringLiteral("allowlist")},
                {QStringLiteral("allow"), QJsonArray::fromStringList(allow)}});
    if (const QJsonObject g = grant(); !g.isEmpty())
        layer.insert(QStringLiteral("credentials"), QJsonObject{{QStringLiteral("grants"), QJsonArray{g}}});
    return layer;
}

QStringList builtinAgentNames()
{
    return {QStringLiteral("claude"), QStringLiteral("codex"), QStringLiteral("gemini")};
}

Result<AgentProfile> builtinAgent(const QString &name)
{
    if (!builtinAgentNames().contains(name))
        return makeError(ErrorCode::NotFound,
            QStringLiteral("no agent profile named '%1' (profiles: %2)")
                .arg(name.left(100), builtinAgentNames().join(QStringLiteral(", "))));
    auto profile = AgentProfile::fromFile(QStringLiteral(":/airlock/agents/%1.json").arg(name));
    if (!profile)
        return makeError(ErrorCode::Internal, QStringLiteral("this build's %1").arg(profile.error().message));
    return profile;
}

Result<AgentProgram> locateProgram(const AgentProfile &profile, const QString &path)
{
    const QString given = !path.isEmpty()       ? path
        : QDir::isAbsolutePath(profile.command) ? profile.command
                                                : QStandardPaths::findExecutable(profile.command);
    if (given.isEmpty())
        return makeError(ErrorCode::NotFound,
            QStringLiteral(
                "%1 is not installed on this machine ('%2' is not on PATH)%3; or name it with --program PATH")
                .arg(profile.title, profile.command,
                    profile.install.isEmpty() ? QString() : QStringLiteral(": ") + profile.install));
    const QFileInfo info(given);
    const QString real = info.canonicalFilePath();
    if (real.isEmpty() || !QFileInfo(real).isFile() || !QFileInfo(real).isExecutable())
        return makeError(
            ErrorCode::NotFound, QStringLiteral("--program %1: not an executable file on this machine").arg(given));
    AgentProgram program{real, real, std::nullopt};
    // The sandbox sees /usr (and the links into it at /bin, /lib...) as this machine has them.
    if (under(real, QStringLiteral("/usr")))
        return program;
    const QString root = packageRoot(real);
    if (root.isEmpty() || tooWide(root))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("--program %1: the folder it is in (%2) would be mounted whole, and it is more than a "
                           "program's package (the top of the file system, your home or a folder holding it); "
                           "install it in a folder of its own, a node_modules or a Python environment")
                .arg(real, root));
    // At the same path when a mount may go there (its scripts may name their interpreter by it),
    // else under /opt/airlock/NAME by its own name (a package finds the others in "node_modules").
    Mount mount{root, root, false};
    if (!validateMount(mount))
        mount.sandboxPath = QStringLiteral("/opt/airlock/%1/%2").arg(profile.name, QFileInfo(root).fileName());
    program.sandboxPath = mount.sandboxPath + real.mid(root.size());
    program.mount = mount;
    return program;
}

Result<AgentRun> planAgentRun(
    const AgentProfile &profile, const AgentProgram &program, const AgentRunOptions &options, CreateSandboxRequest base)
{
    AgentRun run;
    // The person's own layer, with the profile's hosts and key added to it.
    QStringList hosts;
    for (const QString &host : profile.hosts()) // checked when the profile was read
        hosts.append(*policy::normaliseHostPattern(host));
    if (!hosts.isEmpty()) {
        if (base.network && *base.network != NetworkMode::Allowlist && !profile.api.host.isEmpty())
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("--network %1: %2's key is brokered by the egress proxy, which an allowlist "
                               "goes through; leave --network out (or give allowlist)")
                    .arg(networkModeName(*base.network), profile.title));
        base.allowHosts(hosts);
    }
    QJsonObject own = base.policy.value_or(QJsonObject{{QStringLiteral("version"), 1}});
    if (const QJsonObject grant = profile.grant(); !grant.isEmpty()) {
        QJsonObject credentials = own.value(QStringLiteral("credentials")).toObject();
        QJsonArray grants = credentials.value(QStringLiteral("grants")).toArray();
        grants.append(grant);
        credentials.insert(QStringLiteral("grants"), grants);
        own.insert(QStringLiteral("credentials"), credentials);
    }
    if (Status s = policy::validate(own); !s)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("%1's policy with the person's: %2").arg(profile.title, s.error().message));
    base.policy = own;

    if (program.mount)
        base.mounts.append(*program.mount);
    QString cwd = QStringLiteral("/workspace");
    if (!options.project.isEmpty()) {
        const QFileInfo dir(options.project);
        if (!dir.isDir())
            return makeError(ErrorCode::NotFound,
                QStringLiteral("--project %1: not a directory on this machine").arg(options.project));
        const QString real = dir.canonicalFilePath();
        if (tooWide(real))
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("--project %1: more than a project (the top of the file system, your home or a folder "
                               "holding it, your runtime folder): name the project's own folder")
                    .arg(real));
        // At the same path as here, so that what the agent says about its files is true here too;
        // under /project where a mount may not go (/tmp, /workspace are the sandbox's own).
        // Copy-on-write unless the person asked for direct writes: the agent's edits wait in the
        // sandbox for the person's review (agent diff, agent apply).
        Mount mount{real, real, true, !options.projectWritable};
        if (!validateMount(mount))
            mount.sandboxPath = QStringLiteral("/project/") + QFileInfo(real).fileName();
        for (const Mount &m : std::as_const(base.mounts))
            if (m.sandboxPath == mount.sandboxPath)
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("--project %1: a --mount already goes to %2").arg(real, m.sandboxPath));
        base.mounts.append(mount);
        cwd = run.projectPath = mount.sandboxPath;
    }
    // The agent's program stays read-only: never inside a folder the agent may write to (the
    // project, a --mount of the person's), nor holding one.
    for (const Mount &m : std::as_const(base.mounts))
        if (m.writable && !m.copyOnWrite) {
            const QString real = QFileInfo(m.hostPath).canonicalFilePath();
            const QString root = program.mount ? program.mount->hostPath : QFileInfo(program.hostPath).path();
            if (under(program.hostPath, real) || under(real, root))
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("%1: the agent's program (%2) is in it, and a folder the agent writes to would make "
                                   "its program writable; use one installed elsewhere (--program PATH)")
                        .arg(m.hostPath, program.hostPath));
        }
    // Named for the agent and its project, so that the fleet (and agent diff NAME) says what each
    // is; a random end, so that two runs of the same agent on the same project do not collide.
    if (base.name.isEmpty()) {
        static const QRegularExpression unnamed(QStringLiteral("[^a-z0-9_.-]+"));
        const QString project = QFileInfo(options.project).canonicalFilePath().section(QLatin1Char('/'), -1);
        const QString named = (project.isEmpty() ? profile.name : profile.name + QLatin1Char('-') + project)
                                  .toLower()
                                  .replace(unnamed, QStringLiteral("-"));
        base.name = QStringLiteral("%1-%2")
                        .arg(named.left(40))
                        .arg(QRandomGenerator::global()->bounded(0x10000), 4, 16, QLatin1Char('0'));
    }
    run.sandbox = std::move(base);
    run.exec.argv = QStringList{program.sandboxPath} + profile.args + options.args;
    run.exec.cwd = cwd;
    run.exec.env = profile.env;
    run.exec.forAgent = profile.name; // what it starts is judged as the agent's
    // Bounded as the daemon bounds any request.
    auto exec = ExecRequest::fromJson(run.exec.toJson());
    if (!exec)
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("%1's command: %2").arg(profile.title, exec.error().message));
    run.exec = *exec;
    return run;
}

} // namespace airlock::agents
