// SPDX-License-Identifier: Apache-2.0
// Output is data: what sandbox output may do to the terminal that shows it, and how untrusted
// text (an argv) is shown so that nothing in it is hidden from the person reading it.
#include "model/DisplayText.h"
#include "model/TerminalFilter.h"

#include <QTest>

using namespace airlock;

class TestTerminalFilter final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sequences_data()
    {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QByteArray>("shown");
        QTest::newRow("plain text and line endings pass") << QByteArray("a b\tc\r\n") << QByteArray("a b\tc\r\n");
        QTest::newRow("SGR colours pass") << QByteArray("\x1b[1;31mred\x1b[0m") << QByteArray("\x1b[1;31mred\x1b[0m");
        QTest::newRow("OSC 52 clipboard write is inert")
            << QByteArray("\x1b]52;c;ZXZpbA==\x07") << QByteArray("\\x1b]52;c;ZXZpbA==\\x07");
        QTest::newRow("OSC 8 hyperlink is inert")
            << QByteArray("\x1b]8;;http://x\x1b\\") << QByteArray("\\x1b]8;;http://x\\x1b\\");
        QTest::newRow("window title is inert") << QByteArray("\x1b]0;owned\x07") << QByteArray("\\x1b]0;owned\\x07");
        QTest::newRow("cursor movement is inert") << QByteArray("\x1b[2J\x1b[H") << QByteArray("\\x1b[2J\\x1b[H");
        QTest::newRow("device status query is inert") << QByteArray("\x1b[6n") << QByteArray("\\x1b[6n");
        QTest::newRow("private mode SGR look-alike is inert")
            << QByteArray("\x1b[?1049h") << QByteArray("\\x1b[?1049h");
        QTest::newRow("NUL, BEL and backspace are visible")
            << QByteArray("a\0b\x07\x08", 5) << QByteArray("a\\x00b\\x07\\x08");
        QTest::newRow("valid UTF-8 passes") << QByteArray("gr\xc3\xbc\xc3\x9f \xe2\x9c\x93 \xf0\x9f\x99\x82")
                                            << QByteArray("gr\xc3\xbc\xc3\x9f \xe2\x9c\x93 \xf0\x9f\x99\x82");
        QTest::newRow("C1 CSI in UTF-8 is inert") << QByteArray("\xc2\x9b"
                                                                "2J")
                                                  << QByteArray("\\xc2\\x9b2J");
        QTest::newRow("a raw 8-bit CSI byte is inert") << QByteArray("\x9b"
                                                                     "2J")
                                                       << QByteArray("\\x9b2J");
        QTest::newRow("invalid UTF-8 is visible") << QByteArray("\xff\xc3(") << QByteArray("\\xff\\xc3(");
        QTest::newRow("an overlong slash is visible") << QByteArray("\xc0\xaf") << QByteArray("\\xc0\\xaf");
        QTest::newRow("a lone ESC before text") << QByteArray("\x1bX") << QByteArray("\\x1bX");
    }
    void sequences()
    {
        QFETCH(QByteArray, input);
        QFETCH(QByteArray, shown);
        TerminalFilter f;
        QCOMPARE(f.filter(input) + f.finish(), shown);
        // Byte by byte gives the same result: sequences split across chunks are recognised.
        TerminalFilter g;
        QByteArray split;
        for (char c : input)
            split += g.filter(QByteArrayView(&c, 1));
        QCOMPARE(split + g.finish(), shown);
    }

    // The fleet view's "last output": what a terminal's last row with something on it shows.
    void theLastLine_data()
    {
        QTest::addColumn<QByteArray>("tail");
        QTest::addColumn<QString>("line");
        QTest::newRow("the last of several lines") << QByteArray("one\ntwo\n") << QStringLiteral("two");
        QTest::newRow("a line still being written counts")
            << QByteArray("one\nPassword: ") << QStringLiteral("Password:");
        QTest::newRow("blank lines after it are skipped") << QByteArray("done\n\n  \n") << QStringLiteral("done");
        QTest::newRow("colours are dropped")
            << QByteArray("\x1b[1;32mok\x1b[0m 3 passed\n") << QStringLiteral("ok 3 passed");
        QTest::newRow("a progress bar shows its last state")
            << QByteArray(" 10%\r 55%\r100% done\n") << QStringLiteral("100% done");
        QTest::newRow("a carriage return at the end keeps what was written")
            << QByteArray("downloading 40%\r") << QStringLiteral("downloading 40%");
        QTest::newRow("a clipboard write is shown inert, never obeyed")
            << QByteArray("x\x1b]52;c;ZXZpbA==\x07y\n") << QStringLiteral("x\\x1b]52;c;ZXZpbA==\\x07y");
        QTest::newRow("a character cut off at the start is dropped")
            << QByteArray("\xa9t\xc3\xa9\n") << QStringLiteral("t\u00e9");
        QTest::newRow("invalid UTF-8 is visible") << QByteArray("bad\xff\n") << QStringLiteral("bad\\xff");
        QTest::newRow("tabs are spaces") << QByteArray("a\tb\n") << QStringLiteral("a b");
        QTest::newRow("nothing printable") << QByteArray("\n\r\n") << QString();
    }
    void theLastLine()
    {
        QFETCH(QByteArray, tail);
        QFETCH(QString, line);
        QCOMPARE(lastOutputLine(tail), line);
    }

    void anIncompleteSequenceAtTheEndIsShown()
    {
        TerminalFilter f;
        QCOMPARE(f.filter("ok\x1b[31"), QByteArray("ok"));
        QCOMPARE(f.finish(), QByteArray("\\x1b[31"));
    }

    void nothingUnsafeSurvivesAnyInput()
    {
        // Every byte pair and triple: the output never holds ESC except in "ESC [ params m".
        for (int a = 0; a < 256; ++a)
            for (int b = 0; b < 256; b += 3) {
                const char in[] = {char(0x1b), char(a), char(b), 'm'};
                TerminalFilter f;
                const QByteArray out = f.filter(QByteArrayView(in, 4)) + f.finish();
                for (qsizetype i = out.indexOf('\x1b'); i >= 0; i = out.indexOf('\x1b', i + 1)) {
                    const qsizetype end = out.indexOf('m', i);
                    QVERIFY2(end > i && out.at(i + 1) == '[', out.toHex().constData());
                    for (qsizetype k = i + 2; k < end; ++k)
                        QVERIFY2(QByteArray("0123456789;:").contains(out.at(k)), out.toHex().constData());
                }
                QVERIFY(!out.contains('\x07') && !out.contains('\0'));
            }
    }

    void escapedByCodePoint_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("shown");
        QTest::newRow("plain and accented text passes")
            << QStringLiteral("git push \u00e9t\u00e9 \u4e2d") << QStringLiteral("git push \u00e9t\u00e9 \u4e2d");
        QTest::newRow("an emoji passes") << QString::fromUcs4(U"ok \U0001F600") << QString::fromUcs4(U"ok \U0001F600");
        QTest::newRow("controls") << QStringLiteral("a\x1b[2Jb\t") << QStringLiteral("a\\x1b[2Jb\\x09");
        QTest::newRow("bidi override") << QStringLiteral("\u202etxt.exe") << QStringLiteral("\\u{202e}txt.exe");
        // Tag characters spell hidden ASCII ("rm" here) that some models read: two UTF-16 units each.
        QTest::newRow("tag characters, one escape each")
            << QString::fromUcs4(U"ls\U000E0072\U000E006D") << QStringLiteral("ls\\u{e0072}\\u{e006d}");
        QTest::newRow("zero-width joiner and space")
            << QStringLiteral("a\u200db\u200bc") << QStringLiteral("a\\u{200d}b\\u{200b}c");
        QTest::newRow("spaces other than the space")
            << QStringLiteral("rm\u00a0-rf\u3000/") << QStringLiteral("rm\\xa0-rf\\u{3000}/");
        QTest::newRow("fillers and variation selectors")
            << QString::fromUcs4(U"a\u3164b\uFE0Fc\U000E0100") << QStringLiteral("a\\u{3164}b\\u{fe0f}c\\u{e0100}");
        QTest::newRow("unassigned") << QString::fromUcs4(U"x\U000E0FFF") << QStringLiteral("x\\u{e0fff}");
        QTest::newRow("invisible combining marks")
            << QStringLiteral("r\u034fm \u17b4x") << QStringLiteral("r\\u{034f}m \\u{17b4}x");
        QTest::newRow("private use") << QString::fromUcs4(U"a\U000F0000") << QStringLiteral("a\\u{f0000}");
        // Between right-to-left letters, `>` and numbers are drawn the other way round.
        QTest::newRow("right-to-left letters")
            << QStringLiteral("cat \u05d0 > \u05d1") << QStringLiteral("cat \\u{05d0} > \\u{05d1}");
        QTest::newRow("what was not UTF-8") << QString::fromUtf8("s\xff") << QStringLiteral("s\\u{fffd}");
        // Printable ASCII takes a short way; its edges do not.
        QTest::newRow("printable ASCII") << QStringLiteral(" ~az09 {}") << QStringLiteral(" ~az09 {}");
        QTest::newRow("DEL after ASCII") << QStringLiteral("rm\x7f") << QStringLiteral("rm\\x7f");
        QTest::newRow("a tab") << QStringLiteral("a\tb") << QStringLiteral("a\\x09b");
        QTest::newRow("an astral letter") << QString::fromUcs4(U"x\U0001D400") << QString::fromUcs4(U"x\U0001D400");
    }
    // Cut short between code points, never inside an escape or a surrogate pair.
    void elidedBetweenCodePoints()
    {
        QCOMPARE(display::escaped(QStringLiteral("ab\u202ecd"), 6), QStringLiteral("ab\u2026"));
        QCOMPARE(
            display::escaped(QString::fromUcs4(U"a\U0001F600\U0001F600"), 4), QString::fromUcs4(U"a\U0001F600\u2026"));
        QCOMPARE(display::escaped(QStringLiteral("abcdef"), 4), QStringLiteral("abc\u2026"));
        QCOMPARE(display::escaped(QStringLiteral("abcd"), 4), QStringLiteral("abcd"));
    }
    void escapedByCodePoint()
    {
        QFETCH(QString, text);
        QFETCH(QString, shown);
        QCOMPARE(display::escaped(text), shown);
    }
};

QTEST_GUILESS_MAIN(TestTerminalFilter)
#include "tst_terminal_filter.moc"
