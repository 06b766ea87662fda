// SPDX-License-Identifier: Apache-2.0
// Build-time tool: renders the SVG icon to PNG at the given sizes (hicolor's NxN/apps/NAME.png
// under OUTDIR), with Qt's SVG image plugin on the offscreen platform. Not installed.
#include <QDir>
#include <QGuiApplication>
#include <QImage>
#include <QImageReader>

#include <cstdio>

int main(int argc, char *argv[])
{
    QGuiApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() < 4) {
        std::fprintf(stderr, "usage: %s ICON.svg OUTDIR SIZE...\n", argv[0]);
        return 2;
    }
    const QString name = QFileInfo(args.at(1)).completeBaseName();
    for (const QString &size : args.mid(3)) {
        const int n = size.toInt();
        QImageReader reader(args.at(1));
        reader.setScaledSize(QSize(n, n));
        const QImage image = reader.read();
        const QString dir = QStringLiteral("%1/%2x%2/apps").arg(args.at(2)).arg(n);
        if (image.isNull() || !QDir().mkpath(dir)
            || !image.save(dir + QLatin1Char('/') + name + QStringLiteral(".png"))) {
            std::fprintf(
                stderr, "cannot render %s at %d: %s\n", qPrintable(args.at(1)), n, qPrintable(reader.errorString()));
            return 1;
        }
    }
    return 0;
}
