// SPDX-License-Identifier: Apache-2.0
#include "policy/ShellParser.h"

#include <QRegularExpression>

#include <algorithm>
#include <optional>

namespace airlock::policy {

namespace {
constexpr int kMaxDepth = 8; // nested $(…) levels
constexpr int kMaxSegments = 1000; // what a person could review anyway

Error cannot(const QString &why)
{
    return makeError(ErrorCode::InvalidArgument, QStringLiteral("cannot be checked: %1").arg(why));
}

bool isKeyword(const QString &w)
{
    static const QStringList keywords = {QStringLiteral("if"), QStringLiteral("then"), QStringLiteral("else"),
        QStringLiteral("elif"), QStringLiteral("fi"), QStringLiteral("for"), QStringLiteral("while"),
        QStringLiteral("until"), QStringLiteral("do"), QStringLiteral("done"), QStringLiteral("case"),
        QStringLiteral("esac"), QStringLiteral("in"), QStringLiteral("select"), QStringLiteral("function"),
        QStringLiteral("{"), QStringLiteral("}"), QStringLiteral("[["), QStringLiteral("]]"), QStringLiteral("coproc")};
    return keywords.contains(w);
}

bool isAssignment(const QString &w)
{
    const qsizetype eq = w.indexOf(QLatin1Char('='));
    if (eq <= 0)
        return false;
    for (qsizetype i = 0; i < eq; ++i) {
        const QChar c = w.at(i);
        if (!(c.isLetterOrNumber() || c == QLatin1Char('_')) || (i == 0 && c.isDigit()))
            return false;
    }
    return true;
}

class Parser {
public:
    Parser(const QString &s, int depth)
        : m_s(s)
        , m_depth(depth)
    {
    }

    Result<QList<ShellSegment>> run()
    {
        if (m_depth > kMaxDepth)
            return cannot(QStringLiteral("command substitutions nested more than %1 deep").arg(kMaxDepth));
        while (m_i < m_s.size()) {
            const QChar c = m_s.at(m_i);
            if (c == QLatin1Char(' ') || c == QLatin1Char('\t')) {
                endWord();
                ++m_i;
            } else if (c == QLatin1Char('\n') || c == QLatin1Char(';') || c == QLatin1Char('&')
                || c == QLatin1Char('|')) {
                if (c == QLatin1Char('&') && peek(1) == QLatin1Char('>')) { // &> and &>> redirect both streams
                    if (Status s = redirect(); !s)
                        return s.error();
                    continue;
                }
                endWord();
                endCommand();
                m_i += (peek(1) == c || (c == QLatin1Char('|') && peek(1) == QLatin1Char('&'))) ? 2 : 1;
            } else if (c == QLatin1Char('<') || c == QLatin1Char('>')) {
                if (Status s = redirect(); !s)
                    return s.error();
            } else if (c == QLatin1Char('(') || c == QLatin1Char(')')) {
                return cannot(QStringLiteral("subshells and groups ( … ) are not followed"));
            } else if (c == QLatin1Char('#') && m_word.isEmpty() && !m_inWord) {
                while (m_i < m_s.size() && m_s.at(m_i) != QLatin1Char('\n'))
                    ++m_i;
            } else if (Status s = wordChar(); !s) {
                return s.error();
            }
            if (m_segments.size() > kMaxSegments)
                return cannot(QStringLiteral("more than %1 commands").arg(kMaxSegments));
        }
        endWord();
        endCommand();
        return m_segments;
    }

private:
    QChar peek(int ahead) const { return m_i + ahead < m_s.size() ? m_s.at(m_i + ahead) : QChar(); }

