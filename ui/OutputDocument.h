// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/TerminalFilter.h"

#include <QColor>
#include <QLatin1StringView>
#include <QList>
#include <QString>
#include <QStringView>

#include <deque>
#include <utility>

namespace airlock::ui {

// How a piece of output looks: SGR attributes, which stream it came from, and whether it is inert
// bytes shown as text (a control sequence the sandbox sent, never obeyed).
struct TextStyle {
    int fg = -1, bg = -1; // -1: default; 0-255: the xterm palette; 0x1000000 | rgb: true colour
    bool bold = false, italic = false, underline = false, inverse = false;
    bool inert = false;
    bool stderrStream = false;
    bool operator==(const TextStyle &) const = default;
};

struct StyledLine {
    struct Span {
        int start = 0, length = 0;
        TextStyle style;
    };
    QString text;
    QList<Span> spans;
};

// An execution's output as lines of styled text, built from raw bytes by the TerminalParser:
// colours are rendered, every other control sequence, NUL and invalid UTF-8 appear as visible
// escaped text, \r returns to the start of the line and what follows overwrites it as on a
// terminal (a progress bar leaves its last state; text a shorter rewrite does not reach stays, and
// \r\n changes nothing), and a line
// longer than kLongestLine continues on the next. Bounded: past maxChars characters (counting each
// line break as one, as plainText() does) the oldest lines go, and droppedLines() says how many.
//
// Built for floods: `yes` writes two bytes a line, so a line must cost little more than its text.
// Lines live in blocks of kBlockLines: one string holds a block's text, an offset marks where each
// line starts, and styles are runs that begin only where the style changes. Dropping the oldest
// line is O(1); a block's memory goes with its last line.
class OutputDocument {
public:
    static constexpr qsizetype kLongestLine = 1024 * 1024;

    explicit OutputDocument(qsizetype maxChars = 16 * 1024 * 1024)
        : m_maxChars(maxChars)
    {
    }

    void append(int stream, QByteArrayView bytes); // stream 1 stdout, 2 stderr
    void finish(); // the end: pending sequences shown inert
    void endLine(); // a new line, unless the last one is empty
    void clear();

    qsizetype lineCount() const { return m_lineCount; }
    StyledLine line(qsizetype i) const; // assembled on demand (for the lines in view)
    QStringView lineText(qsizetype i) const; // valid until the document changes
    qsizetype droppedLines() const { return m_dropped; }
    qsizetype chars() const { return m_chars; } // plainText().size(), without building it
    int longestLine() const { return m_longest; }
    QString plainText() const; // for copy and tests

    static QColor paletteColor(int index); // the xterm 256-colour palette

private:
    class Builder;
    struct StreamState {
        TerminalParser parser;
        TextStyle style;
    };
    struct Run {
        qint32 at = 0; // in the block's text; the style holds up to the next run
        TextStyle style;
    };
    struct Block {
        QString text; // its lines back to back, without separators
        QList<qint32> starts; // where each line begins in text
        QList<Run> runs;
    };
    static constexpr qsizetype kBlockLines = 4096;

    template<typename Text> // QLatin1StringView or QStringView
    void appendText(Text text, const TextStyle &style);
    void startFirstLine();
    void newLine();
    void overwrite(QStringView text, const TextStyle &style); // at m_column of the last line
    qsizetype lastLineLength() const;
    std::pair<const Block *, qsizetype> locate(qsizetype i) const;
    static std::pair<qint32, qint32> extent(const Block &block, qsizetype local);
    static void applySgr(QByteArrayView parameters, TextStyle &style);
    void trim();

    std::deque<Block> m_blocks; // all full but the last, so line i is found by arithmetic
    qsizetype m_head = 0; // lines of the first block already dropped
    qsizetype m_lineCount = 0;
    StreamState m_streams[3];
    int m_lastStream = 0;
    qsizetype m_column = -1; // after a \r: where in the last line text goes on; -1: at its end
    qsizetype m_maxChars;
    qsizetype m_chars = 0;
    qsizetype m_dropped = 0;
    int m_longest = 0;
};

} // namespace airlock::ui
