// SPDX-License-Identifier: Apache-2.0
#include "review/UnifiedDiff.h"

#include <QHash>
#include <QList>

#include <algorithm>
#include <optional>
#include <vector>

namespace airlock::review {

namespace {
constexpr int kMaxEdits = 4000; // D, Myers's edit distance: the work is (N+M)·D, its trace D²

// The lines of a text, each with its newline (the last may have none).
QList<QByteArrayView> linesOf(const QByteArray &text)
{
    QList<QByteArrayView> lines;
    qsizetype start = 0;
    while (start < text.size()) {
        const qsizetype nl = text.indexOf('\n', start);
        const qsizetype end = nl < 0 ? text.size() : nl + 1;
        lines.append(QByteArrayView(text.constData() + start, end - start));
        start = end;
    }
    return lines;
}

enum class Op : char { Same = ' ', Removed = '-', Added = '+' };

// Myers's greedy shortest edit script over line numbers a[0..n) and b[0..m), as a list of ops
// (Same, Removed, Added) from the start; an empty optional past kMaxEdits.
std::optional<std::vector<Op>> shortestEdit(const std::vector<int> &a, const std::vector<int> &b)
{
    const int n = int(a.size()), m = int(b.size()), max = std::min(n + m, kMaxEdits);
    const int offset = max + 1;
    std::vector<int> store(size_t(2) * size_t(max) + 3, 0);
    int *v = store.data() + offset; // v[k] for k in [-max - 1, max + 1]
    std::vector<std::vector<int>> trace; // v's window [-d, d] before each round d
    for (int d = 0; d <= max; ++d) {
        trace.emplace_back(v - d, v + d + 1);
        for (int k = -d; k <= d; k += 2) {
            int x = (k == -d || (k != d && v[k - 1] < v[k + 1])) ? v[k + 1] // down: an added line
                                                                 : v[k - 1] + 1; // right: a removed line
            int y = x - k;
            while (x < n && y < m && a[size_t(x)] == b[size_t(y)])
                ++x, ++y;
            v[k] = x;
            if (x >= n && y >= m) {
                // Walk back through the rounds to the start.
                std::vector<Op> ops;
                for (int e = d; e > 0; --e) {
                    const int *before = trace[size_t(e)].data() + e; // v before round e
                    const auto at = [&](int kk) { return before[kk]; };
                    const int kk = x - y;
                    const bool down = kk == -e || (kk != e && at(kk - 1) < at(kk + 1));
                    const int prevK = down ? kk + 1 : kk - 1;
                    const int prevX = at(prevK), prevY = prevX - prevK;
                    while (x > (down ? prevX : prevX + 1) && y > (down ? prevY + 1 : prevY)) {
                        ops.push_back(Op::Same);
                        --x, --y;
                    }
                    ops.push_back(down ? Op::Added : Op::Removed);
                    x = prevX;
                    y = prevY;
                }
                while (x > 0 && y > 0) {
                    ops.push_back(Op::Same);
                    --x, --y;
                }
                std::reverse(ops.begin(), ops.end());
                return ops;
            }
        }
    }
    return std::nullopt;
}
} // namespace

bool looksBinary(const QByteArray &bytes)
{
    return bytes.left(8192).contains('\0');
}

QByteArray unifiedHunks(const QByteArray &before, const QByteArray &after, int context)
{
    if (before == after)
        return {};
    const QList<QByteArrayView> a = linesOf(before), b = linesOf(after);
    // The common start and end are not searched.
    qsizetype head = 0;
    while (head < a.size() && head < b.size() && a[head] == b[head])
        ++head;
    qsizetype tail = 0;
    while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
        ++tail;
    // Each distinct line a number, so that the search compares ints.
    QHash<QByteArrayView, int> numbers;
    const auto number = [&](QByteArrayView line) {
        auto at = numbers.constFind(line);
        if (at == numbers.cend())
            at = numbers.insert(line, int(numbers.size()));
        return *at;
    };
    std::vector<int> na, nb;
    for (qsizetype i = head; i < a.size() - tail; ++i)
        na.push_back(number(a[i]));
    for (qsizetype i = head; i < b.size() - tail; ++i)
        nb.push_back(number(b[i]));
    std::vector<Op> ops(size_t(head), Op::Same);
    if (auto middle = shortestEdit(na, nb)) {
        ops.insert(ops.end(), middle->begin(), middle->end());
    } else {
        ops.insert(ops.end(), na.size(), Op::Removed);
        ops.insert(ops.end(), nb.size(), Op::Added);
    }
    ops.insert(ops.end(), size_t(tail), Op::Same);

    // Each op's line in a and in b.
    struct Line {
        Op op;
        qsizetype ai, bi;
    };
    std::vector<Line> lines;
    qsizetype ai = 0, bi = 0;
    for (Op op : ops) {
        lines.push_back({op, ai, bi});
        if (op != Op::Added)
            ++ai;
        if (op != Op::Removed)
            ++bi;
    }
    QByteArray out;
    const qsizetype count = qsizetype(lines.size());
    for (qsizetype i = 0; i < count;) {
        if (lines[size_t(i)].op == Op::Same) {
            ++i;
            continue;
        }
        // A hunk: from `context` before this change to `context` after the last change that is
        // at most 2·context unchanged lines from the one before it.
        const qsizetype start = std::max<qsizetype>(0, i - context);
        qsizetype end = i, same = 0;
        for (qsizetype j = i; j < count && same <= 2 * context; ++j) {
            if (lines[size_t(j)].op == Op::Same) {
                ++same;
            } else {
                same = 0;
                end = j;
            }
        }
        const qsizetype stop = std::min(count, end + 1 + context);
        qsizetype aCount = 0, bCount = 0;
        for (qsizetype j = start; j < stop; ++j) {
            aCount += lines[size_t(j)].op != Op::Added;
            bCount += lines[size_t(j)].op != Op::Removed;
        }
        // diff's numbering: a range of no lines is named by the line before it.
        const auto range = [](qsizetype first, qsizetype n) -> QByteArray {
            return QByteArray::number(n == 0 ? first : first + 1)
                + (n == 1 ? QByteArray() : ',' + QByteArray::number(n));
        };
        out += "@@ -" + range(lines[size_t(start)].ai, aCount) + " +" + range(lines[size_t(start)].bi, bCount)
            + " @@\n";
        for (qsizetype j = start; j < stop; ++j) {
            const Line &l = lines[size_t(j)];
            const QByteArrayView text = l.op == Op::Added ? b[l.bi] : a[l.ai];
            out += char(l.op);
            out += text;
            if (!text.endsWith('\n'))
                out += "\n\\ No newline at end of file\n";
        }
        i = stop;
    }
    return out;
}

} // namespace airlock::review