    // One character (or quoted run, or expansion) of the current word.
    Status wordChar()
    {
        const QChar c = m_s.at(m_i);
        m_inWord = true;
        if (c == QLatin1Char('\\')) {
            if (m_i + 1 < m_s.size() && m_s.at(m_i + 1) != QLatin1Char('\n'))
                m_word += m_s.at(m_i + 1);
            m_i += 2;
        } else if (c == QLatin1Char('\'')) {
            const qsizetype end = m_s.indexOf(QLatin1Char('\''), m_i + 1);
            if (end < 0)
                return cannot(QStringLiteral("unbalanced single quote"));
            m_word += m_s.mid(m_i + 1, end - m_i - 1);
            m_i = end + 1;
        } else if (c == QLatin1Char('"')) {
            ++m_i;
            while (m_i < m_s.size() && m_s.at(m_i) != QLatin1Char('"')) {
                const QChar d = m_s.at(m_i);
                if (d == QLatin1Char('\\') && m_i + 1 < m_s.size()) {
                    m_word += m_s.at(m_i + 1);
                    m_i += 2;
                } else if (d == QLatin1Char('$') || d == QLatin1Char('`')) {
                    if (Status s = expansion(); !s)
                        return s;
                } else {
                    m_word += d;
                    ++m_i;
                }
            }
            if (m_i >= m_s.size())
                return cannot(QStringLiteral("unbalanced double quote"));
            ++m_i;
        } else if (c == QLatin1Char('$') || c == QLatin1Char('`')) {
            return expansion();
        } else {
            if (c == QLatin1Char('*') || c == QLatin1Char('?') || c == QLatin1Char('['))
                m_wordDynamic = true; // a glob: the words are only known at run time
            m_word += c;
            m_unquoted += c;
            ++m_i;
        }
        return Ok{};
    }

    // $NAME, ${…}, $((…)), $(…) and `…`: the value is unknown here; command substitutions are
    // commands of their own and are parsed as such.
    Status expansion()
    {
        m_wordDynamic = true;
        m_word += QLatin1Char('$');
        if (m_s.at(m_i) == QLatin1Char('`')) {
            QString inner;
            qsizetype j = m_i + 1;
            for (; j < m_s.size() && m_s.at(j) != QLatin1Char('`'); ++j) {
                if (m_s.at(j) == QLatin1Char('\\') && j + 1 < m_s.size())
                    ++j;
                inner += m_s.at(j);
            }
            if (j >= m_s.size())
                return cannot(QStringLiteral("unbalanced backtick"));
            m_i = j + 1;
            return nested(inner);
        }
        const QChar next = peek(1);
        if (next == QLatin1Char('\'') || next == QLatin1Char('"'))
            return cannot(QStringLiteral("$'…' and $\"…\" quoting are not followed"));
        if (next == QLatin1Char('['))
            return cannot(QStringLiteral("$[ … ] arithmetic is not followed"));
        if (next == QLatin1Char('(') && peek(2) == QLatin1Char('(')) {
            // Plain arithmetic only: anything that could hide a command (or make it `$( (…) )`) asks.
            const qsizetype end = m_s.indexOf(QStringLiteral("))"), m_i + 3);
            if (end < 0)
                return cannot(QStringLiteral("unbalanced $(( … ))"));
            const QString arithmetic = m_s.mid(m_i + 3, end - m_i - 3);
            for (const QChar c : arithmetic)
                if (QStringLiteral("$`()'\"\\[").contains(c))
                    return cannot(QStringLiteral("expansions or parentheses inside $(( … )) are not followed"));
            // bash evaluates a variable named in arithmetic as an expression of its own, and an
            // array subscript in that value runs command substitutions (x='a[$(cmd)]'; $((x))).
            for (const QChar c : arithmetic)
                if (c.isLetter() || c == QLatin1Char('_'))
                    return cannot(
                        QStringLiteral("a variable inside $(( … )) is evaluated as code by bash (x='a[$(cmd)]')"));
            m_i = end + 2;
            return Ok{};
        }
        if (next == QLatin1Char('(')) {
            // Find the matching parenthesis, respecting quotes and nesting.
            int level = 0;
            qsizetype j = m_i + 1;
            for (; j < m_s.size(); ++j) {
                const QChar d = m_s.at(j);
                if (d == QLatin1Char('\\')) {
                    ++j;
                } else if (d == QLatin1Char('\'')) {
                    j = m_s.indexOf(QLatin1Char('\''), j + 1);
                    if (j < 0)
                        return cannot(QStringLiteral("unbalanced single quote"));
                } else if (d == QLatin1Char('(')) {
                    ++level;
                } else if (d == QLatin1Char(')') && --level == 0) {
                    break;
                }
            }
            if (j >= m_s.size())
                return cannot(QStringLiteral("unbalanced $( … )"));
            const QString inner = m_s.mid(m_i + 2, j - m_i - 2);
            m_i = j + 1;
            return nested(inner);
        }
        if (next == QLatin1Char('{')) {
            const qsizetype end = m_s.indexOf(QLatin1Char('}'), m_i + 2);
            if (end < 0)
                return cannot(QStringLiteral("unbalanced ${ … }"));
            const QString inner = m_s.mid(m_i + 2, end - m_i - 2);
            for (const QChar c : inner)
                if (QStringLiteral("$`'\"\\{").contains(c))
                    return cannot(QStringLiteral("quotes or expansions inside ${ … } are not followed"));
            if (Status s = plainParameter(inner); !s)
                return s;
            m_i = end + 1;
            return Ok{};
        }
        ++m_i;
        while (m_i < m_s.size() && (m_s.at(m_i).isLetterOrNumber() || m_s.at(m_i) == QLatin1Char('_')))
            ++m_i;
        if (m_i < m_s.size() && QStringLiteral("@*#?$!-").contains(m_s.at(m_i)) && m_word.endsWith(QLatin1Char('$')))
            ++m_i;
        return Ok{};
    }

