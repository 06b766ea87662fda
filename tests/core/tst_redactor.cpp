// SPDX-License-Identifier: Apache-2.0
// The redactor: every form of a secret masked at the same length, wrapped into lines as base64,
// openssl, xxd -p and od print it too, indented, and coloured; what could begin a secret held back
// at a chunk's end, and no more than that; a chunk full of secrets costs about as much as one
// without any, and a stream of tiny writes about as much as one of large ones.
#include "Masking.h"
#include "secrets/RedactionStream.h"
#include "secrets/Redactor.h"

#include <QElapsedTimer>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

namespace {
// Text broken into lines of `width` characters, each ended by `eol` (as base64 and xxd -p do).
QByteArray wrapped(const QByteArray &text, qsizetype width, const QByteArray &eol = "\n")
{
    QByteArray out;
    for (qsizetype i = 0; i < text.size(); i += width)
        out += text.mid(i, width) + eol;
    return out;
}

// od -An -tx1: " xx" for every byte, 16 to a line.
QByteArray odHex(const QByteArray &bytes)
{
    QByteArray out;
    for (qsizetype i = 0; i < bytes.size(); ++i)
        out += ' ' + bytes.mid(i, 1).toHex() + (i % 16 == 15 || i + 1 == bytes.size() ? "\n" : "");
    return out;
}

// Every line of text with `indent` before it (as `sed 's/^/    /'` and YAML block scalars have).
QByteArray indented(const QByteArray &text, const QByteArray &indent)
{
    QByteArray out;
    for (const QByteArray &line : text.split('\n'))
        out += line.isEmpty() ? line : indent + line + '\n';
    return out;
}

// Every line of text between two colour sequences (grep --color=always on each line).
QByteArray coloured(const QByteArray &text)
{
    QByteArray out;
    for (const QByteArray &line : text.split('\n'))
        out += line.isEmpty() ? line : "\x1b[01;31m\x1b[K" + line + "\x1b[m\x1b[K\n";
    return out;
}

// What a sandbox's stream makes of data written in pieces.
QByteArray written(const Redactor &r, QByteArrayView data, qsizetype piece, qsizetype *maxHold = nullptr)
{
    RedactionStream stream;
    Redactor::Hits hits;
    QByteArray out;
    for (qsizetype i = 0; i < data.size(); i += piece) {
        out += stream.write(r, data.sliced(i, std::min(piece, data.size() - i)), &hits);
        if (maxHold)
            *maxHold = std::max(*maxHold, stream.held());
    }
    return out + stream.finish();
}

// The same through redactInPlace and partialSuffix: each piece masked with what was held back
// before it, the possible start of a secret held back again, the rest flushed at the end.
QByteArray streamed(const Redactor &r, const QByteArray &data, qsizetype piece, qsizetype *maxHold = nullptr)
{
    QByteArray out, carry;
    for (qsizetype i = 0; i < data.size(); i += piece) {
        QByteArray clean = carry + data.mid(i, piece);
        r.redactInPlace(clean);
        const qsizetype hold = r.partialSuffix(clean);
        if (maxHold)
            *maxHold = std::max(*maxHold, hold);
        carry = clean.right(hold);
        clean.chop(hold);
        out += clean;
    }
    return out + carry;
}
} // namespace

