// SPDX-License-Identifier: Apache-2.0
#include "rpc/HistoryMethods.h"

#include "history/HistoryStore.h"
#include "rpc/Params.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QPointer>

#include <cmath>

namespace airlock::rpc {

namespace {
constexpr qint64 kMaxOutputPage = 1024 * 1024; // base64 of it stays far below the frame limit

// An optional non-negative integer parameter.
Result<std::optional<qint64>> integerParam(const QJsonObject &params, const char *key)
{
    const QJsonValue v = params.value(QLatin1String(key));
    if (v.isUndefined() || v.isNull())
        return std::optional<qint64>();
    const double d = v.toDouble(-1);
    if (!v.isDouble() || d < 0 || d > 9e15 || d != std::floor(d))
        return invalid(QStringLiteral("params.%1: expected a non-negative integer").arg(QLatin1String(key)));
    return std::optional<qint64>(qint64(d));
}

QString textParam(const QJsonObject &params, const char *key)
{
    return params.value(QLatin1String(key)).toString().left(1000);
}
} // namespace

QList<Method> HistoryMethods::methods()
{
    using A = Access;
    // Read by any token that may read; a token scoped to sandboxes lists and follows only the
    // history of its running sandboxes, and nothing daemon-wide.
    constexpr Access read{A::Agent::Allowed, nullptr, A::Token::Read, A::Scope::None};
    constexpr Access readScoped{A::Agent::Allowed, nullptr, A::Token::Read, A::Scope::Param};
    // What agents did is the person's record: an agent does not drop it.
    constexpr Access prune = access::person("an agent connection cannot prune the history");
    // Every one answers that this daemon keeps no history when it has none.
    const auto declare = [this](method::Name name, Access access, void (HistoryMethods::*handler)(Call &)) {
        return Method{name, access, NeedsNothing, [this, handler](Call &c) {
                          if (!m_store)
                              return c.reply(makeError(
                                  ErrorCode::HistoryUnavailable, QStringLiteral("this daemon keeps no history")));
                          (this->*handler)(c);
                      }};
    };
    return {
        declare(method::HistoryList, readScoped, &HistoryMethods::list),
        declare(method::HistoryShow, read, &HistoryMethods::show),
        declare(method::HistoryOutput, read, &HistoryMethods::output),
        declare(method::HistoryRuns, read, &HistoryMethods::runs),
        declare(method::HistoryEvents, readScoped, &HistoryMethods::events),
        declare(method::HistoryExport, read, &HistoryMethods::exportRun),
        declare(method::HistoryPrune, prune, &HistoryMethods::prune),
    };
}

HistoryMethods::HistoryMethods(HistoryStore *store, QObject *parent)
    : QObject(parent)
    , m_store(store)
{
    if (store)
        m_reader.emplace(store->path());
    m_pool.setMaxThreadCount(2);
}

HistoryMethods::~HistoryMethods()
{
    m_pool.waitForDone();
}

void HistoryMethods::inBackground(const Reply &reply, std::function<Result<QJsonObject>()> work)
{
    // Queries queue for two threads; past a bound, new ones are refused at once rather than
    // holding memory (and their answers) for whoever asked faster than they read.
    if (m_inFlight >= kMaxInFlight)
        return reply(makeError(ErrorCode::Busy,
            QStringLiteral("%1 history queries are already waiting; try again when they are answered")
                .arg(m_inFlight)));
    ++m_inFlight;
    QPointer<HistoryMethods> self = this;
    m_pool.start([self, reply, work = std::move(work)] {
        Result<QJsonObject> result = work();
        if (self)
            QMetaObject::invokeMethod(
                self,
                [self, reply, result] {
                    if (self)
                        --self->m_inFlight;
                    reply(result);
                },
                Qt::QueuedConnection);
    });
}

void HistoryMethods::list(Call &c)
{
    const QJsonObject &p = c.params;
    const Reply &reply = c.reply;
    const HistoryReader &reader = *m_reader;
    HistoryReader::Query q;
    q.sandbox = textParam(p, "sandbox");
    q.run = textParam(p, "run");
    q.status = textParam(p, "status");
    q.agent = textParam(p, "agent");
    q.text = textParam(p, "text");
    auto exitCode = integerParam(p, "exitCode");
    auto since = integerParam(p, "sinceMs");
    auto until = integerParam(p, "untilMs");
    auto before = integerParam(p, "before");
    auto after = integerParam(p, "after");
    auto offset = integerParam(p, "offset");
    auto limit = integerParam(p, "limit");
    for (const auto *r : {&exitCode, &since, &until, &before, &after, &offset, &limit})
        if (!*r)
            return reply(r->error());
    q.sort = textParam(p, "sort");
    if (!HistoryReader::isSortKey(q.sort))
        return reply(invalid(QStringLiteral("params.sort: '%1' is not a column to sort by (id, sandbox, agent, status, "
                                            "exitCode, storedBytes, duration)")
                                 .arg(q.sort.left(40))));
    const QString order = textParam(p, "order");
    if (!order.isEmpty() && order != QLatin1String("asc") && order != QLatin1String("desc"))
        return reply(invalid(QStringLiteral("params.order: expected \"asc\" or \"desc\"")));
    q.ascending = order == QLatin1String("asc");
    q.afterId = after->value_or(0);
    q.offset = offset->value_or(0);
    if (*exitCode)
        q.exitCode = int(**exitCode);
    q.sinceMs = *since;
    q.untilMs = *until;
    q.beforeId = before->value_or(0);
    q.limit = int(std::min<qint64>(limit->value_or(50), 10000));
    return inBackground(reply, [reader, q] { return reader.executions(q); });
}

void HistoryMethods::show(Call &c)
{
    const QJsonObject &p = c.params;
    const Reply &reply = c.reply;
    const HistoryReader &reader = *m_reader;
    const QString ref = textParam(p, "execution");
    if (ref.isEmpty())
        return reply(invalid(QStringLiteral("params.execution: expected an execution id or SANDBOX:N")));
    (void)m_store->flush(); // what the daemon has seen is what the reader sees
    return inBackground(reply, [reader, ref] { return reader.execution(ref); });
}

void HistoryMethods::output(Call &c)
{
    const QJsonObject &p = c.params;
    const Reply &reply = c.reply;
    const HistoryReader &reader = *m_reader;
    auto id = integerParam(p, "execution");
    auto after = integerParam(p, "after");
    auto maxBytes = integerParam(p, "maxBytes");
    if (!id || !after || !maxBytes || !*id)
        return reply(!id    ? id.error()
                : !after    ? after.error()
                : !maxBytes ? maxBytes.error()
                            : invalid(QStringLiteral("params.execution: expected an id")));
    // Everything published before this request is committed first: a client that subscribed
    // before asking misses nothing between the stored offset and the live stream.
    (void)m_store->flush();
    return inBackground(reply,
        [reader, id = **id, after = after->value_or(0),
            max = std::min(maxBytes->value_or(kMaxOutputPage), kMaxOutputPage)] {
            return reader.output(id, after, max);
        });
}

void HistoryMethods::runs(Call &c)
{
    const QJsonObject &p = c.params;
    const Reply &reply = c.reply;
    const HistoryReader &reader = *m_reader;
    auto before = integerParam(p, "before");
    auto limit = integerParam(p, "limit");
    if (!before || !limit)
        return reply(!before ? before.error() : limit.error());
    return inBackground(
        reply, [reader, b = before->value_or(0), l = int(std::min<qint64>(limit->value_or(50), 10000))] {
            return reader.runs(l, b);
        });
}

void HistoryMethods::events(Call &c)
{
    const QJsonObject &p = c.params;
    const Reply &reply = c.reply;
    const HistoryReader &reader = *m_reader;
    HistoryReader::EventQuery q;
    q.sandbox = textParam(p, "sandbox");
    q.run = textParam(p, "run");
    const QJsonValue kinds = p.value(QStringLiteral("kinds"));
    if (!kinds.isUndefined() && !kinds.isNull() && !kinds.isArray())
        return reply(invalid(QStringLiteral("params.kinds: expected an array of kind prefixes like \"network.\"")));
    for (const QJsonValue &kind : kinds.toArray()) {
        if (!kind.isString() || kind.toString().isEmpty())
            return reply(invalid(QStringLiteral("params.kinds: expected non-empty strings")));
        q.kinds.append(kind.toString());
    }
    if (q.kinds.size() > 32)
        return reply(invalid(QStringLiteral("params.kinds: at most 32 prefixes")));
    const QJsonValue after = p.value(QStringLiteral("after"));
    if (!after.isUndefined() && !after.isNull() && !after.isObject())
        return reply(invalid(QStringLiteral("params.after: expected the 'next' object of the previous page")));
    q.after = after.toObject();
    auto limit = integerParam(p, "limit");
    if (!limit)
        return reply(limit.error());
    q.limit = int(std::min<qint64>(limit->value_or(500), 5000));
    if (q.sandbox.isEmpty() && q.run.isEmpty())
        return reply(invalid(QStringLiteral("params: name a sandbox or a run whose events to list")));
    (void)m_store->flush();
    return inBackground(reply, [reader, q] { return reader.events(q); });
}

void HistoryMethods::exportRun(Call &c)
{
    const QJsonObject &p = c.params;
    const Reply &reply = c.reply;
    const HistoryReader &reader = *m_reader;
    const QString run = textParam(p, "run");
    if (run.isEmpty())
        return reply(invalid(QStringLiteral("params.run: expected a run name")));
    (void)m_store->flush();
    return inBackground(reply, [reader, run, cursor = p.value(QStringLiteral("cursor")).toObject()] {
        return reader.exportPage(run, cursor, kMaxOutputPage);
    });
}

void HistoryMethods::prune(Call &c)
{
    const QJsonObject &p = c.params;
    const Reply &reply = c.reply;
    const Progress &progress = c.progress;
    auto keep = integerParam(p, "keepBytes");
    auto endedBefore = integerParam(p, "endedBeforeMs");
    if (!keep || !endedBefore)
        return reply(!keep ? keep.error() : endedBefore.error());
    HistoryStore::Prune request{*keep, *endedBefore, p.value(QStringLiteral("vacuum")).toBool()};
    QPointer<HistoryMethods> self = this;
    const auto done = [self, reply](Result<HistoryStore::PruneReport> r) {
        Result<QJsonObject> json = r
            ? Result<QJsonObject>(QJsonObject{{QStringLiteral("executions"), double(r->executions)},
                {QStringLiteral("freedBytes"), double(r->freedBytes)},
                {QStringLiteral("storedBytes"), double(r->storedBytes)},
                {QStringLiteral("fileBytes"), double(r->fileBytes)}})
            : Result<QJsonObject>(r.error());
        // Posted to the application, not to this object, which may be going away on the main
        // thread meanwhile: whether it is still there is asked there.
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, reply, json] {
                if (self)
                    reply(json);
            },
            Qt::QueuedConnection);
    };
    HistoryStore::ProgressListener told;
    if (progress)
        told = [self, progress](const HistoryStore::Progress &step) {
            const QJsonObject json{{QStringLiteral("phase"), step.phase}, {QStringLiteral("done"), double(step.done)},
                {QStringLiteral("total"), double(step.total)}};
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [self, progress, json] {
                    if (self)
                        progress(json);
                },
                Qt::QueuedConnection);
        };
    m_store->prune(request, done, told);
    return;
}

} // namespace airlock::rpc
