// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QStringList>

namespace airlock {

// Replaces granted secret values wherever they appear: as they are, in hex (both cases) and in
// base64 (standard and URL-safe, at each of the three alignments a value can have inside a longer
// encoded text). The encoded forms are found wrapped too, as base64, openssl base64, xxd -p and
// od -An -tx1 print them: up to kMaxGap whitespace characters may stand between any two of their
// characters. The replacement has the same length as what it replaces ("[REDACTED****]", or "*"
// for short matches), and leaves the whitespace of a wrapped form where it was, so stream offsets,
// byte counts and lines stay true.
class Redactor {
public:
    struct Hits {
        int count = 0;
        QStringList secrets; // names, each once
        explicit operator bool() const { return count > 0; }
        void merge(const Hits &other);
    };

    void add(const QString &name, const QByteArray &value);
    bool isEmpty() const { return m_patterns.isEmpty(); }

    Hits redactInPlace(QByteArray &data) const;
    // How many bytes at the end of data could be the start of a secret: a stream holds them back
    // until the next chunk shows whether they are.
    qsizetype partialSuffix(QByteArrayView data) const;
    // Every string (and key) of a JSON payload.
    QJsonObject redactJson(const QJsonObject &object, Hits *hits) const;

    static QByteArray mask(qsizetype length);

    // The most whitespace between two characters of an encoded form ("\r\n"; od's "\n " between
    // lines). A longer run ends a match, which bounds what partialSuffix holds back: at most
    // (1 + kMaxGap) times the longest form.
    static constexpr qsizetype kMaxGap = 2;

private:
    struct Pattern {
        QByteArray bytes;
        QString name;
        QList<qsizetype> failure; // for partialSuffix
        bool wrapped = false;     // an encoded form: whitespace may stand between its characters
    };
    QJsonValue redactValue(const QJsonValue &value, Hits *hits) const;
    QString redactString(const QString &s, Hits *hits) const;

    QList<Pattern> m_patterns; // longest first
};

} // namespace airlock
