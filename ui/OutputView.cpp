// SPDX-License-Identifier: Apache-2.0
#include "OutputView.h"

#include "model/DisplayText.h"

#include <QClipboard>
#include <QContextMenuEvent>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>

namespace airlock::ui {

OutputView::OutputView(QWidget *parent)
    : QAbstractScrollArea(parent)
    , m_frame(new QTimer(this))
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
    connect(verticalScrollBar(), &QScrollBar::valueChanged, this, [this](int value) {
        m_follow = value >= verticalScrollBar()->maximum();
        if (m_follow)
            m_newBelow = false;
    });
}

void OutputView::append(int stream, QByteArrayView bytes)
{
    m_doc.append(stream, bytes);
    if (!m_follow)
        m_newBelow = true; // said at the bottom of the view until the person is back at the end
    scheduleUpdate();
}

void OutputView::beginExecution(const QJsonArray &argv, qint64 exec)
{
    m_doc.endLine();
    append(1,
        QStringLiteral("\x1b[2m$ %1 (#%2)\x1b[0m\n").arg(display::commandLine(argv), QString::number(exec)).toUtf8());
}

void OutputView::endExecution(qint64 exec, const QString &status, const QJsonValue &exitCode)
{
    finish();
    m_doc.endLine();
    append(1,
        QStringLiteral("\x1b[2m[#%1 %2]\x1b[0m\n")
            .arg(QString::number(exec),
                exitCode.isDouble() ? tr("exit %1").arg(exitCode.toInt()) : display::escaped(status, 40))
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
    m_newBelow = false;
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
    // Wrapped, the scroll position is the first line in view (its rows vary); at the end, the view
    // shows as many of the last lines as fit.
    verticalScrollBar()->setRange(0, std::max<int>(0, int(m_doc.lineCount()) - (m_wrap ? 1 : visible)));
    verticalScrollBar()->setPageStep(visible);
    const int charWidth = fontMetrics().horizontalAdvance(QLatin1Char('M'));
    horizontalScrollBar()->setRange(
        0, m_wrap ? 0 : std::max(0, m_doc.longestLine() * charWidth + 8 - viewport()->width()));
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

int OutputView::wrapColumns() const
{
    const int charWidth = std::max(1, fontMetrics().horizontalAdvance(QLatin1Char('M')));
    return std::max(8, (viewport()->width() - 8) / charWidth);
}

OutputView::Top OutputView::topInView() const
{
    const qsizetype count = m_doc.lineCount();
    if (!m_wrap || !m_follow)
        return {std::min<qsizetype>(verticalScrollBar()->value(), std::max<qsizetype>(0, count - 1)), 0};
    // Following with wrapping: the last rows that fit, walking back from the end; a line with more
    // rows than fit shows its last ones, as a terminal would.
    const int cols = wrapColumns();
    const qsizetype visible = std::max(1, viewport()->height() / lineHeight());
    qsizetype rows = 0;
    for (qsizetype first = count - 1; first >= 0; --first) {
        const qsizetype lineRows = std::max<qsizetype>(1, (m_doc.lineText(first).size() + cols - 1) / cols);
        if (rows + lineRows >= visible)
            return {first, std::max<qsizetype>(0, rows + lineRows - visible)};
        rows += lineRows;
    }
    return {0, 0};
}

void OutputView::setWrap(bool wrap)
{
    if (wrap == m_wrap)
        return;
    m_wrap = wrap;
    setHorizontalScrollBarPolicy(wrap ? Qt::ScrollBarAlwaysOff : Qt::ScrollBarAsNeeded);
    updateScrollBars();
    viewport()->update();
    Q_EMIT wrapChanged(wrap);
}

int OutputView::columnX(QStringView text, qsizetype from, qsizetype column) const
{
    return fontMetrics().horizontalAdvance(
        text.mid(from, std::clamp<qsizetype>(column - from, 0, text.size() - from)).toString());
}

OutputView::Position OutputView::positionAt(QPoint point) const
{
    if (m_rows.isEmpty())
        return {m_doc.droppedLines(), 0};
    const int height = lineHeight();
    const Row *row = &m_rows.first();
    for (const Row &r : m_rows)
        if (point.y() >= r.y)
            row = &r;
    if (point.y() >= row->y + height && row == &m_rows.last())
        return {m_doc.droppedLines() + row->line, row->to}; // below the text: its end
    // The column whose middle is right of the point, measured character by character.
    const QStringView text = m_doc.lineText(row->line);
    const QFontMetrics fm = fontMetrics();
    int x = 4 - (m_wrap ? 0 : horizontalScrollBar()->value());
    qsizetype column = row->from;
    while (column < row->to) {
        const int advance = fm.horizontalAdvance(text.at(column));
        if (point.x() < x + advance / 2)
            break;
        x += advance;
        ++column;
    }
    return {m_doc.droppedLines() + row->line, column};
}

void OutputView::select(Position from, Position to)
{
    m_anchor = from;
    m_cursor = to;
    viewport()->update();
}

void OutputView::selectAll()
{
    const qsizetype last = m_doc.lineCount() - 1;
    select({m_doc.droppedLines(), 0},
        {m_doc.droppedLines() + std::max<qsizetype>(last, 0), last >= 0 ? m_doc.lineText(last).size() : 0});
}

void OutputView::clearSelection()
{
    select(m_cursor, m_cursor);
}

QString OutputView::selectedText() const
{
    if (!hasSelection())
        return {};
    const Position start = std::min(m_anchor, m_cursor), end = std::max(m_anchor, m_cursor);
    QString out;
    // Lines dropped since the selection was made are gone: what is left of it is copied.
    const qsizetype dropped = m_doc.droppedLines();
    for (qsizetype abs = std::max(start.line, dropped); abs <= end.line && abs - dropped < m_doc.lineCount(); ++abs) {
        const QStringView text = m_doc.lineText(abs - dropped);
        const qsizetype from = abs == start.line ? std::min(start.column, text.size()) : 0;
        const qsizetype to = abs == end.line ? std::min(end.column, text.size()) : text.size();
        if (abs > std::max(start.line, dropped))
            out += QLatin1Char('\n');
        out += text.mid(from, std::max<qsizetype>(0, to - from));
    }
    return out;
}

void OutputView::copy() const
{
    if (!hasSelection())
        return;
    const QString text = selectedText();
    QGuiApplication::clipboard()->setText(text);
    if (QGuiApplication::clipboard()->supportsSelection())
        QGuiApplication::clipboard()->setText(text, QClipboard::Selection);
}

void OutputView::showLine(qsizetype line)
{
    updateScrollBars();
    m_follow = false;
    verticalScrollBar()->setValue(int(std::clamp<qsizetype>(line - 1, 0, m_doc.lineCount())));
    m_follow = false;
    viewport()->update();
}

void OutputView::scrollToStart()
{
    updateScrollBars();
    m_follow = false;
    verticalScrollBar()->setValue(0);
    viewport()->update();
}

void OutputView::scrollToEnd()
{
    m_follow = true;
    m_newBelow = false;
    updateScrollBars();
    verticalScrollBar()->setValue(verticalScrollBar()->maximum());
    viewport()->update();
}

void OutputView::mousePressEvent(QMouseEvent *event)
{
    if (event->button() == Qt::LeftButton && m_newBelow && m_newBelowRect.contains(event->position().toPoint()))
        return scrollToEnd();
    if (event->button() != Qt::LeftButton)
        return QAbstractScrollArea::mousePressEvent(event);
    setFocus(Qt::MouseFocusReason);
    const Position at = positionAt(event->position().toPoint());
    select(event->modifiers() & Qt::ShiftModifier ? m_anchor : at, at);
    m_selecting = true;
}

void OutputView::mouseMoveEvent(QMouseEvent *event)
{
    if (!m_selecting)
        return QAbstractScrollArea::mouseMoveEvent(event);
    // Past the top or bottom edge, the view scrolls along.
    const int y = int(event->position().y());
    if (y < 0)
        verticalScrollBar()->setValue(verticalScrollBar()->value() - 1);
    else if (y > viewport()->height())
        verticalScrollBar()->setValue(verticalScrollBar()->value() + 1);
    select(m_anchor, positionAt(event->position().toPoint()));
}

void OutputView::mouseReleaseEvent(QMouseEvent *event)
{
    if (event->button() == Qt::LeftButton && m_selecting) {
        m_selecting = false;
        if (hasSelection() && QGuiApplication::clipboard()->supportsSelection())
            QGuiApplication::clipboard()->setText(
                selectedText(), QClipboard::Selection); // middle-click paste, as terminals do
        return;
    }
    QAbstractScrollArea::mouseReleaseEvent(event);
}

void OutputView::mouseDoubleClickEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton)
        return QAbstractScrollArea::mouseDoubleClickEvent(event);
    // A word: letters, digits and the characters paths and names are made of.
    const Position at = positionAt(event->position().toPoint());
    const qsizetype index = at.line - m_doc.droppedLines();
    if (index < 0 || index >= m_doc.lineCount())
        return;
    const QStringView text = m_doc.lineText(index);
    auto isWord = [&](qsizetype i) {
        const QChar c = text.at(i);
        return c.isLetterOrNumber() || QStringView(u"_-./:@~+%=").contains(c);
    };
    qsizetype from = std::min(at.column, text.size()), to = from;
    while (from > 0 && isWord(from - 1))
        --from;
    while (to < text.size() && isWord(to))
        ++to;
    select({at.line, from}, {at.line, to});
}