class TestRedactor final : public QObject {
    Q_OBJECT
    const QByteArray secret = "s3cr3t-V4lue-0042";
    // 120 bytes: wraps in base64 (160 characters) and in hex (240).
    static QByteArray longValue()
    {
        return "lt-"
               "5URYX45jqRO25g3uK5kbAAegiuE8LCAnmuO6RvvBfOHZ1FzfnKpcmgfmqSWstSqkNh5brTo21oKpdaZPNtriSPvMUC6j7OrJ1Bkkz7T"
               "3hSiXLBwoh6MdH";
    }

private Q_SLOTS:
    void everyFormIsMaskedAtTheSameLength()
    {
        Redactor r;
        r.add(QStringLiteral("K"), secret);
        for (const QByteArray &form :
            {secret, secret.toHex(), secret.toHex().toUpper(), QByteArray("x" + secret).toBase64(),
                QByteArray("xy" + secret + "\n").toBase64(QByteArray::Base64UrlEncoding)}) {
            QByteArray data = "before " + form + " after";
            const qsizetype size = data.size();
            const Redactor::Hits hits = r.redactInPlace(data);
            QCOMPARE(hits.count, 1);
            QCOMPARE(hits.secrets, QStringList{QStringLiteral("K")});
            QCOMPARE(data.size(), size);
            QVERIFY2(
                data.startsWith("before ") && data.endsWith(" after") && data.contains("[REDACTED"), data.constData());
        }
        QCOMPARE(Redactor::mask(5), QByteArray("*****"));
        QCOMPARE(Redactor::mask(17), QByteArray("[REDACTED*******]"));
    }

    void aPossibleStartIsHeldBack()
    {
        Redactor r;
        r.add(QStringLiteral("K"), secret);
        QCOMPARE(r.partialSuffix("output then s3cr3t-V4"), qsizetype(9));
        QCOMPARE(r.partialSuffix("output then s"), qsizetype(1));
        QCOMPARE(r.partialSuffix("output, no secret here\n"), qsizetype(0));
        // KMP, not a naive comparison: "s3s3cr" ends with "s3cr", a prefix.
        QCOMPARE(r.partialSuffix("s3s3cr"), qsizetype(4));
    }

    // A long value (it wraps) at each of the three places it can start in a base64 group, and in
    // hex: every character that depends on the value alone is masked, the lines stay where they
    // were, and the characters it shares with its neighbours (one at each end of base64) do not
    // give it away.
    void wrappedFormsAreMasked_data()
    {
        QTest::addColumn<QByteArray>("output");
        QTest::addColumn<qsizetype>("from"); // where the value's own characters start, spaces not counted
        QTest::addColumn<qsizetype>("length"); // how many there are
        const QByteArray value = longValue();
        for (int shift = 0; shift < 3; ++shift) {
            const QByteArray prefix = QByteArray("ab").left(shift);
            const QByteArray b64 = QByteArray(prefix + value).toBase64();
            const auto [from, length] = base64Span(shift, value.size());
            QTest::addRow("base64 wraps at 76 columns, value at offset %d", shift)
                << wrapped(b64, 76) << from << length;
            QTest::addRow("openssl base64 wraps at 64 columns, value at offset %d", shift)
                << wrapped(b64, 64) << from << length;
            QTest::addRow("base64 -w 0, value at offset %d", shift) << QByteArray(b64 + '\n') << from << length;
            QTest::addRow("base64 with CRLF line ends, value at offset %d", shift)
                << wrapped(b64, 76, "\r\n") << from << length;
            QTest::addRow("URL-safe base64 at 60 columns, value at offset %d", shift)
                << wrapped(QByteArray(prefix + value).toBase64(QByteArray::Base64UrlEncoding), 60) << from << length;
            QTest::addRow("xxd -p wraps at 60 columns, value at offset %d", shift)
                << wrapped(QByteArray(prefix + value).toHex(), 60) << qsizetype(2 * shift) << 2 * value.size();
            QTest::addRow("xxd -p -u, value at offset %d", shift)
                << wrapped(QByteArray(prefix + value).toHex().toUpper(), 60) << qsizetype(2 * shift)
                << 2 * value.size();
            QTest::addRow("od -An -tx1 spaces every byte, value at offset %d", shift)
                << odHex(prefix + value) << qsizetype(2 * shift) << 2 * value.size();
            QTest::addRow("base64 | sed 's/^/    /', value at offset %d", shift)
                << indented(wrapped(b64, 76), "    ") << from << length;
            QTest::addRow("a YAML block scalar: base64 under 6 spaces, value at offset %d", shift)
                << QByteArray("key: |\n" + indented(wrapped(b64, 76), "      ") + "other: 1\n") << from + 5
                << length; // after "key:|"
            QTest::addRow("a PEM-like block indented by a tab, CRLF, value at offset %d", shift)
                << indented(wrapped(b64, 64, "\r\n"), "\t") << from << length;
            QTest::addRow("xxd -p indented by 16 columns, value at offset %d", shift)
                << indented(wrapped(QByteArray(prefix + value).toHex(), 60), QByteArray(16, ' '))
                << qsizetype(2 * shift) << 2 * value.size();
            QTest::addRow("od -An -tx1 indented by 8 columns, value at offset %d", shift)
                << indented(odHex(prefix + value), "        ") << qsizetype(2 * shift) << 2 * value.size();
            QTest::addRow("grep --color=always on every base64 line, value at offset %d", shift)
                << coloured(wrapped(b64, 76)) << from << length;
            QTest::addRow("grep --color=always on every xxd -p line, indented, value at offset %d", shift)
                << coloured(indented(wrapped(QByteArray(prefix + value).toHex(), 60), "  ")) << qsizetype(2 * shift)
                << 2 * value.size();
        }
        QTest::newRow("the value itself folded at 40 columns") << wrapped(value, 40) << qsizetype(0) << value.size();
    }
    void wrappedFormsAreMasked()
    {
        QFETCH(QByteArray, output);
        QFETCH(qsizetype, from);
        QFETCH(qsizetype, length);
        Redactor r;
        r.add(QStringLiteral("K"), longValue());
        const QByteArray expected = maskedAt(output, from, length);
        QByteArray data = output;
        const Redactor::Hits hits = r.redactInPlace(data);
        QCOMPARE(hits.count, 1);
        QCOMPARE(data, expected);
        // Written in pieces of any size, the stream comes out the same.
        for (qsizetype piece : {1, 2, 3, 7, 59, 60, 61, 76, 77, 100}) {
            QCOMPARE(streamed(r, output, piece), expected);
            QCOMPARE(written(r, output, piece), expected);
        }
    }

