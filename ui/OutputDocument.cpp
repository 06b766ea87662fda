// SPDX-License-Identifier: Apache-2.0
#include "OutputDocument.h"

namespace airlock::ui {

// Turns what the parser reads into lines and spans for one stream.
class OutputDocument::Builder final : public TerminalParser::Sink {
public:
    Builder(OutputDocument &doc, TextStyle &style) : m_doc(doc), m_style(style) {}
    void text(QByteArrayView utf8) override { m_doc.appendText(QString::fromUtf8(utf8), m_style); }
    void control(char c) override
    {
        if (c == '\t') {
            const int column = m_doc.m_lines.isEmpty() ? 0 : int(m_doc.m_lines.last().text.size());
            m_doc.appendText(QString(8 - column % 8, QLatin1Char(' ')), m_style);
        } else {
            m_doc.newLine(); // \n and \r alike: a carriage return overwrites nothing here
        }
    }
    void sgr(QByteArrayView parameters) override { m_doc.applySgr(parameters, m_style); }
    void inert(QByteArrayView bytes) override
    {
        static const char hex[] = "0123456789abcdef";
        QString shown;
        for (char ch : bytes) {
            const auto c = static_cast<unsigned char>(ch);
            if (c >= 0x20 && c < 0x7f) {
                shown += QLatin1Char(ch);
            } else {
                shown += QStringLiteral("\\x");
                shown += QLatin1Char(hex[c >> 4]);
                shown += QLatin1Char(hex[c & 15]);
            }
        }
        TextStyle inert = m_style;
        inert.inert = true;
        m_doc.appendText(shown, inert);
    }

private:
    OutputDocument &m_doc;
    TextStyle &m_style;
};

void OutputDocument::append(int stream, QByteArrayView bytes)
{
    stream = stream == 2 ? 2 : 1;
    // Lines do not mix streams: a switch in mid-line starts a new one.
    if (m_lastStream != stream && !m_lines.isEmpty() && !m_lines.last().text.isEmpty())
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
}

void OutputDocument::endLine()
{
    if (!m_lines.isEmpty() && !m_lines.last().text.isEmpty())
        newLine();
}

void OutputDocument::clear()
{
    m_lines.clear();
    for (StreamState &s : m_streams)
        s = StreamState{};
    m_lastStream = 0;
    m_chars = m_dropped = 0;
    m_longest = 0;
}

void OutputDocument::appendText(const QString &text, const TextStyle &style)
{
    if (text.isEmpty())
        return;
    if (m_lines.isEmpty())
        m_lines.append(StyledLine{});
    StyledLine &line = m_lines.last();
    if (!line.spans.isEmpty() && line.spans.last().style == style)
        line.spans.last().length += int(text.size());
    else
        line.spans.append({int(line.text.size()), int(text.size()), style});
    line.text += text;
    m_chars += text.size();
    m_longest = std::max(m_longest, int(line.text.size()));
}

void OutputDocument::newLine()
{
    if (m_lines.isEmpty())
        m_lines.append(StyledLine{});
    m_lines.append(StyledLine{});
}

void OutputDocument::trim()
{
    qsizetype drop = 0;
    while (m_chars > m_maxChars && drop + 1 < m_lines.size())
        m_chars -= m_lines.at(drop++).text.size();
    if (drop > 0) {
        m_lines.remove(0, drop);
        m_dropped += drop;
    }
}

void OutputDocument::applySgr(QByteArrayView parameters, TextStyle &style)
{
    QList<int> p;
    for (QByteArrayView part : parameters.toByteArray().replace(':', ';').split(';'))
        p.append(part.isEmpty() ? 0 : part.toInt());
    if (p.isEmpty())
        p.append(0);
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
                color = 0x1000000 | (std::clamp(p[i + 2], 0, 255) << 16) | (std::clamp(p[i + 3], 0, 255) << 8) | std::clamp(p[i + 4], 0, 255);
                i += 4;
            }
            (n == 38 ? style.fg : style.bg) = color;
        }
    }
}

QString OutputDocument::plainText() const
{
    QStringList lines;
    for (const StyledLine &l : m_lines)
        lines.append(l.text);
    return lines.join(QLatin1Char('\n'));
}

QColor OutputDocument::paletteColor(int index)
{
    if (index & 0x1000000)
        return QColor((index >> 16) & 0xff, (index >> 8) & 0xff, index & 0xff);
    static const QColor base[16] = {QColor(0x1e, 0x1e, 0x1e), QColor(0xcd, 0x31, 0x31), QColor(0x0d, 0xbc, 0x79), QColor(0xe5, 0xe5, 0x10),
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
