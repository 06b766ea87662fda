// SPDX-License-Identifier: Apache-2.0
// The redactor: every form of a secret masked at the same length; what could begin a secret held
// back at a chunk's end; and a chunk full of secrets costs about as much as one without any.
#include "secrets/Redactor.h"

#include <QElapsedTimer>
#include <QTest>

using namespace airlock;

class TestRedactor final : public QObject {
    Q_OBJECT
    const QByteArray secret = "s3cr3t-V4lue-0042";

private Q_SLOTS:
    void everyFormIsMaskedAtTheSameLength()
    {
        Redactor r;
        r.add(QStringLiteral("K"), secret);
        for (const QByteArray &form : {secret, secret.toHex(), secret.toHex().toUpper(), QByteArray("x" + secret).toBase64(),
                                       QByteArray("xy" + secret + "\n").toBase64(QByteArray::Base64UrlEncoding)}) {
            QByteArray data = "before " + form + " after";
            const qsizetype size = data.size();
            const Redactor::Hits hits = r.redactInPlace(data);
            QCOMPARE(hits.count, 1);
            QCOMPARE(hits.secrets, QStringList{QStringLiteral("K")});
            QCOMPARE(data.size(), size);
            QVERIFY2(data.startsWith("before ") && data.endsWith(" after") && data.contains("[REDACTED"), data.constData());
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
        QVERIFY2(floodMs < 20 * std::max<qint64>(plainMs, 5) + 200, qPrintable(QStringLiteral("flood %1 ms, plain %2 ms").arg(floodMs).arg(plainMs)));
    }
};

QTEST_GUILESS_MAIN(TestRedactor)
#include "tst_redactor.moc"
