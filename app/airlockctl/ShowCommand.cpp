// SPDX-License-Identifier: Apache-2.0
// show: one execution from the history, its output replayed byte for byte, and with --follow the
// rest of it live, continuing from the stored offsets without gaps or duplicates.
#include "HistoryFormat.h"
#include "OutputSink.h"
#include "SandboxCommands.h"
#include "model/EventKinds.h"
#include "model/Units.h"

#include <QEventLoop>
#include <QJsonArray>

#include <unistd.h>

namespace airlock::cli {

namespace {
// Puts stored and live output in order per stream: bytes already written are skipped, bytes
// never stored are a gap (shown as a marker unless raw).
class Replay {
public:
    // With `collect`, output is gathered there as base64 chunks instead of written (--json).
    Replay(OutputSink &sink, bool markers, QJsonArray *collect)
        : m_sink(sink)
        , m_markers(markers)
        , m_collect(collect)
    {
    }

    void add(int stream, qint64 offset, QByteArrayView data)
    {
        if (stream != 1 && stream != 2)
            return;
        qint64 &expected = m_expected[stream];
        if (offset + data.size() <= expected)
            return; // a duplicate: stored and live overlap
        if (offset < expected) {
            data = data.sliced(expected - offset);
            offset = expected;
        }
        if (offset > expected)
            gap(stream, offset - expected, false);
        if (m_collect)
            m_collect->append(
                QJsonObject{{QStringLiteral("stream"), stream}, {QStringLiteral("offset"), double(offset)},
                    {QStringLiteral("data"), QString::fromLatin1(data.toByteArray().toBase64())}});
        else
            m_sink.write(stream, data);
        expected = offset + data.size();
    }
    // Marks what is missing at the end of each stream, given the true byte counts.
    void finish(qint64 bytesOut, qint64 bytesErr)
    {
        for (const auto &[stream, total] : {std::pair{1, bytesOut}, std::pair{2, bytesErr}})
            if (total > m_expected[stream])
                gap(stream, total - m_expected[stream], true);
        m_sink.finish();
        if (m_markers) // colours the output left on must not restyle what the terminal shows next
            for (int stream : {1, 2})
                if (::isatty(stream))
                    m_sink.note(stream, "\x1b[0m");
    }
    QJsonArray gaps() const { return m_gaps; }

private:
    void gap(int stream, qint64 bytes, bool atEnd)
    {
        m_gaps.append(QJsonObject{{QStringLiteral("stream"), stream},
            {QStringLiteral("offset"), double(m_expected[stream])}, {QStringLiteral("bytes"), double(bytes)}});
        if (m_markers) // after resetting whatever colour the output left on
            m_sink.note(stream,
                QStringLiteral("\x1b[0m\n[airlock: %1 of %2 not stored%3]\n")
                    .arg(units::formatBytes(uint64_t(bytes)),
                        stream == 1 ? QStringLiteral("stdout") : QStringLiteral("stderr"),
                        atEnd ? QStringLiteral(" at the end") : QString())
                    .toUtf8());
        m_expected[stream] += bytes;
    }