    // ${NAME}, ${#NAME}, ${NAME:-word} and the pattern operators only. Indirection (${!x}),
    // transformations (${x@P} expands prompt escapes, $(…) included), subscripts (${a[i]}) and
    // substrings (${x:i}) evaluate code or arithmetic that bash takes from variables' values.
    static Status plainParameter(const QString &inner)
    {
        qsizetype i = inner.startsWith(QLatin1Char('#')) && inner.size() > 1 ? 1 : 0;
        const qsizetype nameStart = i;
        if (i < inner.size() && QStringLiteral("@*#?$-0123456789").contains(inner.at(i))
            && (i + 1 == inner.size() || !inner.at(i).isDigit())) {
            ++i;
        } else {
            while (i < inner.size() && (inner.at(i).isLetterOrNumber() || inner.at(i) == QLatin1Char('_')))
                ++i;
        }
        if (i == nameStart)
            return cannot(QStringLiteral("${%1} is not a plain parameter (indirection ${!x} and the like run code)")
                              .arg(inner.left(40)));
        if (nameStart == 1 && i != inner.size())
            return cannot(QStringLiteral("${%1} is not followed").arg(inner.left(40)));
        const QStringView rest = QStringView(inner).sliced(i);
        if (rest.isEmpty())
            return Ok{};
        static const QStringList operators = {QStringLiteral(":-"), QStringLiteral(":="), QStringLiteral(":+"),
            QStringLiteral(":?"), QStringLiteral("-"), QStringLiteral("="), QStringLiteral("+"), QStringLiteral("?"),
            QStringLiteral("#"), QStringLiteral("%"), QStringLiteral("/")};
        for (const QString &op : operators)
            if (rest.startsWith(op))
                return Ok{};
        if (rest.startsWith(QLatin1Char('[')))
            return cannot(QStringLiteral("the subscript of ${%1} is evaluated as code by bash").arg(inner.left(40)));
        if (rest.startsWith(QLatin1Char('@')))
            return cannot(QStringLiteral("${%1} transforms the value (@P runs the command substitutions in it)")
                              .arg(inner.left(40)));
        if (rest.startsWith(QLatin1Char(':')))
            return cannot(QStringLiteral("the offset in ${%1} is evaluated as arithmetic, which can run code")
                              .arg(inner.left(40)));
        return cannot(QStringLiteral("${%1} is not followed").arg(inner.left(40)));
    }

    Status nested(const QString &inner)
    {
        Parser parser(inner, m_depth + 1);
        auto parsed = parser.run();
        if (!parsed)
            return parsed.error();
        if (parser.m_failure)
            return *parser.m_failure;
        m_nested += *parsed;
        return Ok{};
    }

