// SPDX-License-Identifier: Apache-2.0
#include "model/Trace.h"

#include "model/DisplayText.h"
#include "model/EventKinds.h"

#include <QJsonArray>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

namespace airlock::trace {

namespace {
QString text(const QJsonObject &o, const char *key, int width = 200)
{
    return display::escaped(o.value(QLatin1String(key)).toString(), width);
}

qint64 number(const QJsonObject &o, const char *key)
{
    return qint64(o.value(QLatin1String(key)).toDouble());
}

// Who decided, as a person reads it: a client's name without its version ("airlockctl/0.1.0").
QString decider(const QString &by)
{
    return display::escaped(by.section(QLatin1Char('/'), 0, 0), 60);
}

bool allowed(const QString &decision)
{
    return decision == QLatin1String("allow") || decision == QLatin1String("approved");
}

// The builder's state: which span is which request, connection, call or process.
class Builder {
public:
    Builder(const QString &title, qint64 nowMs, const QHash<QString, QString> &names)
        : m_now(nowMs)
        , m_names(names)
    {
        Span root;
        root.kind = SpanKind::Run;
        root.label = display::escaped(title, 200);
        m_spans.append(root);
    }

    void add(const QJsonObject &event)
    {
        const QString kind = event.value(QStringLiteral("kind")).toString();
        const QString sandbox = event.value(QStringLiteral("sandbox")).toString();
        const qint64 t = number(event, "timeMs");
        const QJsonObject p = event.value(QStringLiteral("payload")).toObject();
        const uint32_t exec
            = uint32_t(event.value(QStringLiteral("exec")).isDouble() ? number(event, "exec") : number(p, "exec"));
        if (const QString name = event.value(QStringLiteral("sandboxName")).toString();
            !name.isEmpty() && !m_names.contains(sandbox))
            m_names.insert(sandbox, name);
        const int box = sandboxSpan(sandbox, t);
        m_spans[box].endMs = std::max(m_spans[box].endMs, t);

        if (kind == event::SandboxCreated) {
            m_spans[box].startMs = t;
            m_spans[box].label = tr("sandbox %1").arg(display::escaped(p.value(QStringLiteral("name")).toString(), 80));
        } else if (kind == event::SandboxDeleted) {
            m_deleted[sandbox] = true;
        } else if (kind == event::ExecStarted) {
            started(sandbox, exec, t, p);
        } else if (kind == event::ExecExited) {
            exited(sandbox, exec, t, p);
        } else if (kind == event::ApprovalRequested) {
            requested(sandbox, t, p);
        } else if (kind == event::ApprovalDecided) {
            decided(t, p);
        } else if (kind == event::CommandDenied) {
            Span &s = make(SpanKind::Refused, box, t, commandLabel(p.value(QStringLiteral("argv")).toArray()));
            s.instant = true;
            s.outcome = Outcome::Denied;
            s.label += tr(" · %1 asked · denied by policy").arg(text(p, "requester", 60));
            s.detail = text(p, "reason", 400);
        } else if (kind == event::ExecProgram) {
            program(sandbox, exec, t, p);
        } else if (kind == event::NetworkOpened || kind == event::NetworkDenied || kind == event::NetworkClosed) {
            network(kind, sandbox, t, p);
        } else if (kind == event::NetworkRequest) {
            request(sandbox, t, p);
        } else if (kind.startsWith(event::family::Tool)) {
            tool(kind, sandbox, t, p);
        } else {
            note(kind, sandbox, exec, t, p);
        }
    }

