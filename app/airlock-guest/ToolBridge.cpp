// SPDX-License-Identifier: Apache-2.0
#include "ToolBridge.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace airlock::guest {

namespace {
constexpr size_t kMaxConnections = 64;
constexpr const char *kSocketPath = "/run/airlock/tools.sock";
constexpr const char *kAwayAnswer = "error\nunavailable airlockd is away; try again";
} // namespace

ToolBridge::ToolBridge(int listenFd, std::function<void(std::string)> sendFrame)
    : m_listenFd(listenFd)
    , m_send(std::move(sendFrame))
{
}

void ToolBridge::addPollFds(std::vector<pollfd> &fds)
{
    m_polled.clear();
    fds.push_back({m_listenFd, POLLIN, 0});
    m_polled.push_back(m_listenFd);
    for (const auto &[fd, c] : m_conns) {
        short events = 0;
        if (c.callId == 0 && !c.answered)
            events |= POLLIN;
        if (c.outOff < c.out.size())
            events |= POLLOUT;
        fds.push_back({fd, events, 0});
        m_polled.push_back(fd);
    }
}

void ToolBridge::handle(const pollfd *fds, size_t count)
{
    for (size_t i = 0; i < count && i < m_polled.size(); ++i) {
        if (!fds[i].revents)
            continue;
        const int fd = m_polled[i];
        if (fd == m_listenFd) {
            accept();
            continue;
        }
        auto it = m_conns.find(fd);
        if (it == m_conns.end())
            continue;
        Conn &c = it->second;
        if (fds[i].revents & POLLIN) {
            readFrom(fd, c);
            continue;
        }
        if (fds[i].revents & POLLOUT) {
            const ssize_t n = ::send(fd, c.out.data() + c.outOff, c.out.size() - c.outOff, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0)
                c.outOff += size_t(n);
            if ((n < 0 && errno != EAGAIN && errno != EINTR) || c.outOff == c.out.size())
                close(fd);
            continue;
        }
        if (fds[i].revents & (POLLHUP | POLLERR))
            close(fd); // the caller gave up; a late answer finds nobody
    }
}

void ToolBridge::accept()
{
    for (;;) {
        const int fd = accept4(m_listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        if (m_conns.size() >= kMaxConnections) {
            ::close(fd);
            continue;
        }
        m_conns[fd] = Conn{};
    }
}

void ToolBridge::readFrom(int fd, Conn &c)
{
    char buf[16384];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0) {
        c.in.append(buf, size_t(n));
        if (c.in.size() > wire::kMaxToolRequest)
            answer(fd, c,
                "error\ninvalid_argument the request is larger than " + std::to_string(wire::kMaxToolRequest)
                    + " bytes");
        return;
    }
    if (n < 0) {
        close(fd);
        return;
    }
    // The caller half-closed: the request is complete.
    if (m_daemonAway) {
        answer(fd, c, kAwayAnswer);
        return;
    }
    if (m_inFlight >= wire::kMaxToolCalls) {
        answer(fd, c,
            "error\ndenied " + std::to_string(wire::kMaxToolCalls) + " tool calls of this sandbox are already running");
        return;
    }
    c.callId = m_nextCall++;
    ++m_inFlight;
    m_send(wire::Writer(wire::Type::ToolCall).u32(c.callId).bytes(c.in).take());
    c.in.clear();
}

void ToolBridge::answer(int, Conn &c, const std::string &text)
{
    c.answered = true;
    c.out = text;
    c.outOff = 0;
}

void ToolBridge::onResult(uint32_t callId, bool ok, std::string_view body)
{
    if (m_inFlight > 0)
        --m_inFlight;
    for (auto &[fd, c] : m_conns) {
        if (c.callId == callId && !c.answered) {
            answer(fd, c, std::string(ok ? "ok\n" : "error\n") + std::string(body));
            return;
        }
    }
}

void ToolBridge::setDaemonAway(bool away)
{
    m_daemonAway = away;
    if (!away)
        return;
    for (auto &[fd, c] : m_conns)
        if (c.callId != 0 && !c.answered)
            answer(fd, c, kAwayAnswer);
    m_inFlight = 0;
}

void ToolBridge::close(int fd)
{
    ::close(fd);
    m_conns.erase(fd);
}

int toolClientMain(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || std::strcmp(argv[1], "--help") == 0) {
        std::fprintf(stderr,
            "usage: airlock-tool NAME [JSON|-]\n"
            "Calls a host tool that this sandbox's policy gives it; prints the result as JSON.\n");
        return 2;
    }
    const std::string name = argv[1];
    bool validName = !name.empty() && name.size() <= 100 && name[0] >= 'a' && name[0] <= 'z';
    for (char ch : name)
        validName = validName
            && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-');
    if (!validName) {
        std::fprintf(stderr, "airlock-tool: '%s' is not a tool name\n", name.c_str());
        return 2;
    }
    std::string arguments = argc == 3 ? argv[2] : "{}";
    if (arguments == "-") {
        arguments.clear();
        char buf[16384];
        for (ssize_t n; (n = ::read(0, buf, sizeof buf)) > 0 && arguments.size() <= wire::kMaxToolRequest;)
            arguments.append(buf, size_t(n));
    }
    const std::string request = "{\"tool\":\"" + name + "\",\"arguments\":" + arguments + "}";

    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, kSocketPath, sizeof sa.sun_path - 1);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) {
        std::fprintf(
            stderr, "airlock-tool: no tool gateway in this sandbox (%s: %s)\n", kSocketPath, std::strerror(errno));
        return 1;
    }
    for (size_t off = 0; off < request.size();) {
        const ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
        if (n <= 0) {
            std::fprintf(stderr, "airlock-tool: the gateway closed the connection\n");
            return 1;
        }
        off += size_t(n);
    }
    ::shutdown(fd, SHUT_WR);
    std::string response;
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        response.append(buf, size_t(n));
    if (response.rfind("ok\n", 0) == 0) {
        std::fwrite(response.data() + 3, 1, response.size() - 3, stdout);
        std::fputc('\n', stdout);
        return 0;
    }
    if (response.rfind("error\n", 0) != 0) {
        std::fprintf(stderr, "airlock-tool: no answer from the gateway\n");
        return 1;
    }
    const std::string rest = response.substr(6);
    const std::string code = rest.substr(0, rest.find(' '));
    const std::string message = rest.find(' ') == std::string::npos ? rest : rest.substr(rest.find(' ') + 1);
    std::fprintf(stderr, "airlock-tool: %s\n", message.c_str());
    // The same codes as airlockctl.
    if (code == "denied")
        return 6;
    if (code == "invalid_argument")
        return 2;
    if (code == "not_found")
        return 3;
    return 1;
}

} // namespace airlock::guest
