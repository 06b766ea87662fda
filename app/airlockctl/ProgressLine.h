// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QElapsedTimer>
#include <QString>

namespace airlock::cli {

// One line of progress on stderr, rewritten in place ("vacuuming  312 MiB of 1.0 GiB  31%"),
// only when stderr is a terminal and never more than ten times a second; clear() takes it away
// before the command prints its result. Pipes and files get nothing from it.
class ProgressLine {
public:
    ProgressLine();
    ~ProgressLine() { clear(); }
    ProgressLine(const ProgressLine &) = delete;
    ProgressLine &operator=(const ProgressLine &) = delete;

    bool shown() const { return m_terminal; }
    // `what` and byte counts; total 0 when unknown.
    void update(const QString &what, qint64 done, qint64 total, bool force = false);
    void clear();

private:
    bool m_terminal = false;
    bool m_drawn = false;
    QElapsedTimer m_since;
};

} // namespace airlock::cli
