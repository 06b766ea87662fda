// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonObject>

namespace airlock {

// A run exported as a self-contained bundle: a header record, then the history.export records,
// sealed by the SHA-256 of their JSON lines. One writer and one checker for every front end (the
// CLI's `export`, the console's Export run…), so a bundle from either verifies with both.
class ExportBundle {
public:
    enum class Format { Jsonl, Json }; // one record per line, the last its sha256; or one document

    ExportBundle(const QString &run, Format format);

    void add(const QJsonObject &record);
    // jsonl: the lines added since the last call, ready to be written (a bundle streams to disk);
    // json: nothing until finish().
    QByteArray take();
    // The rest of the bundle: the sha256 line, or the whole json document.
    QByteArray finish();
    QString digest() const { return m_digest; }
    qsizetype records() const { return m_count; }

    struct Checked {
        qsizetype records = 0;
        QString sha256;
    };
    // Whole and unchanged, in either format; the error says what is wrong.
    static Result<Checked> verify(const QByteArray &bundle);

private:
    QString m_run;
    Format m_format;
    QCryptographicHash m_hash{QCryptographicHash::Sha256};
    QByteArray m_pending;
    QJsonArray m_records; // json only
    qsizetype m_count = 0;
    QString m_digest;
};

} // namespace airlock