    OutputSink &m_sink;
    bool m_markers;
    QJsonArray *m_collect;
    qint64 m_expected[3] = {0, 0, 0};
    QJsonArray m_gaps;
};

void printHeader(Context &ctx, const QJsonObject &e)
{
    auto num = [&](const char *key) { return qint64(e.value(QLatin1String(key)).toDouble()); };
    QStringList env;
    for (const QJsonValue &v : e.value(QStringLiteral("envNames")).toArray())
        env.append(v.toString());
    // A refused command never ran: it has no number in its sandbox, and its decision says why.
    const QString where = e.value(QStringLiteral("exec")).isDouble()
        ? QStringLiteral("%1:%2").arg(e.value(QStringLiteral("sandboxName")).toString()).arg(num("exec"))
        : e.value(QStringLiteral("sandboxName")).toString();
    ctx.out << "execution " << num("id") << " (" << where << ")"
            << " in run " << format::commandLine({e.value(QStringLiteral("run"))}) << '\n';
    if (const QString agent = e.value(QStringLiteral("agent")).toString(); !agent.isEmpty())
        ctx.out << "agent     " << format::escaped(agent, 200) << '\n';
    if (const QString decided = e.value(QStringLiteral("decidedBy")).toString(); !decided.isEmpty())
        ctx.out << "decided   " << format::escaped(decided, 400) << '\n';
    ctx.out << "command   " << format::commandLine(e.value(QStringLiteral("argv")).toArray()) << '\n'
            << "cwd       " << format::commandLine({e.value(QStringLiteral("cwd"))})
            << (env.isEmpty() ? QString() : QStringLiteral("   env: ") + env.join(QStringLiteral(", "))) << '\n'
            << "started   " << format::timestamp(num("startedMs")) << "   duration " << format::duration(e) << '\n'
            << "status    " << e.value(QStringLiteral("status")).toString() << "   exit " << format::exitText(e) << '\n'
            << "output    " << units::formatBytes(uint64_t(num("bytesOut"))) << " stdout, "
            << units::formatBytes(uint64_t(num("bytesErr"))) << " stderr; "
            << units::formatBytes(uint64_t(num("storedBytes"))) << " stored"
            << (e.value(QStringLiteral("outputPruned")).toBool() ? QStringLiteral(" (output pruned)") : QString())
            << '\n'
            << "---" << Qt::endl;
}
} // namespace

class ShowCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("show"); }
    QString summary() const override
    {
        return QStringLiteral("Show one execution and replay its output (stdout to stdout, stderr to stderr).");
    }
    QString usage() const override { return QStringLiteral("ID|SANDBOX:N [--raw] [--follow]"); }
    QList<QCommandLineOption> options() const override { return {m_raw, m_follow}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (positional.size() != 1)
            return fail(ctx,
                makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("show takes one execution: its id from 'airlockctl history' or SANDBOX:N")));
        const bool raw = parser.isSet(m_raw);
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        DaemonClient &daemon = **client;
        const DaemonApi api(daemon);
        auto shown = api.historyShow(positional.first()).wait();
        if (!shown)
            return fail(ctx, shown.error());
        const qint64 id = qint64(shown->value(QStringLiteral("id")).toDouble());
        const QString sandbox = shown->value(QStringLiteral("sandbox")).toString();
        const uint32_t exec = uint32_t(shown->value(QStringLiteral("exec")).toDouble());

        // Subscribe before reading the store: the daemon commits what it has published before it
        // answers history.output, so stored and live output overlap and nothing falls between.
        QList<Event> live;
        bool following
            = parser.isSet(m_follow) && shown->value(QStringLiteral("status")).toString() == QLatin1String("running");
        QMetaObject::Connection subscription;
        if (following) {
            subscription = QObject::connect(&daemon, &DaemonClient::eventReceived, &daemon, [&](const Event &e) {
                if (e.sandbox == sandbox && (e.exec == exec || e.kind.startsWith(event::family::Sandbox)))
                    live.append(e);
            });
            following = bool(api.subscribe(sandbox).wait());
        }

        OutputSink sink = ctx.json ? OutputSink::filtered(false) : OutputSink::filtered(!raw);
        QJsonArray collected; // --json: the output as base64 chunks
        Replay replay(sink, !raw && !ctx.json, ctx.json ? &collected : nullptr);
        if (!raw && !ctx.json)
            printHeader(ctx, *shown);
        for (QJsonValue after = 0; after.isDouble() && !sink.broken();) {
            auto page = api.historyOutput(double(id), after).wait();
            if (!page)
                return fail(ctx, page.error());
            for (const QJsonValue &v : page->value(QStringLiteral("chunks")).toArray()) {
                const QJsonObject c = v.toObject();
                replay.add(c.value(QStringLiteral("stream")).toInt(),
                    qint64(c.value(QStringLiteral("offset")).toDouble()),
                    QByteArray::fromBase64(c.value(QStringLiteral("data")).toString().toLatin1()));
            }
            after = page->value(QStringLiteral("next"));
        }
        // Then live, until it exits (or its sandbox goes).
        bool done = !following;
        QEventLoop loop;
        QObject::connect(&daemon, &DaemonClient::disconnected, &loop, [&] { done = true; });
        while (!done && !sink.broken()) {
            if (live.isEmpty()) {
                loop.processEvents(QEventLoop::WaitForMoreEvents);
                continue;
            }
            const Event e = live.takeFirst();
            if (e.isOutput())
                replay.add(e.stream, e.offset, e.data);
            else if (e.kind == event::ExecExited || e.kind == event::SandboxDeleted || e.kind == event::SandboxFailed)
                done = true;
        }
        QObject::disconnect(subscription);
        if (following) // the final record: status, exit and true byte counts
            if (auto final = api.historyShow(QString::number(id)).wait(); final)
                shown = final;
        replay.finish(qint64(shown->value(QStringLiteral("bytesOut")).toDouble()),
            qint64(shown->value(QStringLiteral("bytesErr")).toDouble()));
        if (ctx.json) {
            QJsonObject result = *shown;
            result.insert(QStringLiteral("output"), collected);
            result.insert(QStringLiteral("gaps"), replay.gaps());
            printJson(ctx, result);
            return ExitOk;
        }
        if (following && !raw)
            ctx.err << "status " << shown->value(QStringLiteral("status")).toString() << ", exit "
                    << format::exitText(*shown) << Qt::endl;
        return ExitOk;
    }

private:
    QCommandLineOption m_raw{QStringLiteral("raw"),
        QStringLiteral(
            "Only the stored bytes, exactly (no header, no filtering of control sequences, no gap markers).")};
    QCommandLineOption m_follow{
        QStringLiteral("follow"), QStringLiteral("If it is still running, keep printing its output until it exits.")};
};

void addShowCommand(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<ShowCommand>());
}

} // namespace airlock::cli
