// SPDX-License-Identifier: Apache-2.0
#include "OutputDocument.h"

#include <QVarLengthArray>

#include <algorithm>
#include <type_traits>

namespace airlock::ui {

namespace {
bool isAscii(QByteArrayView bytes)
{
    return std::all_of(bytes.begin(), bytes.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// One whole UTF-8 sequence, already validated by the parser.
char32_t decodeOne(QByteArrayView utf8)
{
    const auto b = [&](qsizetype i) { return char32_t(static_cast<unsigned char>(utf8[i])); };
    switch (utf8.size()) {
    case 2:
        return ((b(0) & 0x1f) << 6) | (b(1) & 0x3f);
    case 3:
        return ((b(0) & 0x0f) << 12) | ((b(1) & 0x3f) << 6) | (b(2) & 0x3f);
    default:
        return ((b(0) & 0x07) << 18) | ((b(1) & 0x3f) << 12) | ((b(2) & 0x3f) << 6) | (b(3) & 0x3f);
    }
}
} // namespace

// Turns what the parser reads into lines and spans for one stream.
class OutputDocument::Builder final : public TerminalParser::Sink {
public:
    Builder(OutputDocument &doc, TextStyle &style)
        : m_doc(doc)
        , m_style(style)
    {
    }
    void text(QByteArrayView utf8) override
    {
        // The parser hands over runs of printable ASCII, or one multi-byte character at a time:
        // neither needs a temporary string.
        if (isAscii(utf8))
            m_doc.appendText(QLatin1StringView(utf8.data(), utf8.size()), m_style);
        else if (utf8.size() >= 2 && utf8.size() <= 4)
            character(decodeOne(utf8));
        else
            for (const char32_t c : QStringView(QString::fromUtf8(utf8)).toUcs4())
                character(c);
    }
    // Bidi controls, zero-width and other format characters, and line/paragraph separators would
    // reorder or hide what is drawn (and travel along when copied): shown as what they are, inert.
    void character(char32_t c)
    {
        const QChar::Category category = QChar::category(c);
        if (category != QChar::Other_Format && category != QChar::Separator_Line
            && category != QChar::Separator_Paragraph) {
            m_doc.appendText(QStringView(QChar::fromUcs4(c)), m_style);
            return;
        }
        TextStyle inert = m_style;
        inert.inert = true;
        m_doc.appendText(QStringView(QStringLiteral("\\u{%1}").arg(uint(c), 0, 16)), inert);
    }
    void control(char c) override
    {
        if (c == '\t') {
            const qsizetype column = m_doc.m_column >= 0 ? m_doc.m_column : m_doc.lastLineLength();
            m_doc.appendText(QLatin1StringView("        ", 8 - column % 8), m_style);
        } else if (c == '\r') {
            if (m_doc.lastLineLength() > 0)
                m_doc.m_column = 0; // what comes next overwrites the line from its start
        } else {
            m_doc.newLine();
        }
    }
    void sgr(QByteArrayView parameters) override { applySgr(parameters, m_style); }
    void inert(QByteArrayView bytes) override
    {
        static const char hex[] = "0123456789abcdef";
        QString shown;
        shown.reserve(bytes.size() * 4);
        for (char ch : bytes) {
            const auto c = static_cast<unsigned char>(ch);
            if (c >= 0x20 && c < 0x7f) {
                shown += QLatin1Char(ch);
            } else {
                shown += QLatin1StringView("\\x");
                shown += QLatin1Char(hex[c >> 4]);
                shown += QLatin1Char(hex[c & 15]);
            }
        }
        TextStyle inert = m_style;
        inert.inert = true;
        m_doc.appendText(QStringView(shown), inert);
    }

private:
    OutputDocument &m_doc;
    TextStyle &m_style;
};

void OutputDocument::append(int stream, QByteArrayView bytes)
{
    stream = stream == 2 ? 2 : 1;
    // Lines do not mix streams: a switch in mid-line starts a new one.
    if (m_lastStream != stream && (lastLineLength() > 0 || m_column >= 0))
        newLine();
    m_lastStream = stream;
    StreamState &s = m_streams[stream];
    s.style.stderrStream = stream == 2;
    Builder builder(*this, s.style);
    s.parser.feed(bytes, builder);
    trim();
}

void OutputDocument::finish()
{
    for (int stream : {1, 2}) {
        Builder builder(*this, m_streams[stream].style);
        m_streams[stream].parser.finish(builder);
    }
    trim();
}

void OutputDocument::endLine()
{
    if (lastLineLength() > 0)
        newLine();
}

void OutputDocument::clear()
{
    m_blocks.clear();
    m_head = m_lineCount = 0;
    for (StreamState &s : m_streams)
        s = StreamState{};
    m_lastStream = 0;
    m_column = -1;
    m_chars = m_dropped = 0;
    m_longest = 0;
}

qsizetype OutputDocument::lastLineLength() const
{
    return m_lineCount == 0 ? 0 : m_blocks.back().text.size() - m_blocks.back().starts.last();
}

void OutputDocument::startFirstLine()
{
    m_blocks.emplace_back();
    m_blocks.back().starts.reserve(kBlockLines);
    m_blocks.back().starts.append(0);
    m_lineCount = 1;
}

template<typename Text> void OutputDocument::appendText(Text text, const TextStyle &style)
{
    if (m_column >= 0) [[unlikely]] {
        if constexpr (std::is_same_v<Text, QStringView>)
            overwrite(text, style);
        else
            overwrite(QString(text), style);
        return;
    }
    if (m_lineCount == 0)
        startFirstLine();
    while (!text.isEmpty()) {
        qsizetype length = lastLineLength();
        if (length >= kLongestLine) {
            newLine();
            length = 0;
        }
        const qsizetype n = std::min(text.size(), kLongestLine - length);
        Block &b = m_blocks.back();
        if (b.runs.isEmpty() || !(b.runs.last().style == style))
            b.runs.append({qint32(b.text.size()), style});
        b.text.append(text.first(n));
        m_chars += n;
        m_longest = std::max(m_longest, int(length + n));
        text = text.sliced(n);
    }
}

void OutputDocument::overwrite(QStringView text, const TextStyle &style)
{
    // The last line, rebuilt: its spans before the column, the new text, its spans after it.
    const qsizetype column = m_column;
    const StyledLine old = line(m_lineCount - 1);
    const qsizetype end = column + text.size();
    Block &b = m_blocks.back();
    const qint32 start = b.starts.last();
    b.text.truncate(start);
    while (!b.runs.isEmpty() && b.runs.last().at >= start)
        b.runs.removeLast();
    m_chars -= old.text.size();
    m_column = -1;
    const qsizetype lines = m_lineCount;
    // An inert piece (a control sequence shown as text) goes whole or stays whole: a rewrite
    // never leaves part of one looking like ordinary text.
    const auto touched = [&](const StyledLine::Span &span) {
        return span.style.inert && span.start < end && span.start + span.length > column;
    };
    for (const StyledLine::Span &span : old.spans)
        if (span.start < column && !touched(span))
            appendText(QStringView(old.text).sliced(span.start, std::min<qsizetype>(span.length, column - span.start)),
                span.style);
    appendText(text, style);
    for (const StyledLine::Span &span : old.spans)
        if (span.start + span.length > end && !touched(span)) {
            const qsizetype from = std::max<qsizetype>(span.start, end);
            appendText(QStringView(old.text).sliced(from, span.start + span.length - from), span.style);
        }
    // At its end (or past kLongestLine, on a line of its own), text goes on as usual.
    m_column = m_lineCount == lines && end < lastLineLength() ? end : -1;
}

void OutputDocument::newLine()
{
    m_column = -1;
    if (m_lineCount == 0) {
        startFirstLine(); // the first line, empty
    } else if (m_blocks.back().starts.size() == kBlockLines) {
        // The block is complete. Its successor likely holds as much text: room for that up front
        // saves growing it step by step, and the block keeps little spare capacity for the rest
        // of its life.
        Block &full = m_blocks.back();
        if (full.text.capacity() > full.text.size() + full.text.size() / 4)
            full.text.squeeze();
        full.runs.squeeze();
        const qsizetype expected = full.text.size() + full.text.size() / 16;
        m_blocks.emplace_back();
        m_blocks.back().starts.reserve(kBlockLines);
        m_blocks.back().text.reserve(expected);
    }
    Block &b = m_blocks.back();
    b.starts.append(qint32(b.text.size()));
    ++m_lineCount;
    ++m_chars; // the line break
}

void OutputDocument::trim()
{
    // The last line stays, however long: it is where output goes on.
    while (m_chars > m_maxChars && m_lineCount > 1) {
        const Block &front = m_blocks.front();
        if (m_blocks.size() > 1) {
            // The rest of the first block at once, when every line of it would go.
            const qsizetype lines = front.starts.size() - m_head;
            const qsizetype chars = front.text.size() - front.starts.at(m_head) + lines;
            if (m_chars - chars >= m_maxChars) {
                m_chars -= chars;
                m_lineCount -= lines;
                m_dropped += lines;
                m_blocks.pop_front();
                m_head = 0;
                continue;
            }
        }
        const auto [start, end] = extent(front, m_head);
        m_chars -= end - start + 1;
        --m_lineCount;
        ++m_dropped;
        if (++m_head == front.starts.size()) {
            m_blocks.pop_front();
            m_head = 0;
        }
    }
}

std::pair<const OutputDocument::Block *, qsizetype> OutputDocument::locate(qsizetype i) const
{
    Q_ASSERT(i >= 0 && i < m_lineCount);
    const qsizetype at = m_head + i;
    return {&m_blocks[size_t(at / kBlockLines)], at % kBlockLines};
}

std::pair<qint32, qint32> OutputDocument::extent(const Block &block, qsizetype local)
{
    const qint32 end = local + 1 < block.starts.size() ? block.starts.at(local + 1) : qint32(block.text.size());
    return {block.starts.at(local), end};
}

QStringView OutputDocument::lineText(qsizetype i) const
{
    const auto [block, local] = locate(i);
    const auto [start, end] = extent(*block, local);
    return QStringView(block->text).sliced(start, end - start);
}

StyledLine OutputDocument::line(qsizetype i) const
{
    const auto [block, local] = locate(i);
    const auto [start, end] = extent(*block, local);
    StyledLine line;
    line.text = QStringView(block->text).sliced(start, end - start).toString();
    // The run in force where the line starts, then those that begin inside it.
    auto run = std::upper_bound(
        block->runs.cbegin(), block->runs.cend(), start, [](qint32 at, const Run &r) { return at < r.at; });
    if (run != block->runs.cbegin())
        --run;
    for (; run != block->runs.cend() && run->at < end; ++run) {
        const qint32 from = std::max(run->at, start);
        const qint32 to = std::next(run) == block->runs.cend() ? end : std::min(std::next(run)->at, end);
        if (to > from)
            line.spans.append({int(from - start), int(to - from), run->style});
    }
    return line;
}

QString OutputDocument::plainText() const
{
    QString text;
    text.reserve(m_chars);
    for (qsizetype i = 0; i < m_lineCount; ++i) {
        if (i > 0)
            text += QLatin1Char('\n');
        text += lineText(i);
    }
    return text;
}

void OutputDocument::applySgr(QByteArrayView parameters, TextStyle &style)
{
    // "1;31" or "38:5:208": numbers, an empty one meaning 0; out of range ones count as 0.
    QVarLengthArray<int, 16> p;
    qint64 value = 0;
    for (char ch : parameters) {
        if (ch == ';' || ch == ':') {
            p.append(value > INT_MAX ? 0 : int(value));
            value = 0;
        } else if (value <= INT_MAX) {
            value = value * 10 + (ch - '0');
        }
    }
    p.append(value > INT_MAX ? 0 : int(value));
    const bool stderrStream = style.stderrStream;
    for (qsizetype i = 0; i < p.size(); ++i) {
        const int n = p[i];
        if (n == 0) {
            style = TextStyle{};
            style.stderrStream = stderrStream;
        } else if (n == 1) {
            style.bold = true;
        } else if (n == 3) {
            style.italic = true;
        } else if (n == 4) {
            style.underline = true;
        } else if (n == 7) {
            style.inverse = true;
        } else if (n == 22) {
            style.bold = false;
        } else if (n == 23) {
            style.italic = false;
        } else if (n == 24) {
            style.underline = false;
        } else if (n == 27) {
            style.inverse = false;
        } else if (n >= 30 && n <= 37) {
            style.fg = n - 30;
        } else if (n >= 90 && n <= 97) {
            style.fg = n - 90 + 8;
        } else if (n >= 40 && n <= 47) {
            style.bg = n - 40;
        } else if (n >= 100 && n <= 107) {
            style.bg = n - 100 + 8;
        } else if (n == 39) {
            style.fg = -1;
        } else if (n == 49) {
            style.bg = -1;
        } else if ((n == 38 || n == 48) && i + 1 < p.size()) {
            int color = -1;
            if (p[i + 1] == 5 && i + 2 < p.size()) {
                color = std::clamp(p[i + 2], 0, 255);
                i += 2;
            } else if (p[i + 1] == 2 && i + 4 < p.size()) {
                color = 0x1000000 | (std::clamp(p[i + 2], 0, 255) << 16) | (std::clamp(p[i + 3], 0, 255) << 8)
                    | std::clamp(p[i + 4], 0, 255);
                i += 4;
            }
            (n == 38 ? style.fg : style.bg) = color;
        }
    }
}

QColor OutputDocument::paletteColor(int index)
{
    if (index & 0x1000000)
        return QColor((index >> 16) & 0xff, (index >> 8) & 0xff, index & 0xff);
    static const QColor base[16]
        = {QColor(0x1e, 0x1e, 0x1e), QColor(0xcd, 0x31, 0x31), QColor(0x0d, 0xbc, 0x79), QColor(0xe5, 0xe5, 0x10),
            QColor(0x24, 0x72, 0xc8), QColor(0xbc, 0x3f, 0xbc), QColor(0x11, 0xa8, 0xcd), QColor(0xe5, 0xe5, 0xe5),
            QColor(0x66, 0x66, 0x66), QColor(0xf1, 0x4c, 0x4c), QColor(0x23, 0xd1, 0x8b), QColor(0xf5, 0xf5, 0x43),
            QColor(0x3b, 0x8e, 0xea), QColor(0xd6, 0x70, 0xd6), QColor(0x29, 0xb8, 0xdb), QColor(0xff, 0xff, 0xff)};
    if (index < 16)
        return base[std::max(index, 0)];
    if (index < 232) {
        const int i = index - 16;
        const auto level = [](int v) { return v == 0 ? 0 : 55 + v * 40; };
        return QColor(level(i / 36), level((i / 6) % 6), level(i % 6));
    }
    const int gray = 8 + (index - 232) * 10;
    return QColor(gray, gray, gray);
}

} // namespace airlock::ui
