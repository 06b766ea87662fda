// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: what a hostile sandbox sends the credential broker over its TLS connection.
// Besides never crashing or hanging: a head the broker accepts, rewritten with the secret, reads
// back as the same request (method, target, body framing, size of what follows), so the host
// gets what the broker checked; the secret never lands outside its header; a chunked body never
// takes more bytes than it is given, fed whole or in pieces.
#include "net/BrokeredHttp.h"

#include <cstdlib>

using namespace airlock::net::http;

namespace {
void check(bool ok)
{
    if (!ok)
        std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const QByteArrayView input(reinterpret_cast<const char *>(data) + 1, qsizetype(size - 1));
    const QString host = QStringLiteral("api.example.test");
    const HeadParse parse = parseRequestHead(input, host);
    if (const auto *head = std::get_if<RequestHead>(&parse)) {
        check(head->size >= 4 && head->size <= input.size() && !head->headers.isEmpty());
        const Credential credential{"x-api-key", "PLACEHOLDER", "SECRET-VALUE"};
        bool substituted = false;
        const auto rewrite = rewriteHead(*head, credential, &substituted);
        if (!std::holds_alternative<QByteArray>(rewrite))
            return 0; // (a placeholder with other text around it, the header twice)
        const QByteArray out = std::get<QByteArray>(rewrite);
        // (One more header than a sandbox may send, the broker's own, is more than reads back.)
        if (head->headers.size() == kMaxHeaders)
            return 0;
        const HeadParse again = parseRequestHead(out, host);
        const auto *same = std::get_if<RequestHead>(&again);
        check(same && same->size == out.size() && same->method == head->method && same->target == head->target
            && same->body.kind == head->body.kind && same->body.length == head->body.length);
        // Every header as it came but the credential's, which has the secret for the placeholder;
        // the broker's own left out, Accept-Encoding: identity last.
        QList<std::pair<QByteArray, QByteArray>> expected;
        for (const auto &[name, value] : head->headers) {
            const QByteArray lower = name.toLower();
            if (lower.startsWith("proxy-") || lower == "accept-encoding" || lower == "te" || lower == "range"
                || lower == "if-range")
                continue;
            QByteArray v = value;
            if (lower == "x-api-key")
                v.replace("PLACEHOLDER", "SECRET-VALUE");
            if (lower == "content-length")
                v = QByteArray::number(head->body.length);
            expected.append({name, v});
        }
        expected.append(std::pair<QByteArray, QByteArray>("Accept-Encoding", "identity"));
        check(same->headers == expected);
        check(out.count("SECRET-VALUE") >= (substituted ? 1 : 0));
    }
    // The same bytes as the host's answer to a GET or a HEAD.
    const ResponseParse answer
        = parseResponseHead(input, (data[0] & 1) ? QByteArrayView("HEAD") : QByteArrayView("GET"));
    if (const auto *head = std::get_if<ResponseHead>(&answer)) {
        check(head->size >= 4 && head->size <= input.size() && head->status >= 100 && head->status <= 599
            && (!(data[0] & 1) || head->body.kind == BodyFraming::Kind::None));
        // Its body, as the broker follows it: whole or a byte at a time, it ends at the same byte.
        const QByteArrayView rest = input.sliced(head->size);
        BodyReader once(head->body), bytewise(head->body);
        const auto all = once.feed(rest, false);
        qsizetype taken = 0;
        bool done = false, malformed = false;
        for (qsizetype at = 0; at < rest.size() && !done && !malformed; ++at) {
            const auto step = bytewise.feed(rest.sliced(at, 1), false);
            malformed = !step;
            if (step) {
                check(step->take <= 1);
                taken += step->take;
                done = step->done;
            }
        }
        if (rest.isEmpty() && head->body.kind == BodyFraming::Kind::None)
            done = true;
        check(malformed == !all);
        if (all && !malformed)
            check(all->take <= rest.size() && (all->done == done) && (!done || all->take == taken));
    }
    // The rest as a chunked body, whole and in pieces of the first byte's size.
    const qsizetype step = 1 + data[0] % 64;
    ChunkedBody whole, pieces;
    const auto all = whole.feed(input);
    check(!all || *all <= input.size());
    qsizetype used = 0;
    bool failed = false;
    for (qsizetype at = 0; at < input.size() && !pieces.done() && !failed; at += step) {
        const qsizetype n = std::min(step, input.size() - at);
        const auto took = pieces.feed(input.sliced(at, n));
        failed = !took;
        if (took) {
            check(*took <= n);
            used += *took;
        }
    }
    // Whole or in pieces, the same answer.
    check(failed == !all);
    if (all && !failed)
        check(whole.done() == pieces.done() && (!whole.done() || *all == used));
    return 0;
}
