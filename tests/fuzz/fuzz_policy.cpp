// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: a policy document as a user writes it (a file, `airlockctl policy set`, a
// sandbox's overrides in a create request). Must be refused with a typed error or resolve into an
// effective policy that can judge requests; never a crash or a hang.
#include "policy/Policy.h"

#include <QJsonDocument>

using namespace airlock::policy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    const QJsonDocument json
        = QJsonDocument::fromJson(QByteArray::fromRawData(reinterpret_cast<const char *>(data), qsizetype(size)));
    if (!json.isObject())
        return 0;
    const QJsonObject document = json.object();
    (void)validate(document);
    // As the user's layer and as a sandbox's overrides (with what a create request's spec adds).
    const Layer builtin{QStringLiteral("builtin"), builtinDefaults()};
    for (const auto &layers : {QList<Layer>{builtin, {QStringLiteral("user"), document}},
             QList<Layer>{builtin, {QStringLiteral("sandbox"), withSpecFields(document, document)}}}) {
        const auto policy = resolve(layers);
        if (!policy)
            continue;
        (void)policy->commands.evaluate({QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("ls; rm -rf /")});
        (void)policy->network.evaluate(QStringLiteral("api.example.com"), 443);
        (void)policy->network.evaluate(QStringLiteral("[::1]"), 80);
        (void)evaluateTool(*policy, QStringLiteral("email.send"), {{QStringLiteral("to"), QStringLiteral("a@b.c")}});
        for (const QString &tool : policy->tools.keys())
            (void)evaluateTool(*policy, tool, document);
    }
    return 0;
}
