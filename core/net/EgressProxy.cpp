// SPDX-License-Identifier: Apache-2.0
#include "net/EgressProxy.h"

#include "log/Log.h"
#include "model/EventKinds.h"
#include "net/Relay.h"
#include "sandbox/Sandbox.h"
#include "util/UntrustedFd.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QHostInfo>
#include <QJsonObject>
#include <QSocketNotifier>
#include <QTimer>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock::net {

using policy::Decision;
using policy::NetworkVerdict;

namespace {
constexpr qsizetype kReadSize = 16 * 1024;

// The name to ask the resolver for: fully qualified, so that the host's search domains never
// make it another name (in the host's own zone) than the one the rule allowed; as it is when
// /etc/hosts names it (glibc's files backend matches names without the final dot only).
QString lookupName(const QString &host)
{
    QFile hosts(QStringLiteral("/etc/hosts"));
    if (hosts.open(QIODevice::ReadOnly))
        for (const QByteArray &line : hosts.readAll().split('\n'))
            for (const QByteArray &name :
                line.first(line.contains('#') ? line.indexOf('#') : line.size()).simplified().split(' ').mid(1))
                if (QString::fromLatin1(name).compare(host, Qt::CaseInsensitive) == 0)
                    return host;
    return host + QLatin1Char('.');
}

QString errnoText(int err)
{
    return QString::fromLocal8Bit(std::strerror(err));
}

} // namespace

// One connection from its first byte until the relay has it (or it is refused).
class EgressProxy::Session final : public QObject {
public:
    Session(EgressProxy *proxy, Sandbox *sandbox, int fd, quint64 id)
        : QObject(proxy)
        , m_proxy(proxy)
        , m_sandbox(sandbox)
        , m_sandboxId(sandbox->id())
        , m_client(fd)
        , m_id(id)
    {
        m_clock.start();
        m_reader = new QSocketNotifier(fd, QSocketNotifier::Read, this);
        connect(m_reader, &QSocketNotifier::activated, this, [this] { onReadable(); });
        m_deadline = new QTimer(this);
        m_deadline->setSingleShot(true);
        connect(m_deadline, &QTimer::timeout, this, [this] {
            refuse(ProxyFailure::TimedOut, QStringLiteral("timeout"),
                m_target ? QStringLiteral("connecting timed out") : QStringLiteral("no complete request in time"));
        });
        m_deadline->start(proxy->m_options.handshakeTimeoutMs);
    }
    ~Session() override
    {
        // Notifiers first: a descriptor closed under a watch the guest's copy keeps open would
        // leave its registration behind.
        delete std::exchange(m_reader, nullptr);
        delete std::exchange(m_writer, nullptr);
        if (m_client >= 0)
            closeUntrusted(m_client);
        if (m_upstream >= 0)
            ::close(m_upstream);
        m_proxy->sessionEnded(m_sandboxId);
    }
    const QString &sandboxId() const { return m_sandboxId; }

private:
    void onReadable()
    {
        char buf[kReadSize];
        // MSG_DONTWAIT, never the descriptor's O_NONBLOCK alone: the guest handed this socket over
        // and may have kept it (the same open file), made it blocking again and taken what woke us.
        const ssize_t n = ::recv(m_client, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0)
            return end(); // gone before asking for anything: nothing to record
        const ProxyHandshake::Step step = m_handshake.feed(QByteArrayView(buf, n));
        if (!step.reply.isEmpty())
            sendToClient(step.reply);
        if (!step.error.isEmpty()) {
            record(event::NetworkDenied,
                {{QStringLiteral("decision"), QStringLiteral("deny")},
                    {QStringLiteral("rule"), QStringLiteral("protocol")}, {QStringLiteral("reason"), step.error}});
            return end();
        }
        if (!step.target)
            return;
        m_target = step.target;
        m_reader->setEnabled(false); // anything more the client sends waits in the socket for the relay
        m_deadline->stop();
        decide();
    }

