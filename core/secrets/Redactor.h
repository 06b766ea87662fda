// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QStringList>

#include <array>

namespace airlock {

// Replaces granted secret values wherever they appear: as they are, in hex (both cases) and in
// base64 (standard and URL-safe, at each of the three alignments a value can have inside a longer
// encoded text). The forms are found wrapped too, as base64, openssl base64, xxd -p and od -An -tx1
// print them, and indented (YAML and PEM blocks, `sed 's/^/    /'`): between any two of their
// characters may stand up to kMaxGap whitespace characters, or a line break with up to kMaxIndent
// spaces and tabs after it; and escape sequences (grep --color's) too, inside a match. A value
// with whitespace of its own is found also with other whitespace in its place. The replacement has the
// same length as what it replaces ("[REDACTED****]", or "*" for short matches) and covers only the
// form's own characters: whitespace and escape sequences stay where they were, so stream offsets,
// byte counts, lines and colours stay true. Matches that overlap (two secrets sharing characters)
// are each masked.
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

    // data as a whole (a stream's chunks go through a RedactionStream).
    Hits redactInPlace(QByteArray &data) const;
    // How many bytes at the end of data could be the start of a secret: what a RedactionStream
    // that was written data holds back.
    qsizetype partialSuffix(QByteArrayView data) const;
    // Every string (and key) of a JSON payload.
    QJsonObject redactJson(const QJsonObject &object, Hits *hits) const;

    static QByteArray mask(qsizetype length);

    // The most whitespace between two characters of a form ("\r\n"; od's "\n " between lines)...
    static constexpr qsizetype kMaxGap = 2;
    // ... or a line break (with up to kMaxGap whitespace characters before it) and an indent of
    // up to this many spaces and tabs.
    static constexpr qsizetype kMaxIndent = 16;
    // Bytes of escape sequences that may stand there as well.
    static constexpr qsizetype kMaxEscapeBytes = 64;
    // All told, the most bytes between two characters. A longer run ends a match, which bounds what
    // a stream holds back: less than (1 + kMaxSpan) times the longest form.
    static constexpr qsizetype kMaxSpan = kMaxGap + 1 + kMaxIndent + kMaxEscapeBytes;

private:
    friend class RedactionStream;
    struct Pattern {
        QByteArray bytes;
        QString name;
        QList<qsizetype> failure; // KMP: where a match falls back to when the next byte breaks it
        bool wrapped = false; // no whitespace of its own: some may stand between its characters
    };
    static bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
    QJsonValue redactValue(const QJsonValue &value, Hits *hits) const;
    QString redactString(const QString &s, Hits *hits) const;

    QList<Pattern> m_patterns; // longest first
    std::array<QList<qsizetype>, 256> m_startingWith; // by first byte: patterns (their index) that start with it
};

} // namespace airlock
