// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>
#include <QList>
#include <QString>

namespace airlock::daytona {

// One part of a multipart/form-data body: its field name, its file name (when it is a file) and
// its bytes.
struct FormPart {
    QString name;
    QString filename;
    QByteArray data;
    QByteArray contentType; // empty: application/octet-stream
};

// The boundary of a "multipart/form-data; boundary=…" content type; an error that says what is
// wrong otherwise.
Result<QByteArray> multipartBoundary(const QByteArray &contentType);
// The parts of a body, in order; at most maxParts of them.
Result<QList<FormPart>> parseMultipart(const QByteArray &body, const QByteArray &boundary, int maxParts);
// A multipart/form-data body of these parts with this boundary (which appears in none of them).
QByteArray writeMultipart(const QList<FormPart> &parts, const QByteArray &boundary);
// A boundary that does not appear in any of the parts.
QByteArray freshBoundary(const QList<FormPart> &parts);

} // namespace airlock::daytona