void OutputView::keyPressEvent(QKeyEvent *event)
{
    if (event->matches(QKeySequence::Copy))
        return copy();
    if (event->matches(QKeySequence::SelectAll))
        return selectAll();
    if (event->matches(QKeySequence::MoveToStartOfDocument))
        return scrollToStart();
    if (event->matches(QKeySequence::MoveToEndOfDocument))
        return scrollToEnd();
    QAbstractScrollArea::keyPressEvent(event);
}

void OutputView::contextMenuEvent(QContextMenuEvent *event)
{
    QMenu menu(this);
    menu.addAction(tr("Copy"), QKeySequence::Copy, this, &OutputView::copy)->setEnabled(hasSelection());
    menu.addAction(tr("Copy all output"), this, [this] { QGuiApplication::clipboard()->setText(m_doc.plainText()); });
    menu.addAction(tr("Select all"), QKeySequence::SelectAll, this, &OutputView::selectAll);
    menu.addSeparator();
    QAction *wrap = menu.addAction(tr("Wrap long lines"), this, [this](bool on) { setWrap(on); });
    wrap->setCheckable(true);
    wrap->setChecked(m_wrap);
    QAction *follow = menu.addAction(tr("Follow the end"), this, [this](bool on) {
        m_follow = on;
        scheduleUpdate();
    });
    follow->setCheckable(true);
    follow->setChecked(m_follow);
    menu.exec(event->globalPos());
}