    Trace finish()
    {
        Trace trace;
        // What is still open ends now: a running command, a wait nobody answered yet.
        qint64 last = 0;
        for (const Span &s : std::as_const(m_spans))
            last = std::max({last, s.startMs, s.endMs});
        const qint64 end = std::max(last, m_now);
        for (int i = 1; i < m_spans.size(); ++i) {
            Span &s = m_spans[i];
            if (s.open) {
                s.endMs = end;
            } else if (s.kind == SpanKind::Sandbox && !m_deleted.value(s.sandbox)) {
                s.open = true; // not deleted (as far as these events go)
                s.endMs = std::max(s.endMs, last);
            }
            if (s.kind == SpanKind::Execution && s.exec == 0 && !s.open) // approved, then not run
                s.label += tr(" · approved, did not run");
            s.endMs = std::max(s.endMs, s.startMs);
        }
        for (int i = 1; i < m_spans.size(); ++i)
            m_spans[m_spans[i].parent].children.append(i);
        // Parents contain their children (a wait that began before its connection), children
        // first: a post-order walk from the root.
        std::vector<std::pair<int, bool>> stack{{0, false}};
        while (!stack.empty()) {
            auto [i, done] = stack.back();
            stack.pop_back();
            if (!done) {
                stack.emplace_back(i, true);
                for (const int c : std::as_const(m_spans[i].children))
                    stack.emplace_back(c, false);
                continue;
            }
            Span &s = m_spans[i];
            bool first = i == 0; // the root is only what it holds
            for (const int c : std::as_const(s.children)) {
                const Span &child = m_spans[c];
                s.startMs = first ? child.startMs : std::min(s.startMs, child.startMs);
                s.endMs = first ? child.endMs : std::max(s.endMs, child.endMs);
                first = false;
            }
        }
        // What happened inside a command is in its output: a wait, a connection inherit its exec.
        std::vector<int> walk{0};
        while (!walk.empty()) {
            const int i = walk.back();
            walk.pop_back();
            for (const int c : std::as_const(m_spans[i].children)) {
                if (m_spans[c].exec == 0 && m_spans[i].exec != 0) {
                    m_spans[c].exec = m_spans[i].exec;
                    m_spans[c].sandbox = m_spans[i].sandbox;
                }
                walk.push_back(c);
            }
        }
        if (m_spans[0].children.isEmpty())
            m_spans[0].startMs = m_spans[0].endMs = m_now;
        for (Span &s : m_spans)
            std::stable_sort(s.children.begin(), s.children.end(),
                [this](int a, int b) { return m_spans[a].startMs < m_spans[b].startMs; });
        trace.spans = std::move(m_spans);
        trace.startMs = trace.spans[0].startMs;
        trace.endMs = trace.spans[0].endMs;
        return trace;
    }

private:
    static QString tr(const char *s) { return QString::fromUtf8(s); }

    static QString commandLabel(const QJsonArray &argv)
    {
        return QStringLiteral("$ ") + display::commandLine(argv, 160);
    }

    Span &make(SpanKind kind, int parent, qint64 t, const QString &label)
    {
        Span s;
        s.kind = kind;
        s.startMs = s.endMs = t;
        s.parent = parent;
        s.label = label;
        s.sandbox = m_spans[parent].sandbox;
        s.exec = m_spans[parent].exec;
        m_spans.append(s);
        return m_spans.last();
    }
    int last() const { return int(m_spans.size()) - 1; }

    int sandboxSpan(const QString &sandbox, qint64 t)
    {
        if (const auto it = m_sandboxes.constFind(sandbox); it != m_sandboxes.cend())
            return *it;
        Span s;
        s.kind = SpanKind::Sandbox;
        s.startMs = s.endMs = t;
        s.parent = 0;
        s.sandbox = sandbox;
        s.label = tr("sandbox %1").arg(display::escaped(m_names.value(sandbox, sandbox), 80));
        m_spans.append(s);
        m_sandboxes.insert(sandbox, last());
        return last();
    }

    // The command running in the sandbox at t (the newest, if several); its sandbox if none.
    int runningAt(const QString &sandbox, qint64 t, QString *note)
    {
        int found = -1, candidates = 0;
        for (const int i : m_execOrder.value(sandbox)) {
            const Span &s = m_spans[i];
            if (s.startMs <= t && (s.open || s.endMs >= t)) {
                ++candidates;
                found = i;
            }
        }
        if (candidates > 1 && note)
            *note = tr("%1 commands were running; shown under the newest").arg(candidates);
        return found >= 0 ? found : sandboxSpan(sandbox, t);
    }

