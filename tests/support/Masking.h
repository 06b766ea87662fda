// SPDX-License-Identifier: Apache-2.0
// What the redactor must make of an encoded value: the redactor's own suite and the end-to-end one
// (a sandbox piping a secret through base64, xxd, od) expect the same bytes.
#pragma once

#include "secrets/Redactor.h"

#include <QByteArray>

#include <utility>

namespace airlock::test {

// `text` with its non-space characters from the `from`-th on, `length` of them, replaced by a mask
// as the redactor writes it (spaces, line breaks and colour sequences, ESC [ ... m, stay where they
// were).
inline QByteArray maskedAt(QByteArray text, qsizetype from, qsizetype length)
{
    const QByteArray mask = Redactor::mask(length);
    for (qsizetype i = 0, seen = 0, j = 0; i < text.size() && j < length; ++i) {
        if (text.at(i) == '\x1b') {
            while (i + 1 < text.size() && !(text.at(i + 1) >= 0x40 && text.at(i + 1) <= 0x7e && text.at(i + 1) != '['))
                ++i;
            ++i; // the final byte
            continue;
        }
        if (QByteArrayView(" \n\r\t").contains(text.at(i)))
            continue;
        if (seen++ >= from)
            text[i] = mask.at(j++);
    }
    return text;
}

// The characters of base64(prefix + value) that depend on the value alone, for a prefix of
// `shift` bytes: where they start and how many there are. The one before (shift 1 or 2) and the
// one after (unless the value ends a 3-byte group) mix in bits of what surrounds it.
inline std::pair<qsizetype, qsizetype> base64Span(qsizetype shift, qsizetype valueSize)
{
    const qsizetype total = shift + valueSize, from = shift == 0 ? 0 : shift + 1;
    return {from, (total * 4 + 2) / 3 - (total % 3 == 0 ? 0 : 1) - from};
}

} // namespace airlock::test
