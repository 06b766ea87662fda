// SPDX-License-Identifier: Apache-2.0
#include "OutputView.h"

#include "model/DisplayText.h"

#include <QFontDatabase>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>

namespace airlock::ui {

OutputView::OutputView(QWidget *parent) : QAbstractScrollArea(parent), m_frame(new QTimer(this))
{
    setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    viewport()->setAutoFillBackground(true);
    QPalette p = viewport()->palette();
    p.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    p.setColor(QPalette::Text, QColor(0xd4, 0xd4, 0xd4));
    viewport()->setPalette(p);
    viewport()->setBackgroundRole(QPalette::Base);
    m_frame->setSingleShot(true);
    m_frame->setInterval(16);
    connect(m_frame, &QTimer::timeout, this, [this] {
        updateScrollBars();
        if (m_follow)
            verticalScrollBar()->setValue(verticalScrollBar()->maximum());
        viewport()->update();
    });
    connect(verticalScrollBar(), &QScrollBar::valueChanged, this,
            [this](int value) { m_follow = value >= verticalScrollBar()->maximum(); });
}

void OutputView::append(int stream, QByteArrayView bytes)
{
    m_doc.append(stream, bytes);
    scheduleUpdate();
}

void OutputView::beginExecution(const QJsonArray &argv, qint64 exec)
{
    m_doc.endLine();
    append(1, QStringLiteral("\x1b[2m$ %1 (#%2)\x1b[0m\n").arg(display::commandLine(argv), QString::number(exec)).toUtf8());
}

void OutputView::endExecution(qint64 exec, const QString &status, const QJsonValue &exitCode)
{
    finish();
    m_doc.endLine();
    append(1, QStringLiteral("\x1b[2m[#%1 %2]\x1b[0m\n")
                  .arg(QString::number(exec), exitCode.isDouble() ? tr("exit %1").arg(exitCode.toInt()) : display::escaped(status, 40))
                  .toUtf8());
}

void OutputView::finish()
{
    m_doc.finish();
    scheduleUpdate();
}

void OutputView::clear()
{
    m_doc.clear();
    m_follow = true;
    scheduleUpdate();
}

void OutputView::setSearch(const QString &text)
{
    m_search = text;
    m_matchLine = -1;
    viewport()->update();
}

bool OutputView::findNext()
{
    if (m_search.isEmpty() || m_doc.lineCount() == 0)
        return false;
    updateScrollBars();
    const qsizetype count = m_doc.lineCount();
    const qsizetype start = m_matchLine >= 0 ? m_matchLine + 1 : firstVisibleLine();
    for (qsizetype k = 0; k < count; ++k) {
        const qsizetype i = (start + k) % count;
        if (m_doc.lineText(i).contains(m_search, Qt::CaseInsensitive)) {
            m_matchLine = i;
            m_follow = false;
            const int visible = std::max(1, viewport()->height() / lineHeight());
            verticalScrollBar()->setValue(int(std::max<qsizetype>(0, i - visible / 2)));
            m_follow = false;
            viewport()->update();
            return true;
        }
    }
    return false;
}

int OutputView::firstVisibleLine() const
{
    return verticalScrollBar()->value();
}

void OutputView::scheduleUpdate()
{
    if (!m_frame->isActive())
        m_frame->start();
}

int OutputView::lineHeight() const
{
    return fontMetrics().lineSpacing();
}

void OutputView::updateScrollBars()
{
    const int visible = std::max(1, viewport()->height() / lineHeight());
    const bool follow = m_follow;
    verticalScrollBar()->setRange(0, std::max<int>(0, int(m_doc.lineCount()) - visible));
    verticalScrollBar()->setPageStep(visible);
    const int charWidth = fontMetrics().horizontalAdvance(QLatin1Char('M'));
    horizontalScrollBar()->setRange(0, std::max(0, m_doc.longestLine() * charWidth + 8 - viewport()->width()));
    horizontalScrollBar()->setPageStep(viewport()->width());
    m_follow = follow;
}

void OutputView::resizeEvent(QResizeEvent *event)
{
    QAbstractScrollArea::resizeEvent(event);
    updateScrollBars();
}

void OutputView::scrollContentsBy(int, int)
{
    viewport()->update();
}

void OutputView::paintEvent(QPaintEvent *)
{
    QPainter painter(viewport());
    const QFontMetrics fm = fontMetrics();
    const int height = lineHeight();
    const int first = verticalScrollBar()->value();
    const int x0 = 4 - horizontalScrollBar()->value();
    const QColor defaultFg = viewport()->palette().color(QPalette::Text);
    const QColor stderrFg(0xf4, 0x87, 0x71);
    const QColor inertBg(0x5a, 0x3a, 0x00);
    int y = 0;
    if (first == 0 && m_doc.droppedLines() > 0) {
        painter.setPen(QColor(0x9a, 0x9a, 0x9a));
        painter.drawText(x0, fm.ascent(), tr("[%n earlier line(s) not kept in this view]", nullptr, int(m_doc.droppedLines())));
        y += height;
    }
    for (qsizetype i = first; i < m_doc.lineCount() && y < viewport()->height(); ++i, y += height) {
        const StyledLine line = m_doc.line(i);
        // Search matches under the text; the current one stronger.
        if (!m_search.isEmpty()) {
            for (qsizetype at = line.text.indexOf(m_search, 0, Qt::CaseInsensitive); at >= 0;
                 at = line.text.indexOf(m_search, at + m_search.size(), Qt::CaseInsensitive))
                painter.fillRect(x0 + fm.horizontalAdvance(line.text.left(at)), y, fm.horizontalAdvance(line.text.mid(at, m_search.size())), height,
                                 i == m_matchLine ? QColor(0xd0, 0x90, 0x10) : QColor(0x6a, 0x5a, 0x10));
        }
        for (const StyledLine::Span &span : line.spans) {
            const QString text = line.text.mid(span.start, span.length);
            const int x = x0 + fm.horizontalAdvance(line.text.left(span.start));
            const int width = fm.horizontalAdvance(text);
            const TextStyle &s = span.style;
            QColor fg = s.fg >= 0 ? OutputDocument::paletteColor(s.fg) : (s.stderrStream ? stderrFg : defaultFg);
            QColor bg = s.bg >= 0 ? OutputDocument::paletteColor(s.bg) : QColor();
            if (s.inverse)
                std::swap(fg, bg = bg.isValid() ? bg : viewport()->palette().color(QPalette::Base));
            if (s.inert)
                bg = inertBg;
            if (bg.isValid())
                painter.fillRect(x, y, width, height, bg);
            QFont f = font();
            f.setBold(s.bold);
            f.setItalic(s.italic);
            f.setUnderline(s.underline);
            painter.setFont(f);
            painter.setPen(fg);
            painter.drawText(x, y + fm.ascent(), text);
            if (s.inert) {
                painter.setPen(QColor(0xff, 0xb0, 0x40));
                painter.drawRect(x, y, width - 1, height - 1);
            }
        }
    }
}

} // namespace airlock::ui
