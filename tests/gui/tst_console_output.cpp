// SPDX-License-Identifier: Apache-2.0
// Output fidelity through the real pipeline (guest, daemon, store, console, CLI): stdout and
// stderr come back in the order they were written, in the console, from `exec` and from `show`;
// a line rewritten with \r leaves one row in its last state; executions get TERM.
#include "GuiTestSettings.h"
#include "MainWindow.h"
#include "OutputView.h"
#include "SandboxConsole.h"
#include "TestHelpers.h"

#include <QLineEdit>
#include <QTest>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestConsoleOutput final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<DaemonClient> m_client;

    // airlockctl with stdout and stderr into one pipe, as a terminal would show them.
    QByteArray merged(const QStringList &arguments) const
    {
        QProcess p;
        p.setProcessEnvironment(m_daemon->environment());
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(binDir() + QStringLiteral("/airlockctl"), args("--no-autostart") + arguments);
        p.waitForFinished(30000);
        return p.readAll();
    }
    // Lines of the console from `from` on, each with the stream its first span came from.
    static QStringList shownLines(OutputView &view, qsizetype from)
    {
        QStringList lines;
        const OutputDocument &doc = view.document();
        for (qsizetype i = from; i < doc.lineCount(); ++i) {
            const StyledLine line = doc.line(i);
            if (!line.text.isEmpty())
                lines.append(
                    (line.spans.value(0).style.stderrStream ? QStringLiteral("2:") : QStringLiteral("1:")) + line.text);
        }
        return lines;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(startConsoleTest(m_daemon, m_client));
        QCOMPARE(m_daemon->create(args("--name", "fidelity")), QStringLiteral("fidelity"));
    }
    void cleanupTestCase()
    {
        m_client.reset();
        m_daemon.reset();
    }

    // Each write a moment after the last: the order is the program's, and every part of the
    // path keeps it (the guest's reads, the daemon, the store, the console and the CLI).
    void stdoutAndStderrKeepTheirOrderEverywhere()
    {
        const QString script = QStringLiteral("echo out1; sleep 0.05; echo err1 >&2; sleep 0.05; echo out2; sleep "
                                              "0.05; echo err2 >&2; sleep 0.05; echo out3");
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("fidelity")); }, 5000));
        QVERIFY(QTest::qWaitFor([&] { return !window.console()->isLoading(); }, 5000));
        const qsizetype before = window.outputView()->document().lineCount();
        window.commandLine()->setText(script);
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        const QStringList expected{QStringLiteral("1:out1"), QStringLiteral("2:err1"), QStringLiteral("1:out2"),
            QStringLiteral("2:err2"), QStringLiteral("1:out3")};
        QVERIFY2(QTest::qWaitFor([&] { return shownLines(*window.outputView(), before).mid(1, 5) == expected; }, 10000),
            qPrintable(shownLines(*window.outputView(), before).join(QLatin1Char('|'))));

        // `exec` writes each part to its stream as it comes.
        QCOMPARE(merged(args("exec", "fidelity", "--", "sh", "-c") + QStringList{script}),
            QByteArray("out1\nerr1\nout2\nerr2\nout3\n"));
        // `show` replays the stored execution in the same order.
        const QJsonArray executions = jsonObject(m_daemon->ctl(args("history", "--sandbox", "fidelity", "--json")).out)
                                          .value(QStringLiteral("executions"))
                                          .toArray();
        const int newest = executions.first().toObject().value(QStringLiteral("exec")).toInt();
        QCOMPARE(merged(args("show", QStringLiteral("fidelity:%1").arg(newest), "--raw")),
            QByteArray("out1\nerr1\nout2\nerr2\nout3\n"));
        // Selected again, the console shows it from the store: the same order.
        QVERIFY(window.selectSandbox(QStringLiteral("fidelity")));
        window.console()->show({});
        window.console()->show(window.currentSandboxId());
        QVERIFY(QTest::qWaitFor([&] { return !window.console()->isLoading(); }, 5000));
        const QStringList replayed = shownLines(*window.outputView(), 0);
        const qsizetype at = replayed.lastIndexOf(QStringLiteral("1:out1"));
        QVERIFY2(at >= 0 && replayed.mid(at, 5) == expected, qPrintable(replayed.join(QLatin1Char('|'))));
    }

    void aProgressBarLeavesOneRowInItsLastState()
    {
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("fidelity")); }, 5000));
        QVERIFY(QTest::qWaitFor([&] { return !window.console()->isLoading(); }, 5000));
        const qsizetype before = window.outputView()->document().lineCount();
        window.commandLine()->setText(QStringLiteral("for p in 10 40 70 100; do printf '\\rdownloading %3d%%' $p; "
                                                     "sleep 0.05; done; printf '\\n\\033]52;c;aGk=\\007\\rdone\\n'"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        QVERIFY2(
            QTest::qWaitFor(
                [&] { return shownLines(*window.outputView(), before).contains(QStringLiteral("1:done")); }, 10000),
            qPrintable(shownLines(*window.outputView(), before).join(QLatin1Char('|'))));
        const QStringList lines = shownLines(*window.outputView(), before);
        QCOMPARE(lines.count(QStringLiteral("1:downloading 100%")), 1); // one row, its last state
        QVERIFY(!lines.join(QLatin1Char('|')).contains(QLatin1String(" 10%")));
        QVERIFY(!lines.join(QLatin1Char('|'))
                     .contains(QLatin1String("]52"))); // the inert clipboard write went whole, not in part
    }

    void executionsAreToldTheyMayUseColour()
    {
        const CliResult term = m_daemon->ctl(args("exec", "fidelity", "--", "sh", "-c",
            "echo $TERM; ls --color=auto / >/dev/null; [ -t 1 ] || echo not-a-tty"));
        QCOMPARE(term.out, QByteArray("xterm-256color\nnot-a-tty\n"));
        // NO_COLOR is the caller's to set, and reaches the program.
        QCOMPARE(
            m_daemon->ctl(args("exec", "fidelity", "--env", "NO_COLOR=1", "--", "sh", "-c", "echo ${NO_COLOR:-unset}"))
                .out,
            QByteArray("1\n"));
    }
};

QTEST_MAIN(TestConsoleOutput)
#include "tst_console_output.moc"
