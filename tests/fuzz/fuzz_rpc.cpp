// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: everything the daemon parses from a client connection (frames, JSON-RPC
// envelopes, output headers, sandbox specs, exec requests). Must never crash or hang.
#include "model/ExecRequest.h"
#include "model/SandboxSpec.h"
#include "rpc/Protocol.h"

#include <QJsonObject>

using namespace airlock;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rpc::FrameReader reader;
    reader.append(QByteArray(reinterpret_cast<const char *>(data), qsizetype(size)));
    for (int i = 0; i < 64; ++i) {
        auto frame = reader.next();
        if (!frame || !frame->has_value())
            break;
        const rpc::Frame &f = **frame;
        if (f.kind == rpc::kOutputFrame) {
            (void)rpc::decodeOutput(f.payload);
            continue;
        }
        auto msg = rpc::decodeJson(f.payload);
        if (!msg)
            continue;
        const QJsonObject params = msg->value(QStringLiteral("params")).toObject();
        (void)SandboxSpec::fromJson(params.value(QStringLiteral("spec")).toObject());
        (void)ExecRequest::fromJson(params);
        (void)rpc::eventFromJson(params);
    }
    return 0;
}