    // Colour and erase sequences (grep --color=always's, tput sgr0's) around or inside a value:
    // only the value's own characters are masked, the sequences stay where they were.
    void escapeSequencesStayWhereTheyWere_data()
    {
        QTest::addColumn<QByteArray>("output");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("grep --color=always around the value")
            << QByteArray("token: \x1b[01;31m\x1b[Ks3cr3t-V4lue-0042\x1b[m\x1b[K\n")
            << QByteArray("token: \x1b[01;31m\x1b[K[REDACTED*******]\x1b[m\x1b[K\n");
        QTest::newRow("grep --color=always on a part of it")
            << QByteArray("\x1b[01;31m\x1b[Ks3cr\x1b[m\x1b[K3t-V4lue-0042\n")
            << QByteArray("\x1b[01;31m\x1b[K[RED\x1b[m\x1b[KACTED*******]\n");
        QTest::newRow("bold in the middle, reset by tput sgr0")
            << QByteArray("s3cr3t-\x1b[1mV4lue\x1b(B\x1b[m-0042") << QByteArray("[REDACT\x1b[1mED***\x1b(B\x1b[m****]");
        QTest::newRow("a colour between every hex digit")
            << QByteArray("\x1b[32m7\x1b[33m3\x1b[32m3\x1b[33m3637233742d56346c75652d30303432\x1b[0m")
            << QByteArray("\x1b[32m[\x1b[33mR\x1b[32mE\x1b[33mDACTED************************]\x1b[0m");
        QTest::newRow("a colour and a wrap with its indent between two characters")
            << QByteArray("czNjcjN0LVY0\x1b[0m\n    \x1b[32mbHVlLTAwNDI=\n")
            << QByteArray("[REDACTED***\x1b[0m\n    \x1b[32m*********]I=\n");
        QTest::newRow("ESC and a letter is no sequence: the letter can start a value")
            << QByteArray("\x1bs3cr3t-V4lue-0042\n") << QByteArray("\x1b[REDACTED*******]\n");
        QTest::newRow("an escape opener right before the value does not hide its first character")
            << QByteArray("\x1b[s3cr3t-V4lue-0042 \x1b[?s3cr3t-V4lue-0042")
            << QByteArray("\x1b[[REDACTED*******] \x1b[?[REDACTED*******]");
        QTest::newRow("24-bit colours (a 37-byte sequence) between two characters")
            << QByteArray("s\x1b[01;38;2;255;100;100;48;2;40;40;40m\x1b[K3cr3t-V4lue-0042\x1b[m\x1b[K")
            << QByteArray("[\x1b[01;38;2;255;100;100;48;2;40;40;40m\x1b[KREDACTED*******]\x1b[m\x1b[K");
        QTest::newRow("a sequence that is no colour ends the match (ESC then a control)")
            << QByteArray("s3cr3t-\x1b\x01V4lue-0042") << QByteArray("s3cr3t-\x1b\x01V4lue-0042");
        QTest::newRow("more than kMaxEscapeBytes of sequences between two characters end it")
            << QByteArray("s3cr3t-" + QByteArray("\x1b[0m").repeated(17) + "V4lue-0042")
            << QByteArray("s3cr3t-" + QByteArray("\x1b[0m").repeated(17) + "V4lue-0042");
    }
    void escapeSequencesStayWhereTheyWere()
    {
        QFETCH(QByteArray, output);
        QFETCH(QByteArray, expected);
        Redactor r;
        r.add(QStringLiteral("K"), secret);
        QByteArray data = output;
        r.redactInPlace(data);
        QCOMPARE(data, expected);
        for (qsizetype piece : {1, 2, 5, 16})
            QCOMPARE(written(r, output, piece), expected);
    }