void OutputView::paintRow(QPainter &painter, const StyledLine &line, const Row &row, int x0) const
{
    const QFontMetrics fm = fontMetrics();
    const int height = lineHeight();
    const QStringView text(line.text);
    const QColor defaultFg = viewport()->palette().color(QPalette::Text);
    const QColor stderrFg(0xf4, 0x87, 0x71);
    const QColor inertBg(0x5a, 0x3a, 0x00);
    auto xOf = [&](qsizetype column) { return x0 + columnX(text, row.from, column); };
    // The selection, then search matches, under the text.
    const qsizetype absolute = m_doc.droppedLines() + row.line;
    const Position start = std::min(m_anchor, m_cursor), end = std::max(m_anchor, m_cursor);
    if (hasSelection() && absolute >= start.line && absolute <= end.line) {
        const qsizetype from = std::max(row.from, absolute == start.line ? start.column : 0);
        const qsizetype to = std::min(row.to, absolute == end.line ? end.column : row.to);
        const bool lineBreak = absolute < end.line && to == line.text.size(); // the break is selected too
        if (to > from || lineBreak)
            painter.fillRect(xOf(from), row.y,
                xOf(to) - xOf(from) + (lineBreak ? fm.horizontalAdvance(QLatin1Char(' ')) : 0), height,
                QColor(0x26, 0x4f, 0x78));
    }
    if (!m_search.isEmpty()) {
        for (qsizetype at = line.text.indexOf(m_search, row.from, Qt::CaseInsensitive); at >= 0 && at < row.to;
             at = line.text.indexOf(m_search, at + m_search.size(), Qt::CaseInsensitive))
            painter.fillRect(xOf(at), row.y, xOf(std::min(row.to, at + m_search.size())) - xOf(at), height,
                row.line == m_matchLine ? QColor(0xd0, 0x90, 0x10) : QColor(0x6a, 0x5a, 0x10));
    }
    for (const StyledLine::Span &span : line.spans) {
        const qsizetype from = std::max<qsizetype>(span.start, row.from),
                        to = std::min<qsizetype>(span.start + span.length, row.to);
        if (to <= from)
            continue;
        const QString piece = line.text.mid(from, to - from);
        const int x = xOf(from);
        const int width = fm.horizontalAdvance(piece);
        const TextStyle &s = span.style;
        QColor fg = s.fg >= 0 ? OutputDocument::paletteColor(s.fg) : (s.stderrStream ? stderrFg : defaultFg);
        QColor bg = s.bg >= 0 ? OutputDocument::paletteColor(s.bg) : QColor();
        if (s.inverse)
            std::swap(fg, bg = bg.isValid() ? bg : viewport()->palette().color(QPalette::Base));
        if (s.inert)
            bg = inertBg;
        if (bg.isValid())
            painter.fillRect(x, row.y, width, height, bg);
        QFont f = font();
        f.setBold(s.bold);
        f.setItalic(s.italic);
        f.setUnderline(s.underline);
        painter.setFont(f);
        painter.setPen(fg);
        painter.drawText(x, row.y + fm.ascent(), piece);
        if (s.inert) {
            painter.setPen(QColor(0xff, 0xb0, 0x40));
            painter.drawRect(x, row.y, width - 1, height - 1);
        }
    }
}

