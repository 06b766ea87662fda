// SPDX-License-Identifier: Apache-2.0
// The output view on its own, on Qt's offscreen platform: output rendered from raw bytes (colours
// applied, every other control sequence shown inert), find, a mouse selection copied exactly,
// long lines wrapped, and memory bounded however much is written.
#include "GuiTestSettings.h"
#include "OutputView.h"
#include "TestHelpers.h"
#include "Theme.h"

#include <QApplication>
#include <QClipboard>
#include <QLineEdit>
#include <QTest>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestOutputView final : public QObject {
    Q_OBJECT

    static QString spanText(const StyledLine &line, int span)
    {
        return line.text.mid(line.spans[span].start, line.spans[span].length);
    }

private Q_SLOTS:
    void initTestCase() { isolateSettings(); }

    void coloursApplyAndEverythingElseIsShownInert()
    {
        QApplication::clipboard()->setText(QStringLiteral("mine"));
        OutputDocument doc;
        doc.append(1, "plain \x1b[1;31mred\x1b[0m ok\n");
        doc.append(1, "copy\x1b]52;c;ZXZpbA==\x07 done\n");
        doc.append(2, QByteArray("nul\0 bad\xff utf8 \xc3\xa9\n", 21));
        doc.finish();
        QCOMPARE(doc.line(0).text, QStringLiteral("plain red ok"));
        QCOMPARE(spanText(doc.line(0), 1), QStringLiteral("red"));
        QVERIFY(doc.line(0).spans[1].style.bold);
        QCOMPARE(doc.line(0).spans[1].style.fg, 1);
        QVERIFY(!doc.line(0).spans[2].style.bold);
        // OSC 52 (a clipboard write) is text on screen, boxed as inert, and the clipboard is unchanged.
        QCOMPARE(doc.line(1).text, QStringLiteral("copy\\x1b]52;c;ZXZpbA==\\x07 done"));
        QCOMPARE(doc.line(1).spans.size(), 3);
        QVERIFY(doc.line(1).spans[1].style.inert); // the whole sequence, as one piece
        QCOMPARE(spanText(doc.line(1), 1), QStringLiteral("\\x1b]52;c;ZXZpbA==\\x07"));
        OutputDocument moves;
        moves.append(1, "a\x1b[2J\x1b[?25lb");
        QCOMPARE(moves.line(0).spans.size(), 3);
        QCOMPARE(spanText(moves.line(0), 1), QStringLiteral("\\x1b[2J\\x1b[?25l"));
        QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("mine"));
        // NUL and invalid UTF-8 are visible; stderr is marked.
        QCOMPARE(doc.line(2).text, QStringLiteral("nul\\x00 bad\\xff utf8 \u00e9"));
        QVERIFY(doc.line(2).spans.first().style.stderrStream);
        // A carriage return rewrites the line as a terminal does: a progress bar leaves its last
        // state, a shorter rewrite leaves what it does not reach (as on a terminal: nothing is
        // hidden that a terminal would show), styles stay with their characters, \r\n is a line
        // end, and what is inert stays inert.
        OutputDocument cr;
        cr.append(1, "rm -rf /\rls\n");
        cr.append(1, "  0% |          |\r 50% |#####     |\r100% |##########|\n");
        cr.append(1, "crlf\r\nnext\n");
        cr.append(1, "\x1b[31mred\x1b[0m plain\rX");
        cr.append(1, "\r\x1b]0;t\x07\n");
        QCOMPARE(cr.plainText(),
            QStringLiteral("ls -rf /\n100% |##########|\ncrlf\nnext\n\\x1b]0;t\\x07\n")); // the inert title overwrote
                                                                                          // all 9 characters
        QCOMPARE(cr.lineCount(), 6);
        OutputDocument styled;
        styled.append(1, "\x1b[31mred\x1b[0m plain\rX");
        QCOMPARE(styled.line(0).text, QStringLiteral("Xed plain"));
        QCOMPARE(styled.line(0).spans.size(), 3);
        QCOMPARE(spanText(styled.line(0), 0), QStringLiteral("X")); // the new text, in the style now in force
        QCOMPARE(styled.line(0).spans[0].style.fg, -1);
        QCOMPARE(spanText(styled.line(0), 1), QStringLiteral("ed")); // still red
        QCOMPARE(styled.line(0).spans[1].style.fg, 1);
        QVERIFY(cr.line(4).spans.first().style.inert);
        // Part of an inert piece is never left behind by a rewrite: it goes whole.
        OutputDocument partly;
        partly.append(1, "ab\x1b[2Jcd\rXYZ\n");
        QCOMPARE(partly.plainText(), QStringLiteral("XYZcd\n"));
        // Bidi controls and zero-width characters would reorder or hide text (and be copied along):
        // shown as what they are, inert.
        OutputDocument bidi;
        bidi.append(1, "safe \xe2\x80\xae txt.exe zero\xe2\x80\x8bwidth \xc3\xa9\n");
        QCOMPARE(bidi.plainText(), QStringLiteral("safe \\u{202e} txt.exe zero\\u{200b}width \u00e9\n"));
        QVERIFY(bidi.line(0).spans[1].style.inert);
    }

    void findMovesToEachMatch()
    {
        OutputView view;
        view.resize(600, 200);
        view.show();
        for (int i = 0; i < 500; ++i)
            view.append(1,
                i == 100 || i == 400 ? QByteArray("the NEEDLE is here\n") : QByteArray(QByteArray::number(i) + "\n"));
        QTest::qWait(50);
        QVERIFY(view.followsTail());
        view.setSearch(QStringLiteral("needle"));
        QVERIFY(view.findNext());
        QCOMPARE(view.currentMatchLine(), 100); // from the top of the view, wrapping around
        QVERIFY(!view.followsTail());
        QVERIFY(view.firstVisibleLine() <= 100 && view.firstVisibleLine() + 5 > 90);
        QVERIFY(view.findNext());
        QCOMPARE(view.currentMatchLine(), 400);
        QVERIFY(view.findNext());
        QCOMPARE(view.currentMatchLine(), 100);
        view.setSearch(QStringLiteral("absent"));
        QVERIFY(!view.findNext());
    }

    void selectingWithTheMouseCopiesExactlyThatText()
    {
        OutputView view;
        view.resize(500, 200);
        view.show();
        view.append(1, "first line here\nsecond \x1b]52;c;eA==\x07 line\nthird\n");
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QTest::qWait(40); // a frame: laid out and painted
        const int h = view.fontMetrics().lineSpacing();
        const int w = view.fontMetrics().horizontalAdvance(QLatin1Char('M'));
        auto at = [&](int column, int line) { return QPoint(4 + column * w + w / 4, line * h + h / 2); };
        QTest::mousePress(view.viewport(), Qt::LeftButton, {}, at(6, 0));
        QTest::mouseMove(view.viewport(), at(6, 1));
        QTest::mouseRelease(view.viewport(), Qt::LeftButton, {}, at(6, 1));
        QVERIFY(view.hasSelection());
        QCOMPARE(view.selectedText(), QStringLiteral("line here\nsecond"));
        QApplication::clipboard()->setText(QStringLiteral("before"));
        QTest::keyClick(&view, Qt::Key_C, Qt::ControlModifier);
        QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("line here\nsecond"));
        // The inert sequence is copied as it is shown, escaped: nothing live reaches the clipboard.
        QTest::mouseDClick(view.viewport(), Qt::LeftButton, {}, at(0, 2));
        QCOMPARE(view.selectedText(), QStringLiteral("third"));
        view.selectAll();
        QVERIFY(view.selectedText().contains(QLatin1String("second \\x1b]52;c;eA==\\x07 line")));
        QVERIFY(!view.selectedText().contains(QLatin1Char('\x1b')));
    }

    void wrappingShowsLongLinesOnSeveralRows()
    {
        OutputView view;
        view.resize(400, 300);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.append(1, QByteArray(QByteArray(1000, 'a') + "\nshort\n"));
        QTest::qWait(40);
        view.viewport()->repaint();
        QCOMPARE(view.rowsPainted(), 3); // the long line, "short", the empty last line
        view.setWrap(true);
        view.resize(
            400, view.fontMetrics().lineSpacing() * 10 + 4); // fewer rows than the long line has, whatever the font
        view.viewport()->repaint();
        // Whatever the font: the rows of the long line plus two, or as many whole rows as the view
        // holds; following the end, the long line shows its last rows.
        const int columns = (view.viewport()->width() - 8) / view.fontMetrics().horizontalAdvance(QLatin1Char('M'));
        const int rows = (1000 + columns - 1) / columns + 2;
        const int fit = view.viewport()->height() / view.fontMetrics().lineSpacing();
        QCOMPARE(view.rowsPainted(), std::min(rows, fit));
        QCOMPARE(view.positionAt(QPoint(5, 2)).line, 0); // the long line, never pushed out of view
        view.resize(400, view.fontMetrics().lineSpacing() * (rows + 2) + 10);
        view.viewport()->repaint();
        QCOMPARE(view.rowsPainted(), rows);
        // A selection across the wrapped rows is still one line of text.
        view.select({0, 10}, {0, 900});
        QCOMPARE(view.selectedText(), QString(890, QLatin1Char('a')));
        // Following the end with wrapping: the last lines are in view.
        for (int i = 0; i < 200; ++i)
            view.append(1, QByteArray(QByteArray("line ") + QByteArray::number(i) + "\n"));
        QTest::qWait(40);
        view.viewport()->repaint();
        const OutputView::Position last = view.positionAt(QPoint(5, view.viewport()->height() - 2));
        QVERIFY2(last.line >= 200, qPrintable(QString::number(last.line)));
    }

    void memoryStaysBounded()
    {
        OutputDocument doc(10000);
        for (int i = 0; i < 5000; ++i)
            doc.append(1, QByteArray(QByteArray::number(i) + " some output line\n"));
        QVERIFY(doc.chars() <= 10000);
        QVERIFY(doc.droppedLines() > 4000);
        QVERIFY(doc.line(doc.lineCount() - 2).text.startsWith(QLatin1String("4999 ")));
    }
};

QTEST_MAIN(TestOutputView)
#include "tst_output_view.moc"