    // A value with whitespace of its own (a passphrase, a PEM key) is found with other whitespace
    // in its place too: folded, indented, a terminal's "\r\n" for its "\n"; its encodings wrap
    // like any other. Only its other characters are masked.
    void aValueWithSpacesIsFoundWithOtherSpacesToo_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<QByteArray>("output");
        QTest::addColumn<QByteArray>("expected");
        const QByteArray pass = "correct horse battery";
        QTest::newRow("as it is, a colour inside") << pass << QByteArray("correct \x1b[1mhorse\x1b[0m battery;")
                                                   << QByteArray("[REDACTE\x1b[1mED***\x1b[0m*******];");
        QTest::newRow("two spaces for one")
            << pass << QByteArray("correct  horse battery;") << QByteArray("[REDACT  ED*** ******];");
        QTest::newRow("fold -w 10") << pass << QByteArray("correct ho\nrse batter\ny\n")
                                    << QByteArray("[REDACT ED\n*** ******\n]\n");
        QTest::newRow("base64 wrapped at 10")
            << pass << wrapped(pass.toBase64(), 10) << QByteArray("[REDACTED*\n**********\n*******]\n");
        const QByteArray pem
            = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\nAQEFAASCBKcwggSjAgEAAoIB\n-----END KEY-----";
        QByteArray indented = pem;
        indented.replace("\n", "\n  ").prepend("  ");
        QByteArray tty = pem;
        tty.replace("\n", "\r\n");
        QTest::newRow("PEM indented by sed") << pem << indented << QByteArray();
        QTest::newRow("PEM through a terminal (\\r\\n)") << pem << tty << QByteArray();
    }
    void aValueWithSpacesIsFoundWithOtherSpacesToo()
    {
        QFETCH(QByteArray, value);
        QFETCH(QByteArray, output);
        QFETCH(QByteArray, expected);
        Redactor r;
        r.add(QStringLiteral("P"), value);
        QByteArray data = output;
        QVERIFY(r.redactInPlace(data));
        if (!expected.isEmpty())
            QCOMPARE(data, expected);
        // No word of it is left, and the lines and their whitespace stay as they were.
        for (const QByteArray &word : value.simplified().split(' '))
            for (const QByteArray &part : word.split('-'))
                QVERIFY2(
                    part.size() < 3 || !data.contains(part), qPrintable(QString::fromLatin1(part + " in " + data)));
        QCOMPARE(data.size(), output.size());
        for (qsizetype i = 0; i < output.size(); ++i)
            if (output.at(i) == '\n' || output.at(i) == '\r')
                QCOMPARE(data.at(i), output.at(i));
        for (qsizetype piece : {1, 3, 7})
            QCOMPARE(written(r, output, piece), data);
    }

    // A wrapped form is found across two writes wherever they meet, the line break before, in or
    // after the cut.
    void aWrappedFormAcrossTwoWrites()
    {
        Redactor r;
        r.add(QStringLiteral("K"), longValue());
        const QByteArray output = "data: " + wrapped(QByteArray("a" + longValue()).toBase64(), 76, "\r\n") + "end\n";
        QByteArray expected = output;
        r.redactInPlace(expected);
        QVERIFY(expected != output);
        for (qsizetype cut = 1; cut < output.size(); ++cut) {
            QByteArray out, first = output.left(cut), second;
            r.redactInPlace(first);
            const qsizetype hold = r.partialSuffix(first);
            second = first.right(hold) + output.mid(cut);
            first.chop(hold);
            r.redactInPlace(second);
            QVERIFY2(first + second == expected, qPrintable(QStringLiteral("cut at %1").arg(cut)));
        }
    }

    // What is held back is the possible start of a form and its spaces, never more: a run of
    // whitespace longer than a wrap puts between two characters ends it.
    void theHoldBackIsBounded()
    {
        Redactor r;
        r.add(QStringLiteral("K"), longValue());
        const QByteArray hex = longValue().toHex();
        QCOMPARE(r.partialSuffix(QByteArray("xxd says:\n" + wrapped(hex.left(90), 60))),
            qsizetype(90 + 2)); // the start and its line breaks
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\r\n")), qsizetype(32));
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\n\n\n")), qsizetype(0)); // three: no wrap does that
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\n\n\n!")), qsizetype(0));
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + QByteArray(1 << 20, '\n'))), qsizetype(0));
        // A stream of near misses: the longest hold never passes (1 + kMaxGap) times the longest form.
        QByteArray noise;
        for (int i = 0; i < 50; ++i)
            noise += wrapped(hex.left(hex.size() - 1), 2) + "!";
        qsizetype maxHold = 0;
        QCOMPARE(streamed(r, noise, 4096, &maxHold), noise);
        QVERIFY2(
            maxHold > 0 && maxHold <= (hex.size() - 1) * (1 + Redactor::kMaxGap), qPrintable(QString::number(maxHold)));
    }

    // A line break may bring an indent of up to kMaxIndent spaces and tabs, and escape sequences
    // may stand between two characters too; more ends the match. A stream of near misses padded
    // to the limit holds back less than (1 + kMaxSpan) times the longest form.
    void theHoldBackIsBoundedWithIndentsAndEscapes()
    {
        Redactor r;
        r.add(QStringLiteral("K"), longValue());
        const QByteArray hex = longValue().toHex();
        const QByteArray indent(Redactor::kMaxIndent, ' ');
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\n" + indent)), qsizetype(30 + 1 + indent.size()));
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\r\n" + indent)), qsizetype(30 + 2 + indent.size()));
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\n" + indent + ' ')), qsizetype(0)); // one column more
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\n" + indent + "\n")), qsizetype(0));
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\r\r\n" + indent)),
            qsizetype(30 + 3 + indent.size())); // "\r\n" through a terminal
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "   \n ")), qsizetype(0)); // three spaces, then a break
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + "\x1b[0m")), qsizetype(30 + 4));
        QCOMPARE(r.partialSuffix(QByteArray(hex.left(30) + QByteArray("\x1b[0m").repeated(17))),
            qsizetype(0)); // 68 bytes of them
        QByteArray noise; // each pair of hex digits apart as far as may be
        const QByteArray widest = "\r\n" + QByteArray(Redactor::kMaxIndent, '\t')
            + QByteArray("\x1b[38;5;196m\x1b[K").repeated(4) + "\x1b[0m\x1b[1m";
        QCOMPARE(widest.size(), 2 + Redactor::kMaxIndent + Redactor::kMaxEscapeBytes);
        for (int i = 0; i < 10; ++i)
            noise += wrapped(hex.left(hex.size() - 1), 2, widest) + "!";
        qsizetype maxHold = 0;
        QCOMPARE(written(r, noise, 1, &maxHold), noise);
        QVERIFY2(maxHold > hex.size() * Redactor::kMaxSpan / 3 && maxHold < hex.size() * (1 + Redactor::kMaxSpan),
            qPrintable(QString::number(maxHold)));
    }

    void aFloodOfSecretsCostsLittle()
    {
        Redactor r;
        r.add(QStringLiteral("K"), secret);
        QByteArray flood;
        while (flood.size() < 4 * 1024 * 1024)
            flood += secret + '\n';
        QByteArray plain(flood.size(), 'y');
        QElapsedTimer t;
        t.start();
        QCOMPARE(r.redactInPlace(plain).count, 0);
        const qint64 plainMs = t.restart();
        const Redactor::Hits hits = r.redactInPlace(flood);
        const qint64 floodMs = t.elapsed();
        qInfo("4 MiB: %lld ms with a secret on every line, %lld ms of plain text", floodMs, plainMs);
        QCOMPARE(hits.count, int(flood.size() / (secret.size() + 1)));
        QVERIFY(!flood.contains(secret));
        // One pass per pattern: the flood is within a small factor of plain text (it was 45x).
        QVERIFY2(floodMs < 20 * std::max<qint64>(plainMs, 5) + 200,
            qPrintable(QStringLiteral("flood %1 ms, plain %2 ms").arg(floodMs).arg(plainMs)));
    }

    // A program can write its output a byte at a time, or in pieces that always end in what could
    // start a secret: each byte is still looked at once, so that costs about what large writes do
    // (it was 1000 times as much when what was held back was searched again with every write).
    void aStreamOfTinyWritesCostsLittle()
    {
        Redactor r;
        r.add(QStringLiteral("K"), longValue());
        r.add(QStringLiteral("S"), secret);
        const QByteArray hex = longValue().toHex();
        QByteArray nearMisses; // the wrapped hex form, never complete
        while (nearMisses.size() < 256 * 1024)
            nearMisses += wrapped(hex.left(hex.size() - 1), 2) + "!";
        const auto msPerMiB = [&](qsizetype piece) {
            QList<double> runs;
            for (int i = 0; i < 3; ++i) {
                QElapsedTimer t;
                t.start();
                const QByteArray out = written(r, nearMisses, piece);
                runs.append(double(t.nsecsElapsed()) / 1e6 * (1024.0 * 1024.0) / double(nearMisses.size()));
                if (out != nearMisses)
                    return -1.0;
            }
            std::sort(runs.begin(), runs.end());
            return runs.at(1);
        };
        const double large = msPerMiB(4096), small = msPerMiB(64), tiny = msPerMiB(1);
        qInfo("near misses, ms per MiB (median of 3): %.1f in 4096-byte writes, %.1f in 64-byte writes, %.1f in 1-byte "
              "writes",
            large, small, tiny);
        QVERIFY(large >= 0 && small >= 0 && tiny >= 0);
        QVERIFY2(tiny < 25 * std::max(large, 10.0) + 300,
            qPrintable(QStringLiteral("%1 ms per MiB in 1-byte writes, %2 in 4096-byte ones").arg(tiny).arg(large)));
    }
};

QTEST_GUILESS_MAIN(TestRedactor)
#include "tst_redactor.moc"