    void started(const QString &sandbox, uint32_t exec, qint64 t, const QJsonObject &p)
    {
        // Approved by a person: the request's span becomes the execution, its wait inside.
        int i = -1;
        if (const QString approval = p.value(QStringLiteral("approval")).toString();
            !approval.isEmpty() && m_requests.contains(approval))
            i = m_requests.take(approval);
        if (i < 0 || m_spans[i].kind != SpanKind::Execution) {
            make(SpanKind::Execution, sandboxSpan(sandbox, t), t,
                commandLabel(p.value(QStringLiteral("argv")).toArray()));
            i = last();
        }
        Span &s = m_spans[i];
        s.exec = exec;
        s.open = true;
        s.outcome = Outcome::Running;
        QStringList detail;
        if (const QString agent = text(p, "agent", 60); !agent.isEmpty())
            detail.append(tr("asked by %1").arg(agent));
        if (const QString how = text(p, "decidedBy", 200); !how.isEmpty())
            detail.append(how);
        detail.append(tr("in %1").arg(text(p, "cwd", 200)));
        s.detail = detail.join(QStringLiteral(" · "));
        m_execs[{sandbox, exec}] = i;
        m_execOrder[sandbox].append(i);
    }

    void exited(const QString &sandbox, uint32_t exec, qint64 t, const QJsonObject &p)
    {
        const auto it = m_execs.find({sandbox, exec});
        if (it == m_execs.end())
            return;
        Span &s = m_spans[it->second];
        s.open = false;
        s.endMs = t;
        const QString status = p.value(QStringLiteral("status")).toString();
        s.outcome = status == QLatin1String("succeeded") ? Outcome::Allowed : Outcome::Failed;
        QString how = status;
        if (p.value(QStringLiteral("exitCode")).isDouble())
            how += tr(", exit %1").arg(number(p, "exitCode"));
        else if (p.value(QStringLiteral("signal")).isDouble())
            how += tr(", signal %1").arg(number(p, "signal"));
        s.label += tr(" · %1").arg(display::escaped(how, 60));
    }

    void requested(const QString &sandbox, qint64 t, const QJsonObject &p)
    {
        const QString kind = p.value(QStringLiteral("kind")).toString();
        const QString id = p.value(QStringLiteral("id")).toString();
        const QString who = text(p, "requester", 60);
        int parent = -1;
        if (kind == QLatin1String("command") && number(p, "exec") == 0) {
            // An agent's command: a bar from the request on; it becomes the execution if it runs.
            make(SpanKind::Execution, sandboxSpan(sandbox, t), t,
                commandLabel(p.value(QStringLiteral("argv")).toArray()));
            m_spans[last()].outcome = Outcome::Asked;
            m_spans[last()].open = true;
            m_requests.insert(id, last());
            parent = last();
        } else if (kind == QLatin1String("command")) {
            return; // a program's: its exec.program records carry the wait
        } else if (kind == QLatin1String("tool")) {
            const auto call = m_openTools.constFind({sandbox, p.value(QStringLiteral("tool")).toString()});
            parent = call != m_openTools.cend() ? *call : runningAt(sandbox, t, nullptr);
        } else {
            parent = runningAt(sandbox, t, nullptr);
        }
        const QString what = kind == QLatin1String("network") ? tr(" to reach %1").arg(text(p, "destination", 120))
            : kind == QLatin1String("tool")                   ? tr(" to call %1").arg(text(p, "tool", 80))
                                                              : QString();
        Span &wait = make(SpanKind::Wait, parent, t,
            tr("%1 asked%2 · waiting for a person").arg(who.isEmpty() ? tr("the agent") : who, what));
        wait.open = true;
        wait.outcome = Outcome::Asked;
        wait.detail = text(p, "reason", 300);
        m_waits.insert(id, last());
        if (kind == QLatin1String("network"))
            m_networkWaits[{sandbox, p.value(QStringLiteral("destination")).toString().section(QLatin1Char(' '), 0, 0)}]
                = last();
    }

