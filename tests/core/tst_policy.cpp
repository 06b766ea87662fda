// SPDX-License-Identifier: Apache-2.0
// Policy documents: validation names the bad field, host patterns are normalised, layers merge in
// order with the source of every value, presets are valid, and an invalid layer applies nothing.
#include "policy/Policy.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::policy;

namespace {
QJsonObject json(const char *text)
{
    return QJsonDocument::fromJson(QByteArray(text)).object();
}

QString error(const char *text)
{
    const Status s = validate(json(text));
    return s ? QStringLiteral("valid") : s.error().message;
}
} // namespace

class TestPolicy final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void validationNamesTheFieldAndWhatWasExpected()
    {
        QCOMPARE(error("{}"), QStringLiteral("valid"));
        QCOMPARE(error(R"({"netwrok": {}})"),
            QStringLiteral("/netwrok: unknown field (expected one of: version, network, credentials, tools, "
                           "commands, filesystem, limits, description)"));
        QCOMPARE(error(R"({"version": 2})"), QStringLiteral("/version: expected 1 (this Airlock's policy format)"));
        QCOMPARE(error(R"({"network": {"mode": "sideways"}})"),
            QStringLiteral("/network/mode: expected \"none\", \"allowlist\" or \"full\""));
        QCOMPARE(error(R"({"network": {"allow": ["ok.example", "bad_host!"]}})"),
            QStringLiteral(
                "/network/allow/1: 'bad_host!' is not a host name, *.domain, IPv4 address or [IPv6] address"));
        QCOMPARE(error(R"({"network": {"deny": ["x.example:70000"]}})"),
            QStringLiteral("/network/deny/0: port '70000' is not 1-65535"));
        QCOMPARE(error(R"({"network": {"unknown": "allow"}})"),
            QStringLiteral(
                "/network/unknown: expected \"deny\" or \"ask\" (what to do with a destination no rule names)"));
        QCOMPARE(error(R"({"credentials": {"grants": [{"secret": "gh", "env": "GH", "file": "/x"}]}})"),
            QStringLiteral("/credentials/grants/0: expected exactly one of \"env\" and \"file\""));
        QCOMPARE(error(R"({"credentials": {"grants": [{"secret": "gh", "file": "/workspace/../etc/x"}]}})"),
            QStringLiteral("/credentials/grants/0/file: expected an absolute path inside the sandbox, without '..'"));
        QCOMPARE(error(R"({"credentials": {"grants": [{"secret": "gh", "env": "1BAD"}]}})"),
            QStringLiteral("/credentials/grants/0/env: expected an environment variable name"));
        QCOMPARE(error(R"({"tools": {"email.send": {"decision": "maybe"}}})"),
            QStringLiteral("/tools/email.send/decision: expected \"allow\", \"ask\" or \"deny\""));
        QCOMPARE(error(R"({"tools": {"Email": {"decision": "ask"}}})"),
            QStringLiteral("/tools/Email: expected a tool name (lower-case letters, digits, _ . -)"));
        QCOMPARE(error(R"({"commands": {"rules": [{"decision": "allow", "command": "ls"}, {"decision": "allow"}]}})"),
            QStringLiteral("/commands/rules/1/command: expected a string of words or an array of words"));
        QCOMPARE(error(R"({"commands": {"default": "yes"}})"),
            QStringLiteral("/commands/default: expected \"allow\", \"ask\" or \"deny\""));
        QCOMPARE(error(R"({"limits": {"memoryBytes": -1}})"),
            QStringLiteral("/limits/memoryBytes: expected a whole number from 8.0 MiB to 4096 TiB"));
        QCOMPARE(error(R"({"limits": {"memory": 1}})"), QStringLiteral("/limits/memory: unknown limit"));
        QVERIFY2(error(R"({"filesystem": {"mounts": [{"host": "relative", "path": "/x"}]}})")
                     .startsWith(QStringLiteral("/filesystem/mounts/0: ")),
            qPrintable(error(R"({"filesystem": {"mounts": [{"host": "relative", "path": "/x"}]}})")));
        QCOMPARE(error(R"({"network": []})"), QStringLiteral("/network: expected an object"));
        QCOMPARE(error(R"({"network": {"resolveWildcards": true}})"),
            QStringLiteral("/network/resolveWildcards: expected an array"));
        QCOMPARE(error(R"({"network": {"resolveWildcards": [443]}})"),
            QStringLiteral("/network/resolveWildcards/0: expected a wildcard pattern string (\"*.example.com\")"));
        QCOMPARE(error(R"({"network": {"resolveWildcards": ["*.ok.example", "pypi.org:443"]}})"),
            QStringLiteral("/network/resolveWildcards/1: expected a wildcard pattern (\"*.example.com\", optionally "
                           "with :PORT): names a rule "
                           "lists exactly are looked up anyway"));
        QCOMPARE(error(R"({"network": {"resolveWildcards": ["*.com"]}})").left(32),
            QStringLiteral("/network/resolveWildcards/0: '*."));
    }

    void wildcardsToResolveAccumulateLikeRules()
    {
        auto e = resolve({{QStringLiteral("builtin"), builtinDefaults()},
            {QStringLiteral("preset:package-install"), *preset(QStringLiteral("package-install"))},
            {QStringLiteral("sandbox"),
                json(R"({"network": {"allow": ["*.Example.org"], "resolveWildcards": ["*.EXAMPLE.org."]}})")}});
        QVERIFY2(e, e ? "" : qPrintable(e.error().message));
        QCOMPARE(e->networkResolveWildcards,
            QStringList({QStringLiteral("*.githubusercontent.com:443"), QStringLiteral("*.example.org")}));
        QCOMPARE(e->sources.value(QStringLiteral("/network/resolveWildcards/0")).toString(),
            QStringLiteral("preset:package-install"));
        QCOMPARE(e->sources.value(QStringLiteral("/network/resolveWildcards/1")).toString(), QStringLiteral("sandbox"));
        QCOMPARE(e->network.evaluate(QStringLiteral("a.example.org"), 443).lookupRule, QStringLiteral("*.example.org"));
        // What the preset lets resolve is its own wildcard, on its port.
        QCOMPARE(e->network.evaluate(QStringLiteral("release-assets.githubusercontent.com"), 443).lookupRule,
            QStringLiteral("*.githubusercontent.com:443"));
        QCOMPARE(e->network.evaluate(QStringLiteral("objects.githubusercontent.com"), 443).wildcard, false);
        // Without any, the effective document has no such list.
        auto locked = resolve({{QStringLiteral("builtin"), builtinDefaults()},
            {QStringLiteral("preset:locked"), *preset(QStringLiteral("locked"))}});
        QVERIFY(
            !locked->document.value(QStringLiteral("network")).toObject().contains(QStringLiteral("resolveWildcards")));
    }

    void hostPatternsAreNormalised()
    {
        QCOMPARE(*normaliseHostPattern(QStringLiteral("PyPI.org.")), QStringLiteral("pypi.org"));
        QCOMPARE(*normaliseHostPattern(QStringLiteral("*.Example.COM:443")), QStringLiteral("*.example.com:443"));
        QCOMPARE(*normaliseHostPattern(QStringLiteral("bücher.example")), QStringLiteral("xn--bcher-kva.example"));
        QCOMPARE(*normaliseHostPattern(QStringLiteral("10.0.0.5:8080")), QStringLiteral("10.0.0.5:8080"));
        QCOMPARE(*normaliseHostPattern(QStringLiteral("[::FFFF:169.254.169.254]:80")),
            QStringLiteral("[::ffff:169.254.169.254]:80"));
        QCOMPARE(*normaliseHostPattern(QStringLiteral("*.co.uk.")), QStringLiteral("*.co.uk"));
        QVERIFY(!normaliseHostPattern(QStringLiteral("*.com"))); // a wildcard over a whole top-level domain is refused
        for (const char *bad :
            {"", "*", "*.", "a..b", "-a.example", "a.example:", "a.example:0", "[1.2.3.4]", "[::1", "exa mple.com"})
            QVERIFY2(!normaliseHostPattern(QString::fromUtf8(bad)), bad);
    }

    void layersMergeInOrderAndSayWhereEachValueCameFrom()
    {
        auto e = resolve({{QStringLiteral("builtin"), builtinDefaults()},
            {QStringLiteral("user"), json(R"({"network": {"deny": ["evil.example"]},
                                                            "commands": {"rules": [{"decision": "deny", "command": "curl"}]},
                                                            "limits": {"pids": 100}})")},
            {QStringLiteral("preset:locked"), *preset(QStringLiteral("locked"))},
            {QStringLiteral("sandbox"), json(R"({"network": {"mode": "full", "deny": ["EVIL.example.", "b.example"]},
                                                               "commands": {"default": "deny"},
                                                               "limits": {"pids": 50, "openFiles": 64},
                                                               "tools": {"email.send": {"decision": "ask", "constraints": {"to": "*@example.com"}}}})")}});
        QVERIFY2(e, e ? "" : qPrintable(e.error().message));
        QCOMPARE(e->networkMode, QStringLiteral("full"));
        QCOMPARE(e->sources.value(QStringLiteral("/network/mode")).toString(), QStringLiteral("sandbox"));
        QCOMPARE(e->sources.value(QStringLiteral("/network/unknown")).toString(), QStringLiteral("preset:locked"));
        QCOMPARE(e->networkDeny,
            QStringList({QStringLiteral("evil.example"), QStringLiteral("b.example")})); // merged, deduplicated
        QCOMPARE(e->sources.value(QStringLiteral("/network/deny/0")).toString(), QStringLiteral("user"));
        QCOMPARE(e->sources.value(QStringLiteral("/network/deny/1")).toString(), QStringLiteral("sandbox"));
        QCOMPARE(e->limits.pids, std::optional<uint64_t>(50));
        QCOMPARE(e->limits.openFiles, std::optional<uint64_t>(64));
        QCOMPARE(e->sources.value(QStringLiteral("/limits/pids")).toString(), QStringLiteral("sandbox"));
        QCOMPARE(e->tools.value(QStringLiteral("email.send")).constraints.value(QStringLiteral("to")),
            QStringLiteral("*@example.com"));
        QCOMPARE(e->preset, QStringLiteral("locked"));
        // Command rules accumulate with their layers; the default comes from the top.
        const CommandVerdict curl = e->commands.evaluate({QStringLiteral("curl"), QStringLiteral("x")});
        QCOMPARE(curl.decision, Decision::Deny);
        QCOMPARE(curl.layer, QStringLiteral("user"));
        QCOMPARE(e->commands.evaluate({QStringLiteral("ls")}).layer, QStringLiteral("preset:locked"));
        QCOMPARE(e->commands.evaluate({QStringLiteral("make")}).decision, Decision::Deny); // the sandbox's default
        QCOMPARE(e->sources.value(QStringLiteral("/commands/default")).toString(), QStringLiteral("sandbox"));
    }

    void anInvalidLayerAppliesNothingAndIsNamed()
    {
        auto e = resolve({{QStringLiteral("builtin"), builtinDefaults()},
            {QStringLiteral("user"), json(R"({"network": {"mode": "full"}})")},
            {QStringLiteral("sandbox"), json(R"({"commands": {"rules": [{"decision": "allow", "command": []}]}})")}});
        QVERIFY(!e);
        QCOMPARE(
            e.error().message, QStringLiteral("sandbox policy: /commands/rules/0/command: expected 1 to 64 words"));
    }

    void presetsAreValidAndSayWhatTheyAre()
    {
        QCOMPARE(presetNames(),
            QStringList({QStringLiteral("locked"), QStringLiteral("package-install"), QStringLiteral("open")}));
        for (const QString &name : presetNames()) {
            auto doc = preset(name);
            QVERIFY2(doc, qPrintable(name));
            const Status valid = validate(*doc);
            QVERIFY2(valid, qPrintable(name + QStringLiteral(": ") + (valid ? QString() : valid.error().message)));
            QVERIFY(!doc->value(QStringLiteral("description")).toString().isEmpty());
        }
        QCOMPARE(preset(QStringLiteral("locked"))
                     ->value(QStringLiteral("network"))
                     .toObject()
                     .value(QStringLiteral("mode"))
                     .toString(),
            QStringLiteral("none"));
        QCOMPARE(preset(QStringLiteral("open"))
                     ->value(QStringLiteral("network"))
                     .toObject()
                     .value(QStringLiteral("mode"))
                     .toString(),
            QStringLiteral("full"));
        const QJsonArray allow = preset(QStringLiteral("package-install"))
                                     ->value(QStringLiteral("network"))
                                     .toObject()
                                     .value(QStringLiteral("allow"))
                                     .toArray();
        for (const char *host :
            {"pypi.org:443", "registry.npmjs.org:443", "crates.io:443", "github.com:443", "files.pythonhosted.org:443"})
            QVERIFY2(allow.contains(QJsonValue(QString::fromLatin1(host))), host);
        QCOMPARE(preset(QStringLiteral("nope")).error().code, ErrorCode::NotFound);
    }

    void theUserLayerComesFromItsFileAndABrokenOneRefuses()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("policy.json"));
        auto none = resolveForSandbox({}, {}, file); // no file: no user layer
        QVERIFY(none);
        QCOMPARE(none->preset, QStringLiteral("locked"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"network": {"allow": ["pypi.org"]}})");
        f.close();
        auto user = resolveForSandbox({}, QStringLiteral("open"), file);
        QVERIFY(user);
        QCOMPARE(user->sources.value(QStringLiteral("/network/allow/0")).toString(), QStringLiteral("user"));
        QCOMPARE(user->networkMode, QStringLiteral("full"));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("{ not json");
        f.close();
        auto broken = resolveForSandbox({}, {}, file);
        QVERIFY(!broken);
        QVERIFY2(broken.error().message.contains(QStringLiteral("is not a JSON object")),
            qPrintable(broken.error().message));
    }

    void toolCallsAreHeldToTheirConstraints()
    {
        auto e = resolve({{QStringLiteral("builtin"), builtinDefaults()},
            {QStringLiteral("sandbox"),
                json(R"({"tools": {"email.send": {"decision": "ask", "constraints": {"to": "*@example.com"}},
                                                                          "calendar.read": {"decision": "allow"},
                                                                          "file.read": {"decision": "allow", "constraints": {"path": "/srv/data/\u002a"}}}})")}});
        QVERIFY(e);
        const ToolVerdict ok
            = evaluateTool(*e, QStringLiteral("email.send"), json(R"({"to": "bob@example.com", "body": "hi"})"));
        QCOMPARE(ok.decision, Decision::Ask);
        QCOMPARE(ok.reason, QStringLiteral("email.send is 'ask' for this sandbox (sandbox)"));
        const ToolVerdict outside
            = evaluateTool(*e, QStringLiteral("email.send"), json(R"({"to": "bob@evil.example"})"));
        QCOMPARE(outside.decision, Decision::Deny);
        QCOMPARE(outside.reason, QStringLiteral("email.send: argument 'to' must match '*@example.com' (sandbox)"));
        // Not a string (a list of addresses, a number) or absent: no match, denied.
        QCOMPARE(
            evaluateTool(*e, QStringLiteral("email.send"), json(R"({"to": ["bob@example.com", "x@evil.example"]})"))
                .decision,
            Decision::Deny);
        QCOMPARE(evaluateTool(*e, QStringLiteral("email.send"), json(R"({})")).decision, Decision::Deny);
        QCOMPARE(evaluateTool(*e, QStringLiteral("calendar.read"), json(R"({})")).decision, Decision::Allow);
        // A path constraint cannot be climbed out of.
        // ("\u002a" is "*": moc would read slash-star in a raw string as a comment.)
        QCOMPARE(evaluateTool(*e, QStringLiteral("file.read"), json(R"({"path": "/srv/data/a/b.csv"})")).decision,
            Decision::Allow);
        QCOMPARE(
            evaluateTool(*e, QStringLiteral("file.read"), json(R"({"path": "/srv/data/../../etc/shadow"})")).decision,
            Decision::Deny);
        QCOMPARE(evaluateTool(*e, QStringLiteral("file.read"), json(R"({"path": "/srv/data/x/.."})")).decision,
            Decision::Deny);
        const ToolVerdict unknown = evaluateTool(*e, QStringLiteral("shell.run"), json(R"({})"));
        QCOMPARE(unknown.decision, Decision::Deny);
        QCOMPARE(unknown.reason, QStringLiteral("the policy does not give this sandbox the tool 'shell.run'"));
    }

    void specFlagsAreTheSandboxLayer()
    {
        const QJsonObject layer
            = withSpecFields(json(R"({"network": {"mode": "full", "allow": ["a.example"]}, "limits": {"pids": 5}})"),
                json(R"({"network": "none", "mounts": [], "limits": {"openFiles": 9}})"));
        QCOMPARE(layer.value(QStringLiteral("network")).toObject().value(QStringLiteral("mode")).toString(),
            QStringLiteral("none"));
        QCOMPARE(layer.value(QStringLiteral("network")).toObject().value(QStringLiteral("allow")).toArray().size(), 1);
        QCOMPARE(layer.value(QStringLiteral("limits")).toObject().value(QStringLiteral("pids")).toInt(), 5);
        QCOMPARE(layer.value(QStringLiteral("limits")).toObject().value(QStringLiteral("openFiles")).toInt(), 9);
        QVERIFY(!layer.contains(QStringLiteral("filesystem"))); // no mounts asked
    }
};

QTEST_GUILESS_MAIN(TestPolicy)
#include "tst_policy.moc"
