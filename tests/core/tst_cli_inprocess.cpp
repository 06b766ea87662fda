// SPDX-License-Identifier: Apache-2.0
// airlockctl's commands run in-process, on streams of the test's own: what they print and the
// exit code are exactly what the installed program prints and returns for the same arguments
// (none of these rows reaches a daemon).
#include "Cli.h"
#include "TestDaemon.h"
#include "util/Version.h"

#include <QProcess>
#include <QTest>

using namespace airlock;

namespace {
struct Ran {
    int code = -1;
    QString out, err;
};

Ran inProcess(const QStringList &args)
{
    Ran ran;
    QTextStream out(&ran.out), err(&ran.err);
    ran.code = cli::runAirlockctl(args, out, err);
    out.flush();
    err.flush();
    return ran;
}

Ran asProgram(const QStringList &args)
{
    QProcess p;
    p.start(test::binDir() + QStringLiteral("/airlockctl"), args);
    p.closeWriteChannel();
    Ran ran;
    if (!p.waitForFinished(30000))
        return ran;
    ran.code = p.exitCode();
    ran.out = QString::fromUtf8(p.readAllStandardOutput());
    ran.err = QString::fromUtf8(p.readAllStandardError());
    return ran;
}
} // namespace

class TestCliInProcess final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void saysItsVersion()
    {
        const Ran ran = inProcess({QStringLiteral("--version")});
        QCOMPARE(ran.code, 0);
        QCOMPARE(ran.out, QStringLiteral("airlockctl %1\n").arg(version()));
        QCOMPARE(ran.err, QString());
    }

    void refusesAnUnknownOption()
    {
        const Ran ran = inProcess({QStringLiteral("--frobnicate"), QStringLiteral("ls")});
        QCOMPARE(ran.code, 2);
        QCOMPARE(ran.out, QString());
        QCOMPARE(ran.err, QStringLiteral("airlockctl: unknown option --frobnicate (see 'airlockctl --help')\n"));
    }

    void refusesAnArgumentACommandDoesNotTake()
    {
        const Ran ran = inProcess({QStringLiteral("create"), QStringLiteral("extra")});
        QCOMPARE(ran.code, 2);
        QCOMPARE(ran.out, QString());
        QCOMPARE(ran.err, QStringLiteral("airlockctl: create takes no arguments; use --name\n"));
    }

    void saysTheSameAsTheProgram_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("help lists the commands") << QStringList{QStringLiteral("help")};
        QTest::newRow("no command is a usage error with the help") << QStringList{};
        QTest::newRow("a command's own help") << QStringList{QStringLiteral("exec"), QStringLiteral("--help")};
        QTest::newRow("an unknown command") << QStringList{QStringLiteral("frobnicate")};
        QTest::newRow("an unknown option of a command")
            << QStringList{QStringLiteral("ls"), QStringLiteral("--frobnicate")};
        QTest::newRow("a bad limit names its flag")
            << QStringList{QStringLiteral("create"), QStringLiteral("--memory"), QStringLiteral("lots")};
        QTest::newRow("a bad limit, as JSON") << QStringList{
            QStringLiteral("--json"), QStringLiteral("create"), QStringLiteral("--pids"), QStringLiteral("1")};
        QTest::newRow("the manual page") << QStringList{QStringLiteral("--man")};
    }
    void saysTheSameAsTheProgram()
    {
        QFETCH(QStringList, args);
        const Ran program = asProgram(args);
        const Ran ran = inProcess(args);
        QCOMPARE(ran.code, program.code);
        QCOMPARE(ran.out, program.out);
        QCOMPARE(ran.err, program.err);
    }
};

QTEST_GUILESS_MAIN(TestCliInProcess)
#include "tst_cli_inprocess.moc"