    void decided(qint64 t, const QJsonObject &p)
    {
        const QString id = p.value(QStringLiteral("id")).toString();
        const int w = m_waits.take(id);
        if (w <= 0)
            return;
        Span &wait = m_spans[w];
        wait.open = false;
        wait.endMs = t;
        const bool yes = p.value(QStringLiteral("decision")).toString() == QLatin1String("allow");
        const QString after = display::duration(t - wait.startMs);
        const QString asked = wait.label.section(QStringLiteral(" · "), 0, 0);
        if (p.value(QStringLiteral("expired")).toBool())
            wait.label = tr("%1 · nobody answered in %2").arg(asked, after);
        else
            wait.label
                = tr("%1 · %2 by %3 after %4%5")
                      .arg(asked, yes ? tr("allowed") : tr("denied"), decider(p.value(QStringLiteral("by")).toString()),
                          after, p.value(QStringLiteral("always")).toBool() ? tr(", always") : QString());
        if (const QString reason = text(p, "reason", 300); !reason.isEmpty())
            wait.detail = reason;
        wait.outcome = yes ? Outcome::Allowed : Outcome::Denied;
        // A command that was refused is a refusal, from the request to the decision.
        const auto request = m_requests.constFind(id);
        if (request == m_requests.cend())
            return;
        Span &command = m_spans[*request];
        if (!yes) {
            command.kind = SpanKind::Refused;
            command.open = false;
            command.endMs = t;
            command.outcome = Outcome::Denied;
            command.label += p.value(QStringLiteral("expired")).toBool() ? tr(" · unanswered, not run")
                                                                         : tr(" · denied, not run");
            m_requests.remove(id);
        } else {
            command.open = false; // until it starts (or never does)
            command.endMs = t;
            command.outcome = Outcome::Allowed;
        }
    }

    void program(const QString &sandbox, uint32_t exec, qint64 t, const QJsonObject &p)
    {
        const qint64 pid = number(p, "pid");
        const QString decision = p.value(QStringLiteral("decision")).toString();
        const QString rule = p.value(QStringLiteral("rule")).toString();
        const ProcessKey key{sandbox, exec, pid};
        // A person's (or the daemon's) answer to a program that asked: its wait ends.
        if (rule == QLatin1String("person") || rule == QLatin1String("airlockd")) {
            const auto it = m_programWaits.find(key);
            if (it != m_programWaits.end()) {
                Span &wait = m_spans[it->second];
                wait.open = false;
                wait.endMs = t;
                wait.outcome = allowed(decision) ? Outcome::Allowed : Outcome::Denied;
                wait.label = tr("asked · %1 after %2").arg(text(p, "reason", 120), display::duration(t - wait.startMs));
                m_spans[wait.parent].outcome = wait.outcome;
                if (!allowed(decision))
                    m_spans[wait.parent].label += tr(" · refused");
                m_programWaits.erase(it);
                return;
            }
        }
        const auto execSpan = m_execs.find({sandbox, exec});
        int parent = execSpan != m_execs.end() ? execSpan->second : sandboxSpan(sandbox, t);
        // The same process's earlier image (it exec'd this), else its parent process's program.
        for (const qint64 up : {pid, number(p, "parent")})
            if (const auto it = m_processes.find({sandbox, exec, up}); it != m_processes.end()) {
                parent = it->second;
                break;
            }
        QJsonArray argv = p.value(QStringLiteral("argv")).toArray();
        Span &s = make(SpanKind::Program, parent, t, display::commandLine(argv, 160));
        s.instant = true;
        s.exec = exec;
        s.sandbox = sandbox;
        s.detail = tr("%1 · pid %2 · %3 by %4%5")
                       .arg(text(p, "path", 200))
                       .arg(pid)
                       .arg(display::escaped(decision, 20),
                           rule == QLatin1String("covered") ? text(p, "coveredBy", 200)
                                                            : tr("rule '%1'").arg(display::escaped(rule, 80)),
                           p.value(QStringLiteral("reason")).toString().isEmpty()
                               ? QString()
                               : QStringLiteral(": ") + text(p, "reason", 200));
        s.outcome = decision == QLatin1String("ask") ? Outcome::Asked
            : allowed(decision)                      ? Outcome::Allowed
                                                     : Outcome::Denied;
        if (s.outcome == Outcome::Denied)
            s.label += tr(" · refused");
        const int program = last();
        m_processes[key] = program;
        if (decision == QLatin1String("ask")) {
            Span &wait = make(SpanKind::Wait, program, t, tr("asked · waiting for a person"));
            wait.open = true;
            wait.outcome = Outcome::Asked;
            m_programWaits[key] = last();
        }
    }

