// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArrayView>

namespace airlock::http {

// Whether every line break in `text` is CRLF: no CR without LF after it, no LF without CR before
// it. HTTP/1.1 heads are read this strictly wherever Airlock reads one (RFC 9112): a proxy in
// front that took a bare CR or LF for a line's end would read other headers than Airlock does.
inline bool onlyCrlf(QByteArrayView text)
{
    for (qsizetype i = 0; i < text.size(); ++i) {
        if (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n'))
            return false;
        if (text[i] == '\n' && (i == 0 || text[i - 1] != '\r'))
            return false;
    }
    return true;
}

} // namespace airlock::http
