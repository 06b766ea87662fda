// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: what a client of airlockd --daytona-api sends, in pieces of any size: HTTP/1.1
// requests one after another (heads, Content-Length and chunked bodies), and each body read as
// the multipart upload the toolbox takes. Must end in requests, a failure with its status, or a
// wish for more bytes; never a crash, and never more body than the limit.
#include "daytona/HttpMessage.h"
#include "daytona/Multipart.h"

#include <cstdlib>

using namespace airlock::daytona;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    // The first byte picks how the rest arrives: in pieces of 1 to 256 bytes.
    const qsizetype piece = qsizetype(data[0]) + 1;
    const QByteArrayView bytes(reinterpret_cast<const char *>(data + 1), qsizetype(size - 1));
    constexpr qint64 kMaxBody = 4096;
    HttpRequestReader reader(kMaxBody);
    for (qsizetype at = 0; at < bytes.size() && !reader.failed(); at += piece) {
        reader.append(bytes.sliced(at, std::min(piece, bytes.size() - at)));
        (void)reader.wantsContinue();
        while (auto request = reader.next()) {
            if (request->body.size() > kMaxBody)
                std::abort();
            for (const QString &segment : request->segments)
                if (segment == QLatin1String("..") || segment.contains(QChar(0)))
                    std::abort();
            if (auto boundary = multipartBoundary(request->header("content-type"))) {
                if (auto parts = parseMultipart(request->body, *boundary, 16)) {
                    // What is read back out is what went in.
                    const QByteArray fresh = freshBoundary(*parts);
                    auto again = parseMultipart(writeMultipart(*parts, fresh), fresh, 16);
                    if (!again || again->size() != parts->size())
                        std::abort();
                    for (qsizetype i = 0; i < parts->size(); ++i)
                        if (again->at(i).data != parts->at(i).data)
                            std::abort();
                }
            }
        }
    }
    return 0;
}