    void network(const QString &kind, const QString &sandbox, qint64 t, const QJsonObject &p)
    {
        const QString destination
            = QStringLiteral("%1:%2").arg(p.value(QStringLiteral("host")).toString()).arg(number(p, "port"));
        const ConnectionKey key{sandbox, number(p, "connection")};
        if (kind == event::NetworkClosed) {
            const auto it = m_connections.find(key);
            if (it != m_connections.end()) {
                Span &s = m_spans[it->second];
                s.open = false;
                s.endMs = t;
                s.detail += tr(" · %1 up, %2 down").arg(number(p, "bytesUp")).arg(number(p, "bytesDown"));
                if (const QString error = text(p, "error", 200); !error.isEmpty()) {
                    s.detail += tr(" · %1").arg(error);
                    s.outcome = Outcome::Failed;
                }
                m_connections.erase(it);
                return;
            }
        }
        QString shared;
        const int parent = runningAt(sandbox, t, &shared);
        const QString decision = p.value(QStringLiteral("decision")).toString();
        const bool refused = kind == event::NetworkDenied;
        // A brokered connection says whose key the proxy puts in; the broker's own refusal says so.
        const bool brokered = p.value(QStringLiteral("brokered")).toBool();
        const QString how = refused
            ? (p.value(QStringLiteral("rule")).toString() == QLatin1String("broker") ? tr("refused by the broker")
                                                                                     : tr("denied"))
            : decision == QLatin1String("approved") ? tr("approved by a person")
                                                    : tr("allowed by rule '%1'").arg(text(p, "rule", 80));
        Span &s = make(SpanKind::Connection, parent, t,
            brokered ? tr("→ %1 · key brokered (%2) · %3")
                           .arg(display::escaped(destination, 120), text(p, "secret", 60), how)
                     : tr("→ %1 · %2").arg(display::escaped(destination, 120), how));
        s.sandbox = sandbox;
        s.outcome = refused ? Outcome::Denied : kind == event::NetworkClosed ? Outcome::Failed : Outcome::Allowed;
        s.detail = text(p, "reason", 300);
        if (const QString protocol = text(p, "protocol", 20); !protocol.isEmpty())
            s.detail = protocol + QStringLiteral(" · ") + s.detail;
        if (!shared.isEmpty())
            s.detail += QStringLiteral(" · ") + shared;
        const int connection = last();
        if (kind == event::NetworkOpened) {
            s.open = true;
            m_connections[key] = connection;
        } else {
            s.instant = true;
        }
        // A person was asked about this destination: the wait is part of this connection.
        if (const auto w = m_networkWaits.find({sandbox, destination}); w != m_networkWaits.end()) {
            m_spans[*w].parent = connection;
            m_networkWaits.erase(w);
        }
    }

    // One request on a brokered connection, recorded when its answer ended: inside its connection,
    // from when it began.
    void request(const QString &sandbox, qint64 t, const QJsonObject &p)
    {
        const auto connection = m_connections.find({sandbox, number(p, "connection")});
        QString shared;
        const int parent = connection != m_connections.end() ? connection->second : runningAt(sandbox, t, &shared);
        const qint64 took = std::max<qint64>(0, number(p, "durationMs"));
        const QString refused = text(p, "refused", 300);
        QString label = tr("%1 %2").arg(text(p, "method", 16), text(p, "target", 200));
        if (!refused.isEmpty())
            label += tr(" · refused");
        else
            label += tr(" → %1").arg(number(p, "status"));
        if (p.value(QStringLiteral("credential")).toBool())
            label += tr(" · key put in");
        Span &s = make(SpanKind::Request, parent, t - took, label);
        s.endMs = t;
        s.sandbox = sandbox;
        s.outcome = !refused.isEmpty()   ? Outcome::Denied
            : number(p, "status") >= 400 ? Outcome::Failed
                                         : Outcome::Allowed;
        s.detail = tr("%1 up, %2 down").arg(number(p, "bytesUp")).arg(number(p, "bytesDown"));
        if (!refused.isEmpty())
            s.detail = refused + QStringLiteral(" · ") + s.detail;
        if (const qint64 masked = number(p, "redacted"); masked > 0)
            s.detail += tr(" · the key was masked in the answer (%1)").arg(masked);
        if (!shared.isEmpty())
            s.detail += QStringLiteral(" · ") + shared;
    }