void OutputView::paintEvent(QPaintEvent *)
{
    QPainter painter(viewport());
    const QFontMetrics fm = fontMetrics();
    const int height = lineHeight();
    const auto [first, skipRows] = topInView();
    const int x0 = 4 - (m_wrap ? 0 : horizontalScrollBar()->value());
    const int cols = wrapColumns();
    m_rows.clear();
    int y = 0;
    if (first == 0 && m_doc.droppedLines() > 0) {
        painter.setPen(QColor(0x9a, 0x9a, 0x9a));
        painter.drawText(
            x0, fm.ascent(), tr("[%n earlier line(s) not kept in this view]", nullptr, int(m_doc.droppedLines())));
        y += height;
    }
    for (qsizetype i = first; i < m_doc.lineCount() && y < viewport()->height(); ++i) {
        const StyledLine line = m_doc.line(i);
        const qsizetype length = line.text.size();
        for (qsizetype from = i == first ? skipRows * cols : 0;; from += cols) {
            const Row row{i, from, m_wrap ? std::min<qsizetype>(length, from + cols) : length, y};
            m_rows.append(row);
            paintRow(painter, line, row, x0);
            y += height;
            if (row.to >= length || y >= viewport()->height())
                break;
        }
    }
    // Scrolled up while output came: a marker at the bottom says so, and takes one to it.
    m_newBelowRect = {};
    if (m_newBelow && !m_follow) {
        const QString text = tr("▼ New output below (Ctrl+End)");
        const int w = fm.horizontalAdvance(text) + 20, h = height + 8;
        m_newBelowRect = QRect((viewport()->width() - w) / 2, viewport()->height() - h - 6, w, h);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setPen(Qt::NoPen);
        painter.setBrush(QColor(0x2a, 0x6f, 0xc9));
        painter.drawRoundedRect(m_newBelowRect, h / 2.0, h / 2.0);
        painter.setPen(Qt::white);
        painter.drawText(m_newBelowRect, Qt::AlignCenter, text);
    }
}

} // namespace airlock::ui