    void decide()
    {
        if (!m_sandbox)
            return end();
        m_verdict = m_sandbox->policy().network.evaluate(m_target->host, m_target->port);
        if (m_verdict.decision == Decision::Deny)
            return refuse(ProxyFailure::Denied, m_verdict.rule, m_verdict.reason);
        if (m_verdict.decision == Decision::Allow)
            return resolve();
        EgressQuestion q{m_verdict.host, m_target->port, m_target->protocol, m_verdict};
        QPointer<Session> self(this);
        m_proxy->m_ask(m_sandbox, q, [self](bool allowed, const QString &why) {
            if (!self)
                return;
            if (!allowed)
                return self->refuse(ProxyFailure::Denied, QStringLiteral("person"), why);
            if (!self->m_sandbox)
                return self->end();
            // The policy may have moved while the person decided; a deny rule added meanwhile wins.
            const NetworkVerdict now
                = self->m_sandbox->policy().network.evaluate(self->m_target->host, self->m_target->port);
            if (now.decision == Decision::Deny)
                return self->refuse(ProxyFailure::Denied, now.rule, now.reason);
            self->m_verdict.decision = Decision::Allow;
            self->m_verdict.rule = now.decision == Decision::Allow ? now.rule : QStringLiteral("approved");
            self->m_verdict.reason = why;
            self->m_approved = true;
            self->resolve();
        });
    }

    void resolve()
    {
        // A host whose credential is brokered is decided on before anything is connected to.
        if (m_proxy->m_broker && !m_verdict.ipLiteral) {
            auto route = m_proxy->m_broker(m_sandbox, m_verdict.host, m_target->port);
            if (!route)
                return refuse(ProxyFailure::Denied, QStringLiteral("broker"), route.error().message);
            m_route = std::move(*route);
            if (m_route && m_target->protocol == ProxyProtocol::HttpForward)
                return refuse(ProxyFailure::Denied, QStringLiteral("broker"),
                    QStringLiteral("the credential for %1 is brokered over HTTPS only: use https://%1 (CONNECT)")
                        .arg(m_verdict.host));
        }
        if (m_verdict.ipLiteral) {
            if (auto address = policy::NetworkRules::parseAddress(m_verdict.host))
                m_addresses = {*address};
            return connectNext();
        }
        const auto pinned = m_proxy->m_options.hosts.constFind(m_verdict.host);
        if (pinned != m_proxy->m_options.hosts.cend()) {
            m_addresses = *pinned;
            m_resolvedBy = QStringLiteral("daemon table");
            return connectNext();
        }
        if (m_verdict.wildcard && !m_approved && !lookUpWildcard())
            return;
        m_resolvedBy = QStringLiteral("dns");
        QHostInfo::lookupHost(lookupName(m_verdict.host), this, [this](const QHostInfo &info) {
            if (info.error() != QHostInfo::NoError)
                return refuse(ProxyFailure::Unreachable, m_verdict.rule,
                    QStringLiteral("cannot resolve %1: %2").arg(m_verdict.host, info.errorString()));
            // Only addresses the rules still allow once resolved: no rebinding into loopback or the LAN.
            if (!m_sandbox)
                return end();
            NetworkVerdict refused;
            for (const QHostAddress &a : info.addresses()) {
                const NetworkVerdict v = m_sandbox->policy().network.checkResolved(m_verdict, a, m_target->port);
                if (v.decision == Decision::Allow)
                    m_addresses.append(a);
                else if (refused.rule.isEmpty())
                    refused = v;
            }
            if (m_addresses.isEmpty())
                return refuse(ProxyFailure::Denied, refused.rule.isEmpty() ? QStringLiteral("dns") : refused.rule,
                    refused.reason.isEmpty() ? QStringLiteral("%1 has no address").arg(m_verdict.host)
                                             : refused.reason);
            connectNext();
        });
    }

