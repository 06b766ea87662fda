// SPDX-License-Identifier: Apache-2.0
// Tool declarations and the JSON Schema subset that checks their arguments: what is accepted,
// and the exact error for what is not (a constraint Airlock would not enforce is refused outright).
#include "tools/JsonSchema.h"
#include "tools/ToolRegistry.h"

#include <QJsonDocument>
#include <QTest>

using namespace airlock;
using namespace airlock::tools;

namespace {
QJsonObject obj(const char *json)
{
    return QJsonDocument::fromJson(json).object();
}
QString declarationError(const char *json)
{
    auto r = ToolRegistry::parse(obj(json), QStringLiteral("t.json"));
    return r ? QString() : r.error().message;
}
} // namespace

class TestToolDeclarations final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void valuesAreValidatedWithPointers_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<QString>("error");
        QTest::newRow("ok") << QByteArray(R"({"n": 3, "tags": ["a"], "mode": "fast"})") << QString();
        QTest::newRow("integer") << QByteArray(R"({"n": 3.5})") << QStringLiteral("/n: expected integer, got number");
        QTest::newRow("minimum") << QByteArray(R"({"n": 0})") << QStringLiteral("/n: expected at least 1");
        QTest::newRow("enum") << QByteArray(R"({"n": 1, "mode": "slow"})")
                              << QStringLiteral("/mode: expected one of [\"fast\",\"safe\"]");
        QTest::newRow("items") << QByteArray(R"({"n": 1, "tags": ["a", 7]})")
                               << QStringLiteral("/tags/1: expected string, got number");
        QTest::newRow("maxItems") << QByteArray(R"({"n": 1, "tags": ["a", "b", "c"]})")
                                  << QStringLiteral("/tags: expected at most 2 items");
        QTest::newRow("maxLength counts characters")
            << QByteArray(R"({"n": 1, "tags": ["\u00e9\u00e9\u00e9\u00e9\u00e9"]})") << QString();
        QTest::newRow("too long") << QByteArray(R"({"n": 1, "tags": ["abcdef"]})")
                                  << QStringLiteral("/tags/0: expected at most 5 characters");
        QTest::newRow("key with a slash")
            << QByteArray(R"({"n": 1, "a/b": 1})")
            << QStringLiteral("/a~1b: is not an argument of this tool (expected: mode, n, tags)");
    }
    void valuesAreValidatedWithPointers()
    {
        QFETCH(QByteArray, value);
        QFETCH(QString, error);
        const QJsonObject schema
            = obj(R"({"type": "object", "required": ["n"], "additionalProperties": false, "properties": {
            "n": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 5}},
            "mode": {"enum": ["fast", "safe"]}}})");
        QVERIFY(JsonSchema::check(schema));
        const Status s = JsonSchema::validate(schema, QJsonDocument::fromJson(value).object());
        QCOMPARE(s ? QString() : s.error().message, error);
    }

    // A pattern means what JSON Schema (ECMA-262) says: "$" is the very end, not before a final
    // newline as in PCRE; escaped and bracketed dollars are literal.
    void patternsAnchorAsJsonSchemaSays_data()
    {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("value");
        QTest::addColumn<bool>("matches");
        QTest::newRow("plain") << "^[a-z]+$"
                               << "abc" << true;
        QTest::newRow("a trailing newline") << "^[a-z]+$"
                                            << "abc\n"
                                            << false;
        QTest::newRow("an escaped dollar") << "^a\\$$"
                                           << "a$" << true;
        QTest::newRow("a dollar in a class") << "^[$]+$"
                                             << "$$" << true;
        QTest::newRow("unanchored") << "b"
                                    << "abc" << true;
    }
    void patternsAnchorAsJsonSchemaSays()
    {
        QFETCH(QString, pattern);
        QFETCH(QString, value);
        QFETCH(bool, matches);
        const QJsonObject schema{
            {QStringLiteral("type"), QStringLiteral("string")}, {QStringLiteral("pattern"), pattern}};
        QVERIFY(JsonSchema::check(schema));
        QCOMPARE(JsonSchema::validate(schema, value).ok(), matches);
    }

    void unenforcedKeywordsAreRefused()
    {
        const Status s = JsonSchema::check(
            obj(R"({"type": "object", "properties": {"x": {"type": "string", "format": "email"}}})"));
        QVERIFY(!s);
        QVERIFY2(s.error().message.startsWith(
                     QStringLiteral("schema /properties/x/format: 'format' is not a keyword Airlock enforces")),
            qPrintable(s.error().message));
        QVERIFY(!JsonSchema::check(obj("{\"type\": \"object\", \"properties\": {\"x\": {\"pattern\": \"[\"}}}")));
        QVERIFY(!JsonSchema::check(obj(R"({"type": "strnig"})")));
    }

    void declarationsAreCheckedWhereTheyCouldGoWrong_data()
    {
        QTest::addColumn<QByteArray>("declaration");
        QTest::addColumn<QString>("error");
        const QByteArray head
            = R"({"name": "t", "description": "d", "arguments": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}, )";
        QTest::newRow("ok command") << head + R"("command": {"argv": ["/bin/echo", "--", "{a}"]}})" << QString();
        QTest::newRow("ok http") << head
                + R"("http": {"url": "http://127.0.0.1:1/x/{a}?q={a}", "headers": {"K": "{secret:KEY}"}, "body": {"b": "{b}"}}})"
                                 << QString();
        QTest::newRow("relative program")
            << head + R"("command": {"argv": ["echo", "{a}"]}})"
            << QStringLiteral("t.json: /command/argv: expected a program by absolute path, then its arguments");
        QTest::newRow("placeholder inside a word")
            << head + R"("command": {"argv": ["/bin/echo", "--path={a}"]}})"
            << QStringLiteral("t.json: /command/argv/1: a placeholder must be a whole argument, like \"{path}\", and "
                              "not the program");
        QTest::newRow("optional argument in argv")
            << head + R"("command": {"argv": ["/bin/echo", "{b}"]}})"
            << QStringLiteral("t.json: /command/argv/1: {b} must name a required argument");
        QTest::newRow("secret in argv")
            << head + R"("command": {"argv": ["/bin/echo", "{secret:KEY}"]}})"
            << QStringLiteral(
                   "t.json: /command/argv/1: {secret:NAME} goes in a command's env or a request's headers only");
        QTest::newRow("argument as host")
            << head + R"("http": {"url": "http://{a}/x"}})"
            << QStringLiteral("t.json: /http/url: arguments may fill the path and query, never the host");
        QTest::newRow("two executors") << head + R"("command": {"argv": ["/bin/true"]}, "http": {"url": "http://x/"}})"
                                       << QStringLiteral(
                                              "t.json: /: expected exactly one executor: \"command\" or \"http\"");
        QTest::newRow("not an object schema") << QByteArray(
            R"({"name": "t", "description": "d", "arguments": {"type": "string"}, "command": {"argv": ["/bin/true"]}})")
                                              << QStringLiteral(
                                                     "t.json: /arguments: expected a JSON Schema of type \"object\"");
        QTest::newRow("file url") << head + R"("http": {"url": "file:///etc/passwd"}})"
                                  << QStringLiteral("t.json: /http/url: expected an http:// or https:// URL");
    }
    void declarationsAreCheckedWhereTheyCouldGoWrong()
    {
        QFETCH(QByteArray, declaration);
        QFETCH(QString, error);
        QCOMPARE(declarationError(declaration.constData()), error);
    }

    void theShippedExamplesLoad()
    {
        ToolRegistry registry;
        QCOMPARE(registry.load({QStringLiteral(AIRLOCK_SOURCE_DIR "/resources/tools")}), QStringList());
        QVERIFY(registry.find(QStringLiteral("package.version")));
        QVERIFY(registry.find(QStringLiteral("email.send")));
    }
};

QTEST_GUILESS_MAIN(TestToolDeclarations)
#include "tst_tool_declarations.moc"
