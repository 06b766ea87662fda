// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>

#include <cstdint>

namespace airlock::trace {

enum class SpanKind {
    Run, // the whole trace: a run, or one sandbox
    Sandbox, // from its creation to its deletion
    Execution, // a command: from the request (its approval wait inside) to its exit
    Refused, // a command that did not run: denied by a rule or a person, or nobody answered
    Wait, // a request waiting for a person
    Program, // a program a command started (the exec check); nested by parent process
    Connection, // through the egress proxy
    Request, // one HTTP request on a brokered connection (its key put in by the proxy)
    ToolCall, // a host tool, called from inside
    Note, // a credential injected or masked, a policy change, events not recorded
};

enum class Outcome { Neutral, Allowed, Denied, Asked, Failed, Running };

// One bar of a trace. Times are the daemon's wall clock in ms. A program's exit is not recorded,
// so a program is an instant (its start), as are notes and refusals by rule.
struct Span {
    SpanKind kind = SpanKind::Note;
    Outcome outcome = Outcome::Neutral;
    qint64 startMs = 0, endMs = 0;
    bool instant = false;
    bool open = false; // still running when the trace was read: endMs is then
    QString label; // one line for people, untrusted text escaped
    QString detail; // more: rule, reason, bytes, process ids (escaped)
    QString sandbox; // id
    uint32_t exec = 0; // the execution whose output it is in (0: none)
    int parent = -1;
    QList<int> children; // in start order

    qint64 durationMs() const { return endMs - startMs; }
};

// A run's (or a sandbox's) recorded events as nested spans, Langfuse-style: each sandbox, its
// commands with the approval wait inside, the programs each started (by parent process), their
// network connections (a brokered one with its requests) and tool calls, each with a human label
// ("claude asked · allowed by alice after 40 s", "→ pypi.org:443 · allowed by rule 'pypi.org'",
// "POST /v1/messages → 200 · key put in").
//
// A connection or tool call is attributed by time to the command that was running in its sandbox
// (the proxy does not know which process opened it); with several running, the newest, and its
// detail says so.
struct Trace {
    QList<Span> spans; // spans[0] is the root
    qint64 startMs = 0, endMs = 0;
    int events = 0;

    // events: history.events rows ({sandbox, sandboxName, seq, timeMs, kind, exec, payload}) in any order.
    // nowMs ends what is still running; names gives sandbox ids a person's names.
    static Trace build(const QList<QJsonObject> &events, const QString &title, qint64 nowMs,
        const QHash<QString, QString> &names = {});

    int depth(int span) const;
};

} // namespace airlock::trace
