// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>

namespace airlock {

// Whether two secrets are equal, in a time that depends on their length alone (not on where they
// first differ).
inline bool constantTimeEquals(const QByteArray &a, const QByteArray &b)
{
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

} // namespace airlock