    // <, >, >>, >|, <>, &>, &>>, N>, >&N, <&N; << and <<< are here documents and strings.
    Status redirect()
    {
        // A number right before it is the descriptor, not a word.
        if (m_inWord && !m_word.isEmpty()
            && std::all_of(m_word.cbegin(), m_word.cend(), [](QChar c) { return c.isDigit(); }) && !m_wordDynamic) {
            m_word.clear();
            m_inWord = false;
        } else {
            endWord();
        }
        QString op;
        while (m_i < m_s.size() && QStringLiteral("<>&|").contains(m_s.at(m_i)) && op.size() < 3)
            op += m_s.at(m_i++);
        if (op.startsWith(QLatin1String("<<")))
            return cannot(QStringLiteral("here documents (<<) are not followed"));
        if (op.endsWith(QLatin1Char('&')) && m_i < m_s.size()
            && (m_s.at(m_i).isDigit() || m_s.at(m_i) == QLatin1Char('-'))) {
            ++m_i; // >&2, <&0, >&-: descriptors, not files
            return Ok{};
        }
        if (op.contains(QLatin1Char('|')) && op != QLatin1String(">|"))
            return cannot(QStringLiteral("unexpected '%1'").arg(op));
        while (m_i < m_s.size() && (m_s.at(m_i) == QLatin1Char(' ') || m_s.at(m_i) == QLatin1Char('\t')))
            ++m_i;
        // The target is one word.
        const QString savedWord = m_word;
        m_word.clear();
        m_inWord = false;
        const bool savedDynamic = m_wordDynamic;
        m_wordDynamic = false;
        while (m_i < m_s.size() && !QStringLiteral(" \t\n;&|<>()").contains(m_s.at(m_i)))
            if (Status s = wordChar(); !s)
                return s;
        if (!m_inWord)
            return cannot(QStringLiteral("'%1' without a target").arg(op));
        const QString direction = op.contains(QLatin1Char('<')) ? QStringLiteral("<")
            : op.endsWith(QLatin1String(">>"))                  ? QStringLiteral(">>")
                                                                : QStringLiteral(">");
        m_redirects.append({{direction, m_word}, false, {}, m_wordDynamic ? QList<qsizetype>{1} : QList<qsizetype>{}});
        m_unquoted.clear();
        m_word = savedWord;
        m_wordDynamic = savedDynamic;
        m_inWord = false;
        return Ok{};
    }

    void endWord()
    {
        if (!m_inWord)
            return;
        // {a,b} and {1..3} become several words, any of which may be an option or a program.
        static const QRegularExpression brace(QStringLiteral("\\{[^{}]*(,|\\.\\.)[^{}]*\\}"));
        if (!m_failure && brace.match(m_unquoted).hasMatch())
            m_failure = cannot(QStringLiteral("brace expansion ('%1') is not followed").arg(m_word.left(60)));
        m_unquoted.clear();
        if (m_words.isEmpty() && m_wordDynamic)
            m_programDynamic = true;
        if (m_wordDynamic)
            m_runtime.append(m_words.size());
        m_words.append(m_word);
        m_word.clear();
        m_inWord = false;
        m_wordDynamic = false;
    }

    void endCommand()
    {
        // Leading assignments (FOO=bar cmd) set the environment; `!` and `time` only change how
        // the command's status is reported.
        qsizetype first = 0;
        bool dynamic = m_programDynamic;
        while (first < m_words.size()
            && (isAssignment(m_words.at(first)) || m_words.at(first) == QLatin1String("!")
                || m_words.at(first) == QLatin1String("time")))
            ++first;
        if (first > 0)
            dynamic = false; // the dynamic word (if any) was an assignment's value
        QStringList argv = m_words.mid(first);
        if (!argv.isEmpty() && isKeyword(argv.first()))
            m_failure = cannot(QStringLiteral("shell control structures ('%1') are not followed").arg(argv.first()));
        if (!argv.isEmpty()) {
            // A program named by an expansion (re-checked after dropping assignments).
            const QString &program = argv.first();
            if (first > 0)
                dynamic = program.contains(QLatin1Char('$')) || program.contains(QLatin1Char('*'))
                    || program.contains(QLatin1Char('?')) || program.contains(QLatin1Char('['));
            QStringList names;
            for (qsizetype i = 0; i < first; ++i)
                if (isAssignment(m_words.at(i)))
                    names.append(m_words.at(i).section(QLatin1Char('='), 0, 0));
            QList<qsizetype> runtime;
            for (qsizetype i : std::as_const(m_runtime))
                if (i >= first)
                    runtime.append(i - first);
            m_segments.append({argv, dynamic, names, runtime});
        }
        m_segments += m_nested;
        m_segments += m_redirects;
        m_nested.clear();
        m_redirects.clear();
        m_words.clear();
        m_runtime.clear();
        m_programDynamic = false;
    }

public:
    std::optional<Error> m_failure;

private:
    const QString &m_s;
    int m_depth;
    qsizetype m_i = 0;
    QString m_word;
    bool m_inWord = false;
    bool m_wordDynamic = false;
    bool m_programDynamic = false;
    QString m_unquoted; // the current word's unquoted characters (for brace expansion)
    QStringList m_words;
    QList<qsizetype> m_runtime; // indexes of m_words known only at run time
    QList<ShellSegment> m_segments, m_nested, m_redirects;
};
} // namespace

Result<QList<ShellSegment>> parseShell(const QString &script)
{
    Parser parser(script, 0);
    auto segments = parser.run();
    if (segments && parser.m_failure)
        return *parser.m_failure;
    return segments;
}

} // namespace airlock::policy
