// SPDX-License-Identifier: Apache-2.0
// Parsing of the values people type (sizes, durations, names, mounts) and of sandbox specs.
#include "model/DisplayText.h"
#include "model/ExecRequest.h"
#include "model/SandboxSpec.h"
#include "model/Units.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

#include <ctime>

using namespace airlock;

class TestUnits final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aMomentReadsTheSameEverywhereWithItsZone()
    {
        // Fixed zone for the test: the abbreviation is the machine's.
        const QByteArray before = qgetenv("TZ");
        qputenv("TZ", "UTC");
        tzset();
        QCOMPARE(display::timestamp(1'796'422'062'041), QStringLiteral("2026-12-04 22:07:42 UTC"));
        QCOMPARE(display::timestamp(1'796'422'062'041, true), QStringLiteral("2026-12-04 22:07:42.041 UTC"));
        qputenv("TZ", "CET-1"); // a POSIX rule: no time zone database needed
        tzset();
        QCOMPARE(display::timestamp(1'796'422'062'041), QStringLiteral("2026-12-04 23:07:42 CET"));
        if (before.isEmpty())
            qunsetenv("TZ");
        else
            qputenv("TZ", before);
        tzset();
    }
    void bytes_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qulonglong>("expected"); // 0 = must be rejected
        QTest::newRow("plain bytes") << "4096" << 4096ull;
        QTest::newRow("M is mebibytes") << "512M" << 512ull * 1024 * 1024;
        QTest::newRow("lower-case g") << "1g" << 1024ull * 1024 * 1024;
        QTest::newRow("KiB spelled out") << "64KiB" << 64ull * 1024;
        QTest::newRow("zero is not a limit") << "0" << 0ull;
        QTest::newRow("negative numbers are refused") << "-5M" << 0ull;
        QTest::newRow("unknown unit") << "5X" << 0ull;
        QTest::newRow("overflow is refused") << "99999999999999T" << 0ull;
        QTest::newRow("empty") << "" << 0ull;
        QTest::newRow("a decimal size") << "1.5G" << 1536ull * 1024 * 1024;
        QTest::newRow("a decimal of kibibytes rounds to a byte") << "0.5K" << 512ull;
        QTest::newRow("an exponent") << "1e6" << 1000000ull;
        QTest::newRow("an exponent beyond 64 bits is too large") << "1e30" << 0ull;
        QTest::newRow("a decimal comma is not a number") << "1,5G" << 0ull;
        QTest::newRow("less than a byte is nothing") << "0.1" << 0ull;
    }
    void bytes()
    {
        QFETCH(QString, text);
        QFETCH(qulonglong, expected);
        const auto r = units::parseBytes(text);
        QCOMPARE(r.ok(), expected != 0);
        if (r)
            QCOMPARE(*r, expected);
        else
            QVERIFY2(r.error().message.contains(QStringLiteral("512M")), qPrintable(r.error().message));
    }

    void durations_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qulonglong>("ms");
        QTest::newRow("seconds by default") << "30" << 30000ull;
        QTest::newRow("milliseconds") << "250ms" << 250ull;
        QTest::newRow("minutes") << "5m" << 300000ull;
        QTest::newRow("hours") << "1h" << 3600000ull;
        QTest::newRow("words are refused") << "soon" << 0ull;
        QTest::newRow("days") << "1d" << 86400000ull;
        QTest::newRow("a decimal of hours") << "1.5h" << 5400000ull;
        QTest::newRow("half a second") << "0.5" << 500ull;
        QTest::newRow("a negative duration") << "-1s" << 0ull;
    }

    void counts_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qulonglong>("count");
        QTest::newRow("a whole number") << "256" << 256ull;
        QTest::newRow("an exponent") << "1e9" << 1000000000ull;
        QTest::newRow("a fraction is not a count") << "1.5" << 0ull;
        QTest::newRow("a negative count") << "-1" << 0ull;
        QTest::newRow("a unit is not a count") << "5k" << 0ull;
    }
    void counts()
    {
        QFETCH(QString, text);
        QFETCH(qulonglong, count);
        const auto r = units::parseCount(text);
        QCOMPARE(r.ok(), count != 0);
        if (r)
            QCOMPARE(*r, count);
    }

    // What the kernel would refuse when the limit is applied is refused here, with the range.
    void limitsOutsideTheirRangeAreInputErrors_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("message"); // empty: accepted
        QTest::newRow("pids above PID_MAX_LIMIT") << QByteArray(R"({"limits":{"pids":1000000000}})")
                                                  << "/limits/pids: 1000000000 is out of range: from 2 to 4194304";
        QTest::newRow("pids at PID_MAX_LIMIT") << QByteArray(R"({"limits":{"pids":4194304}})") << "";
        QTest::newRow("memory below 8 MiB") << QByteArray(R"({"limits":{"memoryBytes":1024}})")
                                            << "/limits/memoryBytes: 1.0 KiB is out of range: from 8.0 MiB to 4096 TiB";
        QTest::newRow("memory beyond what JSON carries")
            << QByteArray(R"({"limits":{"memoryBytes":1e30}})")
            << "/limits/memoryBytes: expected a whole number from 8.0 MiB to 4096 TiB";
        QTest::newRow("open files above fs.nr_open") << QByteArray(R"({"limits":{"openFiles":2000000}})")
                                                     << "/limits/openFiles: 2000000 is out of range: from 1 to 1048576";
        QTest::newRow("a wall time of two years") << QByteArray(R"({"limits":{"wallMs":63072000000}})")
                                                  << "/limits/wallMs: 730d is out of range: from 1ms to 365d";
    }
    void limitsOutsideTheirRangeAreInputErrors()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, message);
        const auto spec = SandboxSpec::fromJson(QJsonDocument::fromJson(json).object());
        QCOMPARE(spec.ok(), message.isEmpty());
        if (!spec) {
            QCOMPARE(spec.error().code, ErrorCode::InvalidArgument);
            QCOMPARE(spec.error().message, message);
        }
    }
    void durations()
    {
        QFETCH(QString, text);
        QFETCH(qulonglong, ms);
        const auto r = units::parseDurationMs(text);
        QCOMPARE(r.ok(), ms != 0);
        if (r)
            QCOMPARE(*r, ms);
    }

    void names_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("valid");
        QTest::newRow("letters and digits") << "build-7" << true;
        QTest::newRow("dots and underscores") << "a.b_c" << true;
        QTest::newRow("upper case is refused") << "Build" << false;
        QTest::newRow("a slash is refused") << "a/b" << false;
        QTest::newRow("leading dash is refused (looks like an option)") << "-rf" << false;
        QTest::newRow("64 characters are too many") << QString(64, QLatin1Char('a')) << false;
        QTest::newRow("empty") << "" << false;
        QTest::newRow("a trailing newline is refused") << "build\n" << false;
        QTest::newRow("hex digits alone look like an id") << "cafe" << false;
        QTest::newRow("twelve hex digits look like an id") << "3fa9c2d1e0b7" << false;
        QTest::newRow("three hex digits are too short for an id prefix") << "abc" << true;
        QTest::newRow("hex with a dash is a name") << "cafe-1" << true;
    }
    void names()
    {
        QFETCH(QString, name);
        QFETCH(bool, valid);
        const Status s = validateSandboxName(name);
        QCOMPARE(s.ok(), valid);
        if (!s)
            QCOMPARE(s.error().code, ErrorCode::InvalidArgument);
    }

    void mounts_data()
    {
        QTest::addColumn<QString>("arg");
        QTest::addColumn<QString>("error"); // empty = accepted
        QTest::newRow("read-only by default") << "/usr/share:/data"
                                              << "";
        QTest::newRow("explicit rw") << "/tmp:/scratch:rw"
                                     << "";
        QTest::newRow("relative host path") << "usr:/data"
                                            << "absolute host path";
        QTest::newRow("missing host path") << "/does/not/exist:/data"
                                           << "does not exist";
        QTest::newRow("over the workspace") << "/tmp:/workspace"
                                            << "reserved";
        QTest::newRow("over /proc") << "/tmp:/proc/x"
                                    << "reserved";
        QTest::newRow("dot-dot in the target") << "/tmp:/data/../etc"
                                               << "clean absolute path";
        QTest::newRow("unknown mode") << "/tmp:/data:rx"
                                      << "expected ro, rw or cow";
    }
    void mounts()
    {
        QFETCH(QString, arg);
        QFETCH(QString, error);
        const auto r = parseMountArg(arg);
        QCOMPARE(r.ok(), error.isEmpty());
        if (!r)
            QVERIFY2(r.error().message.contains(error), qPrintable(r.error().message));
        else
            QCOMPARE(r->writable, arg.endsWith(QLatin1String(":rw")));
    }

    void specErrorsNameTheField_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("pointer");
        QTest::newRow("unknown top-level field") << QByteArray(R"({"netwrk":"none"})") << "/netwrk";
        QTest::newRow("bad network mode") << QByteArray(R"({"network":"some"})") << "/network";
        QTest::newRow("limit that is not a number") << QByteArray(R"({"limits":{"pids":"many"}})") << "/limits/pids";
        QTest::newRow("fractional limit") << QByteArray(R"({"limits":{"openFiles":1.5}})") << "/limits/openFiles";
        QTest::newRow("unknown limit") << QByteArray(R"({"limits":{"gpus":1}})") << "/limits/gpus";
        QTest::newRow("pids below two") << QByteArray(R"({"limits":{"pids":1}})") << "/limits/pids";
        QTest::newRow("mount without a path") << QByteArray(R"({"mounts":[{"host":"/tmp"}]})") << "/mounts/0";
    }
    void specErrorsNameTheField()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, pointer);
        const auto r = SandboxSpec::fromJson(QJsonDocument::fromJson(json).object());
        QVERIFY(!r);
        QCOMPARE(r.error().code, ErrorCode::InvalidArgument);
        QVERIFY2(r.error().message.startsWith(pointer + QLatin1Char(':')), qPrintable(r.error().message));
    }

    void specRoundTrips()
    {
        SandboxSpec spec;
        spec.name = QStringLiteral("rt");
        spec.network = NetworkMode::Full;
        spec.mounts.append({QStringLiteral("/usr/share"), QStringLiteral("/data"), true});
        spec.limits.memoryBytes = 64ull << 20;
        spec.limits.wallMs = 1500;
        const auto back = SandboxSpec::fromJson(spec.toJson());
        QVERIFY(back);
        QVERIFY(*back == spec);
    }

    void execRequestsAreBounded_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("pointer");
        QTest::newRow("no argv") << QByteArray(R"({})") << "/argv";
        QTest::newRow("empty program") << QByteArray(R"({"argv":[""]})") << "/argv/0";
        QTest::newRow("argument that is not a string") << QByteArray(R"({"argv":["ls",3]})") << "/argv/1";
        QTest::newRow("relative cwd") << QByteArray(R"({"argv":["ls"],"cwd":"tmp"})") << "/cwd";
        QTest::newRow("bad variable name") << QByteArray(R"({"argv":["ls"],"env":{"A-B":"x"}})") << "/env/A-B";
        QTest::newRow("timeout of zero") << QByteArray(R"({"argv":["ls"],"timeoutMs":0})") << "/timeoutMs";
    }
    void execRequestsAreBounded()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, pointer);
        const auto r = ExecRequest::fromJson(QJsonDocument::fromJson(json).object());
        QVERIFY(!r);
        QVERIFY2(r.error().message.startsWith(pointer + QLatin1Char(':')), qPrintable(r.error().message));
    }

    void hugeArgvIsRefused()
    {
        QJsonArray argv{QStringLiteral("echo")};
        argv.append(QString(300 * 1024, QLatin1Char('x')));
        const auto r = ExecRequest::fromJson({{QStringLiteral("argv"), argv}});
        QVERIFY(!r);
        QVERIFY(r.error().message.contains(QStringLiteral("exceed")));
    }

    void environmentHasOnlyDefaultsAndRequest()
    {
        qputenv("AIRLOCK_TEST_CANARY", "leak");
        auto r = ExecRequest::fromJson({{QStringLiteral("argv"), QJsonArray{QStringLiteral("env")}},
            {QStringLiteral("env"),
                QJsonObject{
                    {QStringLiteral("HOME"), QStringLiteral("/tmp")}, {QStringLiteral("FOO"), QStringLiteral("1")}}}});
        QVERIFY(r);
        const QStringList env = r->effectiveEnvironment();
        QVERIFY(env.contains(QStringLiteral("HOME=/tmp")));
        QVERIFY(env.contains(QStringLiteral("FOO=1")));
        QVERIFY(!env.join(QLatin1Char(' ')).contains(QStringLiteral("leak")));
        QCOMPARE(env.filter(QStringLiteral("HOME=")).size(), 1);
    }
};

QTEST_GUILESS_MAIN(TestUnits)
#include "tst_units.moc"
