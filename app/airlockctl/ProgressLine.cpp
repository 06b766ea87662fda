// SPDX-License-Identifier: Apache-2.0
#include "ProgressLine.h"

#include "model/DisplayText.h"
#include "model/Units.h"

#include <cstdio>
#include <unistd.h>

namespace airlock::cli {

ProgressLine::ProgressLine()
    : m_terminal(::isatty(STDERR_FILENO) == 1)
{
}

void ProgressLine::update(const QString &what, qint64 done, qint64 total, bool force)
{
    if (!m_terminal || (!force && m_since.isValid() && m_since.elapsed() < 100))
        return;
    m_since.start();
    // `what` may hold a name a sandbox chose: shown inert.
    QString line
        = display::escaped(what, 60) + QStringLiteral("  ") + units::formatBytes(uint64_t(std::max<qint64>(done, 0)));
    if (total > 0)
        line += QStringLiteral(" of %1  %2%")
                    .arg(units::formatBytes(uint64_t(total)))
                    .arg(int(std::min<qint64>(done, total) * 100 / total));
    const QByteArray bytes = "\r" + line.toUtf8() + "\x1b[K";
    (void)::write(STDERR_FILENO, bytes.constData(), size_t(bytes.size()));
    m_drawn = true;
}

void ProgressLine::clear()
{
    if (!m_drawn)
        return;
    (void)::write(STDERR_FILENO, "\r\x1b[K", 4);
    m_drawn = false;
}

} // namespace airlock::cli
