// SPDX-License-Identifier: Apache-2.0
#include "approval/ApprovalBroker.h"

#include <QDateTime>
#include <QJsonArray>
#include <QRandomGenerator>
#include <QTimer>

namespace airlock {

namespace {
QString randomHex(int bytes)
{
    QByteArray raw(bytes, Qt::Uninitialized);
    QRandomGenerator::system()->fillRange(reinterpret_cast<quint32 *>(raw.data()), bytes / 4);
    return QString::fromLatin1(raw.toHex());
}

bool sameSecret(const QString &a, const QString &b)
{
    // Constant time over the expected length.
    const QByteArray x = a.toLatin1(), y = b.toLatin1();
    unsigned diff = unsigned(x.size() ^ y.size());
    for (qsizetype i = 0; i < x.size(); ++i)
        diff |= unsigned(x.at(i) ^ (i < y.size() ? y.at(i) : 0));
    return diff == 0;
}
} // namespace

QJsonObject ApprovalRequest::toJson() const
{
    return {{QStringLiteral("id"), id}, {QStringLiteral("nonce"), nonce}, {QStringLiteral("kind"), kind},
        {QStringLiteral("sandbox"), sandbox}, {QStringLiteral("sandboxName"), sandboxName},
        {QStringLiteral("run"), run}, {QStringLiteral("requester"), requester},
        {QStringLiteral("argv"), QJsonArray::fromStringList(argv)}, {QStringLiteral("destination"), destination},
        {QStringLiteral("tool"), tool}, {QStringLiteral("arguments"), arguments}, {QStringLiteral("cwd"), cwd},
        {QStringLiteral("env"), QJsonArray::fromStringList(env)}, {QStringLiteral("rule"), rule},
        {QStringLiteral("layer"), layer}, {QStringLiteral("reason"), reason}, {QStringLiteral("risk"), risk},
        {QStringLiteral("parts"), parts}, {QStringLiteral("files"), files},
        {QStringLiteral("exec"), exec ? QJsonValue(double(exec)) : QJsonValue()},
        {QStringLiteral("chain"), QJsonArray::fromStringList(chain)}, {QStringLiteral("policyVersion"), policyVersion},
        {QStringLiteral("capabilities"), capabilities}, {QStringLiteral("createdMs"), double(createdMs)},
        {QStringLiteral("expiresMs"), double(expiresMs)}};
}

QString ApprovalDecision::describe() const
{
    return allowed
        ? QStringLiteral("approved by %1").arg(by)
        : QStringLiteral("denied by %1: %2").arg(by, reason.isEmpty() ? QStringLiteral("no reason given") : reason);
}

ApprovalBroker::ApprovalBroker(int timeoutMs, QObject *parent)
    : QObject(parent)
    , m_timeoutMs(timeoutMs)
{
}

ApprovalRequest ApprovalBroker::request(ApprovalRequest r, Done done)
{
    do
        r.id = randomHex(4);
    while (m_pending.contains(r.id) || m_finished.contains(r.id));
    r.nonce = randomHex(16);
    r.createdMs = QDateTime::currentMSecsSinceEpoch();
    r.expiresMs = r.createdMs + m_timeoutMs;
    Pending &p = m_pending[r.id];
    p.request = r;
    p.done = std::move(done);
    p.timer = new QTimer(this);
    p.timer->setSingleShot(true);
    p.timer->setTimerType(Qt::PreciseTimer); // "denied in N s" means N s, not 5 % less
    connect(p.timer, &QTimer::timeout, this, [this, id = r.id] {
        finish(id,
            {false, false, QStringLiteral("airlockd"),
                QStringLiteral("nobody decided within %1 s").arg(m_timeoutMs / 1000.0), true});
    });
    p.timer->start(m_timeoutMs);
    Q_EMIT requested(r);
    return r;
}

Status ApprovalBroker::decide(const QString &id, const QString &nonce, const ApprovalDecision &decision)
{
    if (Status s = check(id, nonce); !s)
        return s;
    finish(id, decision);
    return Ok{};
}

Status ApprovalBroker::check(const QString &id, const QString &nonce) const
{
    const auto it = m_pending.constFind(id);
    if (it == m_pending.cend()) {
        if (m_finished.contains(id))
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("approval %1 was already decided (or expired); a decision is "
                               "used once")
                    .arg(id.left(40)));
        return makeError(ErrorCode::NotFound,
            QStringLiteral("no pending approval %1 (see 'airlockctl approvals')").arg(id.left(40)));
    }
    if (!sameSecret(it->request.nonce, nonce))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral(
                "approval %1: the nonce does not match this request; decide from a fresh 'airlockctl approvals'")
                .arg(id));
    if (QDateTime::currentMSecsSinceEpoch() > it->request.expiresMs)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("approval %1 has expired").arg(id));
    return Ok{};
}

int ApprovalBroker::pendingFor(const void *owner) const
{
    return int(std::count_if(
        m_pending.cbegin(), m_pending.cend(), [owner](const Pending &p) { return p.request.owner == owner; }));
}

void ApprovalBroker::cancelIf(const std::function<bool(const ApprovalRequest &)> &which, const QString &why)
{
    QStringList ids;
    for (auto it = m_pending.cbegin(); it != m_pending.cend(); ++it)
        if (which(it->request))
            ids.append(it.key());
    for (const QString &id : std::as_const(ids))
        finish(id, {false, false, QStringLiteral("airlockd"), why});
}

QList<ApprovalRequest> ApprovalBroker::pending() const
{
    QList<ApprovalRequest> out;
    for (const Pending &p : m_pending)
        out.append(p.request);
    std::sort(out.begin(), out.end(),
        [](const ApprovalRequest &a, const ApprovalRequest &b) { return a.createdMs > b.createdMs; });
    return out;
}

void ApprovalBroker::finish(const QString &id, const ApprovalDecision &decision)
{
    auto it = m_pending.find(id);
    if (it == m_pending.end())
        return;
    Pending p = std::move(*it);
    m_pending.erase(it);
    p.timer->deleteLater();
    m_finished.insert(id, QDateTime::currentMSecsSinceEpoch());
    if (m_finished.size() > 10000) // bounded: the oldest are forgotten
        m_finished.erase(std::min_element(m_finished.begin(), m_finished.end()));
    p.done(p.request, decision);
}

} // namespace airlock