    void tool(const QString &kind, const QString &sandbox, qint64 t, const QJsonObject &p)
    {
        const ConnectionKey key{sandbox, number(p, "call")};
        const QString name = p.value(QStringLiteral("tool")).toString();
        const auto it = m_toolCalls.find(key);
        if (kind == event::ToolRequested) {
            QString shared;
            Span &s = make(
                SpanKind::ToolCall, runningAt(sandbox, t, &shared), t, tr("tool %1").arg(display::escaped(name, 80)));
            s.sandbox = sandbox;
            s.open = true;
            s.outcome = Outcome::Running;
            s.detail = tr("asked by %1").arg(text(p, "requester", 60))
                + (shared.isEmpty() ? QString() : QStringLiteral(" · ") + shared);
            m_toolCalls[key] = last();
            m_openTools[{sandbox, name}] = last();
            return;
        }
        if (it == m_toolCalls.end())
            return;
        Span &s = m_spans[it->second];
        s.open = false;
        s.endMs = t;
        m_openTools.remove({sandbox, name});
        if (kind == event::ToolDenied) {
            s.outcome = Outcome::Denied;
            s.label += tr(" · denied by %1").arg(decider(p.value(QStringLiteral("by")).toString()));
            s.detail += QStringLiteral(" · ") + text(p, "reason", 300);
        } else {
            const bool failed = p.contains(QStringLiteral("error")) || number(p, "exitCode") != 0;
            s.outcome = failed ? Outcome::Failed : Outcome::Allowed;
            s.label += failed ? tr(" · failed") : tr(" · done");
            if (failed)
                s.detail += QStringLiteral(" · ")
                    + (p.contains(QStringLiteral("error")) ? text(p, "error", 300)
                                                           : tr("exit %1").arg(number(p, "exitCode")));
        }
        m_toolCalls.erase(it);
    }

    void note(const QString &kind, const QString &sandbox, uint32_t exec, qint64 t, const QJsonObject &p)
    {
        const auto execSpan = m_execs.find({sandbox, exec});
        const int parent = exec && execSpan != m_execs.end() ? execSpan->second : sandboxSpan(sandbox, t);
        QString label;
        if (kind == event::CredentialInjected) {
            QStringList grants;
            for (const QJsonValue &g : p.value(QStringLiteral("grants")).toArray()) {
                const QJsonObject grant = g.toObject();
                const QString broker = text(grant, "brokeredFor", 120);
                grants.append(broker.isEmpty() ? tr("%1 as $%2").arg(text(grant, "secret", 60), text(grant, "env", 60))
                                               : tr("a placeholder for %1 in $%2 (the key is put in on the way to %3)")
                                                     .arg(text(grant, "secret", 60), text(grant, "env", 60), broker));
            }
            label = tr("secrets given: %1").arg(grants.join(QStringLiteral(", ")));
        } else if (kind == event::CredentialRedacted) {
            QStringList secrets;
            for (const QJsonValue &v : p.value(QStringLiteral("secrets")).toArray())
                secrets.append(display::escaped(v.toString(), 60));
            label = tr("%1 masked in %2").arg(secrets.join(QStringLiteral(", ")), text(p, "stream", 10));
        } else if (kind == event::PolicyChanged) {
            label = tr("policy changed by %1").arg(decider(p.value(QStringLiteral("by")).toString()));
        } else if (kind == event::FilesChanged) {
            return filesChanged(parent, sandbox, t, p);
        } else if (kind == event::EventsSuppressed) {
            qint64 total = 0;
            for (auto it = p.begin(); it != p.end(); ++it)
                total += qint64(it.value().toDouble());
            label = tr("%1 events not recorded (rate limit)").arg(total);
        } else {
            label = display::escaped(kind, 60);
        }
        Span &s = make(SpanKind::Note, parent, t, label);
        s.instant = true;
        s.sandbox = sandbox;
        if (kind.endsWith(QLatin1String(".suppressed")) || kind.endsWith(QLatin1String(".failed")))
            s.outcome = Outcome::Failed;
    }

