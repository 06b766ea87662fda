// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/TerminalFilter.h"

#include <QColor>
#include <QList>
#include <QString>

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
// escaped text, \r starts a new line (nothing is overwritten, so nothing is hidden). Bounded: past
// maxChars the oldest lines go, and droppedLines() says how many.
class OutputDocument {
public:
    explicit OutputDocument(qsizetype maxChars = 16 * 1024 * 1024) : m_maxChars(maxChars) {}

    void append(int stream, QByteArrayView bytes); // stream 1 stdout, 2 stderr
    void finish();                                 // the end: pending sequences shown inert
    void endLine();                                // a new line, unless the last one is empty
    void clear();

    qsizetype lineCount() const { return m_lines.size(); }
    const StyledLine &line(qsizetype i) const { return m_lines.at(i); }
    qsizetype droppedLines() const { return m_dropped; }
    qsizetype chars() const { return m_chars; }
    int longestLine() const { return m_longest; }
    QString plainText() const; // for copy and tests

    static QColor paletteColor(int index); // the xterm 256-colour palette

private:
    class Builder;
    struct StreamState {
        TerminalParser parser;
        TextStyle style;
    };
    void appendText(const QString &text, const TextStyle &style);
    void newLine();
    void applySgr(QByteArrayView parameters, TextStyle &style);
    void trim();

    QList<StyledLine> m_lines;
    StreamState m_streams[3];
    int m_lastStream = 0;
    qsizetype m_maxChars;
    qsizetype m_chars = 0;
    qsizetype m_dropped = 0;
    int m_longest = 0;
};

} // namespace airlock::ui