    // A name allowed only by a wildcard: looked up when the policy says so and the sandbox has not
    // had too many new ones this minute, and recorded before it is; refused (false) otherwise.
    bool lookUpWildcard()
    {
        const QString &host = m_verdict.host;
        if (m_verdict.lookupRule.isEmpty()) {
            refuse(ProxyFailure::Denied, m_verdict.rule,
                QStringLiteral(
                    "%1 matches only wildcard rule '%2', and names under a wildcard are not looked up in DNS (a "
                    "made-up name "
                    "would carry data to whoever serves the zone): list %1 in network.allow, or the wildcard in "
                    "network.resolveWildcards")
                    .arg(host, m_verdict.rule));
            return false;
        }
        const int limit = m_proxy->m_options.newWildcardNamesPerMinute;
        const int names = m_proxy->admitLookup(m_sandboxId, host);
        if (names == 0) {
            refuse(ProxyFailure::Denied, m_verdict.rule,
                QStringLiteral("%1 would be more than %2 new names under wildcard rules looked up in a minute (rule "
                               "'%3'): refused, "
                               "as a flood of made-up names can carry data out through DNS")
                    .arg(host)
                    .arg(limit)
                    .arg(m_verdict.rule));
            return false;
        }
        QJsonObject lookup = destination();
        lookup.insert(QStringLiteral("lookupRule"), m_verdict.lookupRule);
        lookup.insert(QStringLiteral("namesThisMinute"), names);
        lookup.insert(QStringLiteral("limit"), limit);
        record(event::NetworkLookup, lookup);
        return true;
    }