    // What the sandbox's copy-on-write folders held as a command ended: one note per folder, its
    // counts and the first paths in the label, all that were recorded in the detail.
    void filesChanged(int parent, const QString &sandbox, qint64 t, const QJsonObject &p)
    {
        for (const QJsonValue &v : p.value(QStringLiteral("mounts")).toArray()) {
            const QJsonObject m = v.toObject();
            QStringList counts, paths;
            for (const auto &[key, word] :
                {std::pair{"modified", tr("modified")}, {"added", tr("added")}, {"deleted", tr("deleted")}})
                if (const int n = m.value(QLatin1String(key)).toInt(); n > 0)
                    counts.append(QStringLiteral("%1 %2").arg(n).arg(word));
            for (const QJsonValue &path : m.value(QStringLiteral("paths")).toArray())
                paths.append(display::escaped(path.toString(), 200));
            QString label = counts.isEmpty()
                ? tr("no changes left in %1").arg(text(m, "path", 120))
                : tr("files changed in %1: %2").arg(text(m, "path", 120), counts.join(QStringLiteral(", ")));
            if (!paths.isEmpty())
                label += QStringLiteral(" (%1%2)").arg(
                    paths.mid(0, 5).join(QStringLiteral(", ")), paths.size() > 5 ? QStringLiteral(", …") : QString());
            if (m.contains(QStringLiteral("error")))
                label = tr("files changed in %1: not listed (%2)").arg(text(m, "path", 120), text(m, "error", 200));
            Span &s = make(SpanKind::Note, parent, t, label);
            s.instant = true;
            s.sandbox = sandbox;
            s.detail = tr("in %1, kept in the sandbox until applied (agent diff, agent apply):\n%2")
                           .arg(text(m, "host", 200), paths.join(QLatin1Char('\n')));
        }
    }

    using ExecKey = std::pair<QString, uint32_t>;
    using ConnectionKey = std::pair<QString, qint64>;
    using ProcessKey = std::tuple<QString, uint32_t, qint64>;

    QList<Span> m_spans;
    qint64 m_now;
    QHash<QString, QString> m_names; // sandbox ids to names: the caller's, then the events'
    QHash<QString, int> m_sandboxes;
    QHash<QString, bool> m_deleted;
    QHash<QString, QList<int>> m_execOrder; // per sandbox, in start order
    std::map<ExecKey, int> m_execs;
    QHash<QString, int> m_requests, m_waits; // by approval id
    std::map<ConnectionKey, int> m_connections, m_toolCalls;
    QHash<std::pair<QString, QString>, int> m_openTools, m_networkWaits;
    std::map<ProcessKey, int> m_processes, m_programWaits;
};
} // namespace

Trace Trace::build(
    const QList<QJsonObject> &events, const QString &title, qint64 nowMs, const QHash<QString, QString> &names)
{
    QList<const QJsonObject *> ordered;
    ordered.reserve(events.size());
    for (const QJsonObject &e : events)
        ordered.append(&e);
    std::stable_sort(ordered.begin(), ordered.end(), [](const QJsonObject *a, const QJsonObject *b) {
        const qint64 ta = number(*a, "timeMs"), tb = number(*b, "timeMs");
        if (ta != tb)
            return ta < tb;
        const QString sa = a->value(QStringLiteral("sandbox")).toString(),
                      sb = b->value(QStringLiteral("sandbox")).toString();
        return sa != sb ? sa < sb : number(*a, "seq") < number(*b, "seq");
    });
    Builder builder(title, nowMs, names);
    for (const QJsonObject *e : std::as_const(ordered))
        builder.add(*e);
    Trace trace = builder.finish();
    trace.events = int(events.size());
    return trace;
}

int Trace::depth(int span) const
{
    int d = 0;
    for (int i = span; i > 0 && i < spans.size(); i = spans[i].parent)
        ++d;
    return d;
}

} // namespace airlock::trace