    void connectNext()
    {
        if (m_upstream >= 0) {
            ::close(m_upstream);
            m_upstream = -1;
        }
        delete m_writer;
        m_writer = nullptr;
        if (m_addresses.isEmpty())
            return refuse(m_lastErrno == ETIMEDOUT ? ProxyFailure::TimedOut
                    : m_lastErrno == ECONNREFUSED  ? ProxyFailure::Refused
                                                   : ProxyFailure::Unreachable,
                m_verdict.rule,
                QStringLiteral("cannot connect to %1:%2: %3").arg(m_verdict.host).arg(m_target->port).arg(m_lastError));
        m_address = m_addresses.takeFirst();
        sockaddr_storage sa{};
        socklen_t len = 0;
        bool mapped = false;
        const quint32 v4 = m_address.toIPv4Address(&mapped);
        if (m_address.protocol() == QAbstractSocket::IPv4Protocol || mapped) {
            auto *in = reinterpret_cast<sockaddr_in *>(&sa);
            in->sin_family = AF_INET;
            in->sin_port = htons(m_target->port);
            in->sin_addr.s_addr = htonl(v4);
            len = sizeof *in;
        } else {
            auto *in6 = reinterpret_cast<sockaddr_in6 *>(&sa);
            in6->sin6_family = AF_INET6;
            in6->sin6_port = htons(m_target->port);
            const Q_IPV6ADDR b = m_address.toIPv6Address();
            std::memcpy(&in6->sin6_addr, b.c, 16);
            len = sizeof *in6;
        }
        m_upstream = ::socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (m_upstream < 0) {
            m_lastErrno = errno;
            m_lastError = errnoText(errno);
            return connectNext();
        }
        const int one = 1;
        ::setsockopt(m_upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (::connect(m_upstream, reinterpret_cast<sockaddr *>(&sa), len) == 0)
            return established();
        if (errno != EINPROGRESS) {
            m_lastErrno = errno;
            m_lastError = errnoText(errno);
            return connectNext();
        }
        m_writer = new QSocketNotifier(m_upstream, QSocketNotifier::Write, this);
        connect(m_writer, &QSocketNotifier::activated, this, [this] {
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(m_upstream, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err == 0)
                return established();
            m_lastErrno = err;
            m_lastError = errnoText(err);
            connectNext();
        });
        m_deadline->start(m_proxy->m_options.connectTimeoutMs);
    }

    void established()
    {
        m_deadline->stop();
        delete m_writer;
        m_writer = nullptr;
        if (!m_sandbox)
            return end();
        if (m_route)
            return broker(std::move(*std::exchange(m_route, std::nullopt)));
        const QJsonObject opened = openedPayload();
        record(event::NetworkOpened, opened);

        // From here the relay thread owns both sockets; the closing event comes back to this thread.
        QPointer<EgressProxy> proxy = m_proxy;
        QPointer<Sandbox> sandbox = m_sandbox;
        const QString key = m_sandboxId;
        const QJsonObject base = opened;
        const QString run = m_sandbox->currentRun();
        const qint64 startedMs = QDateTime::currentMSecsSinceEpoch() - m_clock.elapsed();
        ++m_proxy->m_open[key]; // the relayed connection counts until it closes
        m_proxy->m_relay->add(
            std::exchange(m_client, -1), std::exchange(m_upstream, -1), m_target->upstreamFirst.toStdString(),
            m_handshake.success().toStdString(), m_proxy->tagOf(key),
            [proxy, sandbox, key, base, run, startedMs](const Relay::Stats &stats) {
                QMetaObject::invokeMethod(proxy, [proxy, sandbox, key, base, run, startedMs, stats] {
                    if (sandbox) {
                        QJsonObject closed = base;
                        closed.insert(QStringLiteral("bytesUp"), qint64(stats.bytesUp));
                        closed.insert(QStringLiteral("bytesDown"), qint64(stats.bytesDown));
                        closed.insert(QStringLiteral("durationMs"), QDateTime::currentMSecsSinceEpoch() - startedMs);
                        closed.insert(QStringLiteral("error"), QString::fromStdString(stats.error));
                        sandbox->record(event::NetworkClosed, closed, run);
                    }
                    proxy->sessionEnded(key);
                });
            },
            m_target->upstreamLimit);
        end();
    }

    QJsonObject openedPayload() const
    {
        QJsonObject opened = destination();
        opened.insert(QStringLiteral("address"),
            m_address.protocol() == QAbstractSocket::IPv6Protocol
                ? QLatin1Char('[') + m_address.toString() + QLatin1Char(']')
                : m_address.toString());
        opened.insert(QStringLiteral("resolvedBy"), m_verdict.ipLiteral ? QStringLiteral("literal") : m_resolvedBy);
        return opened;
    }

    // A host whose credential is brokered: TLS ends here, on both sides (BrokeredConnection).
    void broker(BrokeredRoute route)
    {
        auto tls = m_proxy->tls();
        if (!tls)
            return refuse(ProxyFailure::Unreachable, QStringLiteral("broker"), tls.error().message);
        QPointer<EgressProxy> proxy = m_proxy;
        QPointer<Sandbox> sandbox = m_sandbox;
        const QString key = m_sandboxId, run = m_sandbox->currentRun();
        QJsonObject base = openedPayload();
        base.insert(QStringLiteral("brokered"), true);
        base.insert(QStringLiteral("secret"), route.secretName);
        const qint64 startedMs = QDateTime::currentMSecsSinceEpoch() - m_clock.elapsed();
        auto record = [sandbox, run](const QString &kind, const QJsonObject &payload) {
            if (sandbox)
                sandbox->record(kind, payload, run);
        };
        BrokeredConnection::Callbacks callbacks;
        callbacks.opened = [record, base] { record(event::NetworkOpened, base); };
        callbacks.refused = [record, base, proxy, key](const QString &reason) {
            QJsonObject denied = base;
            denied.insert(QStringLiteral("decision"), QStringLiteral("deny"));
            denied.insert(QStringLiteral("rule"), QStringLiteral("broker"));
            denied.insert(QStringLiteral("reason"), reason);
            record(event::NetworkDenied, denied);
            if (proxy)
                proxy->sessionEnded(key);
        };
        callbacks.request = [record, base](const BrokeredConnection::Request &r) {
            QJsonObject o{{QStringLiteral("connection"), base.value(QStringLiteral("connection"))},
                {QStringLiteral("host"), base.value(QStringLiteral("host"))},
                {QStringLiteral("secret"), base.value(QStringLiteral("secret"))},
                {QStringLiteral("method"), QString::fromLatin1(r.method)},
                {QStringLiteral("target"), QString::fromLatin1(r.target)}, {QStringLiteral("status"), r.status},
                {QStringLiteral("credential"), r.credential}, {QStringLiteral("bytesUp"), r.bytesUp},
                {QStringLiteral("bytesDown"), r.bytesDown}, {QStringLiteral("durationMs"), r.durationMs}};
            if (!r.refused.isEmpty())
                o.insert(QStringLiteral("refused"), r.refused);
            if (r.redacted > 0)
                o.insert(QStringLiteral("redacted"), r.redacted);
            record(event::NetworkRequest, o);
        };
        callbacks.closed = [record, base, proxy, key, startedMs](const BrokeredConnection::Stats &stats) {
            QJsonObject closed = base;
            closed.insert(QStringLiteral("bytesUp"), qint64(stats.bytesUp));
            closed.insert(QStringLiteral("bytesDown"), qint64(stats.bytesDown));
            closed.insert(QStringLiteral("requests"), stats.requests);
            closed.insert(QStringLiteral("durationMs"), QDateTime::currentMSecsSinceEpoch() - startedMs);
            closed.insert(QStringLiteral("error"), stats.error);
            record(event::NetworkClosed, closed);
            if (proxy)
                proxy->sessionEnded(key);
        };
        ++m_proxy->m_open[key]; // counts until it closes, as a relayed one does
        auto *connection
            = new BrokeredConnection(std::exchange(m_client, -1), std::exchange(m_upstream, -1), std::move(route), *tls,
                m_target->upstreamFirst, m_handshake, std::move(callbacks), m_proxy->m_options.broker, m_proxy);
        connection->setTag(m_proxy->tagOf(key));
        end();
    }

    // The destination as decided: host, port, protocol, decision, rule and why.
    QJsonObject destination() const
    {
        QJsonObject o{{QStringLiteral("connection"), qint64(m_id)},
            {QStringLiteral("host"),
                m_verdict.host.isEmpty() ? (m_target ? m_target->host.left(300) : QString()) : m_verdict.host},
            {QStringLiteral("port"), m_target ? int(m_target->port) : 0},
            {QStringLiteral("protocol"),
                m_handshake.protocol() ? proxyProtocolName(*m_handshake.protocol()) : QString()},
            {QStringLiteral("decision"),
                m_approved ? QStringLiteral("approved") : policy::decisionName(m_verdict.decision)},
            {QStringLiteral("rule"), m_verdict.rule}, {QStringLiteral("reason"), m_verdict.reason}};
        return o;
    }

    void refuse(ProxyFailure failure, const QString &rule, const QString &reason)
    {
        sendToClient(m_handshake.failure(failure, reason));
        QJsonObject o = destination();
        o.insert(QStringLiteral("decision"),
            failure == ProxyFailure::Denied ? QStringLiteral("deny") : o.value(QStringLiteral("decision")).toString());
        o.insert(QStringLiteral("rule"), rule);
        o.insert(QStringLiteral("reason"), reason);
        if (failure == ProxyFailure::Denied) {
            record(event::NetworkDenied, o);
        } else {
            o.insert(QStringLiteral("error"), reason);
            o.insert(QStringLiteral("durationMs"), m_clock.elapsed());
            o.insert(QStringLiteral("bytesUp"), 0);
            o.insert(QStringLiteral("bytesDown"), 0);
            record(event::NetworkClosed, o);
        }
        end();
    }

    void record(const QString &kind, QJsonObject payload)
    {
        if (m_sandbox)
            m_sandbox->record(kind, std::move(payload), m_sandbox->currentRun());
    }

    // Best effort: a short reply to a fresh socket fits its buffer.
    void sendToClient(const QByteArray &bytes)
    {
        if (m_client >= 0 && !bytes.isEmpty())
            (void)!::send(m_client, bytes.constData(), size_t(bytes.size()), MSG_NOSIGNAL | MSG_DONTWAIT);
    }

    void end()
    {
        m_reader->setEnabled(false);
        m_deadline->stop();
        deleteLater();
    }

    EgressProxy *m_proxy;
    QPointer<Sandbox> m_sandbox;
    const QString m_sandboxId;
    int m_client;
    int m_upstream = -1;
    quint64 m_id;
    QElapsedTimer m_clock;
    QSocketNotifier *m_reader = nullptr;
    QSocketNotifier *m_writer = nullptr;
    QTimer *m_deadline = nullptr;
    ProxyHandshake m_handshake;
    std::optional<ProxyTarget> m_target;
    NetworkVerdict m_verdict;
    bool m_approved = false;
    std::optional<BrokeredRoute> m_route; // its credential is brokered
    QList<QHostAddress> m_addresses;
    QHostAddress m_address;
    QString m_resolvedBy;
    int m_lastErrno = 0;
    QString m_lastError = QStringLiteral("no address");
};

EgressProxy::EgressProxy(Options options, Ask ask, QObject *parent)
    : QObject(parent)
    , m_options(std::move(options))
    , m_ask(std::move(ask))
    , m_relay(std::make_unique<Relay>())
{
}

EgressProxy::~EgressProxy()
{
    // Sessions first: they report to this object's members as they go. Then the relay, whose
    // pending reports find no proxy.
    qDeleteAll(findChildren<Session *>(Qt::FindDirectChildrenOnly));
    m_relay.reset();
}

int EgressProxy::admitLookup(const QString &sandboxId, const QString &host)
{
    if (!m_clock.isValid())
        m_clock.start();
    const qint64 now = m_clock.elapsed();
    QHash<QString, qint64> &names = m_lookups[sandboxId];
    names.removeIf([now](const QHash<QString, qint64>::iterator it) { return now - it.value() >= 60'000; });
    if (!names.contains(host)) {
        if (names.size() >= m_options.newWildcardNamesPerMinute)
            return 0;
        names.insert(host, now);
    }
    return int(names.size());
}

quint64 EgressProxy::tagOf(const QString &sandboxId)
{
    auto it = m_tags.find(sandboxId);
    if (it == m_tags.end())
        it = m_tags.insert(sandboxId, m_nextTag++);
    return *it;
}

void EgressProxy::handle(Sandbox *sandbox, int fd)
{
    int &open = m_open[sandbox->id()];
    if (open >= m_options.maxConnectionsPerSandbox) {
        closeUntrusted(fd);
        sandbox->record(event::NetworkDenied,
            {{QStringLiteral("decision"), QStringLiteral("deny")}, {QStringLiteral("rule"), QStringLiteral("limit")},
                {QStringLiteral("reason"), QStringLiteral("the sandbox already has %1 open connections").arg(open)}},
            sandbox->currentRun());
        return;
    }
    ++open;
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    new Session(this, sandbox, fd, m_nextConnection++);
}

Result<std::shared_ptr<const TlsContexts>> EgressProxy::tls()
{
    if (!m_tls) {
        auto made = TlsContexts::make(m_options.upstreamTrust);
        if (!made)
            return made.error();
        m_tls = *made;
    }
    return m_tls;
}

void EgressProxy::endBrokered(Sandbox *sandbox, const QString &why)
{
    const auto tag = m_tags.constFind(sandbox->id());
    if (tag == m_tags.cend())
        return;
    for (BrokeredConnection *c : findChildren<BrokeredConnection *>(Qt::FindDirectChildrenOnly))
        if (c->tag() == *tag)
            c->end(why);
}

void EgressProxy::dropSandbox(Sandbox *sandbox)
{
    for (Session *s : findChildren<Session *>(Qt::FindDirectChildrenOnly))
        if (s->sandboxId() == sandbox->id())
            delete s;
    if (const auto tag = m_tags.constFind(sandbox->id()); tag != m_tags.cend()) {
        m_relay->cancel(*tag);
        for (BrokeredConnection *c : findChildren<BrokeredConnection *>(Qt::FindDirectChildrenOnly))
            if (c->tag() == *tag)
                delete c;
    }
    m_tags.remove(sandbox->id());
    m_lookups.remove(sandbox->id());
    m_open.remove(sandbox->id()); // late reports of its relayed connections count for nothing
}

void EgressProxy::sessionEnded(const QString &sandboxId)
{
    const auto it = m_open.find(sandboxId);
    if (it != m_open.end() && --*it <= 0)
        m_open.erase(it);
}

int EgressProxy::openConnections() const
{
    int n = 0;
    for (int v : m_open)
        n += v;
    return n;
}

} // namespace airlock::net
