// SPDX-License-Identifier: Apache-2.0
#include "daytona/Multipart.h"

#include <QRandomGenerator>
#include <QRegularExpression>

namespace airlock::daytona {

namespace {
Error malformed(const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, QStringLiteral("malformed multipart body: %1").arg(what));
}

// A parameter of a Content-Disposition value: name="x" or name=x.
QString dispositionParam(const QByteArray &value, const QByteArray &param)
{
    qsizetype at = 0;
    const QByteArray key = param + '=';
    while ((at = value.indexOf(key, at)) >= 0) {
        const bool starts = at == 0 || value.at(at - 1) == ' ' || value.at(at - 1) == ';';
        at += param.size() + 1;
        if (!starts)
            continue;
        if (value.mid(at, 1) == "\"") {
            QByteArray out;
            for (qsizetype i = at + 1; i < value.size(); ++i) {
                const char c = value.at(i);
                if (c == '\\' && i + 1 < value.size()) {
                    out += value.at(++i);
                    continue;
                }
                if (c == '"')
                    return QString::fromUtf8(out);
                out += c;
            }
            return {};
        }
        const qsizetype end = value.indexOf(';', at);
        return QString::fromUtf8(value.mid(at, end < 0 ? -1 : end - at).trimmed());
    }
    return {};
}
} // namespace

Result<QByteArray> multipartBoundary(const QByteArray &contentType)
{
    static const QRegularExpression pattern(QStringLiteral("^multipart/form-data\\s*;.*boundary=\"?([^\";]{1,70})\"?"),
        QRegularExpression::CaseInsensitiveOption);
    const auto match = pattern.match(QString::fromLatin1(contentType));
    if (!match.hasMatch())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("expected Content-Type multipart/form-data with a boundary, got '%1'")
                .arg(QString::fromLatin1(contentType.left(100))));
    return match.captured(1).toLatin1();
}

Result<QList<FormPart>> parseMultipart(const QByteArray &body, const QByteArray &boundary, int maxParts)
{
    const QByteArray dash = QByteArray("--") + boundary;
    const QByteArray delimiter = QByteArray("\r\n") + dash;
    QList<FormPart> parts;
    qsizetype at = body.indexOf(dash);
    if (at < 0)
        return malformed(QStringLiteral("no boundary"));
    at += dash.size();
    for (;;) {
        if (body.mid(at, 2) == "--")
            return parts; // the closing delimiter
        if (body.mid(at, 2) != "\r\n")
            return malformed(QStringLiteral("a boundary not followed by a line end"));
        at += 2;
        const qsizetype headEnd = body.indexOf("\r\n\r\n", at);
        if (headEnd < 0 || headEnd - at > 8192)
            return malformed(QStringLiteral("a part's headers do not end within 8 KiB"));
        FormPart part;
        bool disposed = false;
        for (const QByteArray &line : body.mid(at, headEnd - at).split('\n')) {
            const QByteArray trimmed = line.trimmed();
            const qsizetype colon = trimmed.indexOf(':');
            if (colon <= 0)
                continue;
            if (trimmed.left(colon).trimmed().toLower() != "content-disposition")
                continue;
            const QByteArray value = trimmed.mid(colon + 1).trimmed();
            if (!value.toLower().startsWith("form-data"))
                return malformed(QStringLiteral("a part that is not form-data"));
            part.name = dispositionParam(value, "name");
            part.filename = dispositionParam(value, "filename");
            disposed = true;
        }
        if (!disposed || part.name.isEmpty())
            return malformed(QStringLiteral("a part without a Content-Disposition name"));
        const qsizetype dataStart = headEnd + 4;
        const qsizetype next = body.indexOf(delimiter, dataStart);
        if (next < 0)
            return malformed(QStringLiteral("a part that does not end with the boundary"));
        part.data = body.mid(dataStart, next - dataStart);
        if (parts.size() >= maxParts)
            return malformed(QStringLiteral("more than %1 parts").arg(maxParts));
        parts.append(std::move(part));
        at = next + delimiter.size();
    }
}

QByteArray writeMultipart(const QList<FormPart> &parts, const QByteArray &boundary)
{
    QByteArray out;
    qsizetype size = 0;
    for (const FormPart &p : parts)
        size += p.data.size() + p.filename.size() + 200;
    out.reserve(size + boundary.size() * (parts.size() + 1));
    const auto quoted = [](const QString &s) {
        QByteArray q = s.toUtf8();
        q.replace('\\', "\\\\").replace('"', "\\\"").replace('\r', ' ').replace('\n', ' ');
        return q;
    };
    for (const FormPart &p : parts) {
        out += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + quoted(p.name) + '"';
        if (!p.filename.isNull())
            out += "; filename=\"" + quoted(p.filename) + '"';
        out += "\r\nContent-Type: " + (p.contentType.isEmpty() ? QByteArray("application/octet-stream") : p.contentType)
            + "\r\n\r\n";
        out += p.data;
        out += "\r\n";
    }
    out += "--" + boundary + "--\r\n";
    return out;
}

QByteArray freshBoundary(const QList<FormPart> &parts)
{
    for (;;) {
        QByteArray boundary = "airlock-" + QByteArray::number(QRandomGenerator::global()->generate64(), 16)
            + QByteArray::number(QRandomGenerator::global()->generate64(), 16);
        bool clash = false;
        for (const FormPart &p : parts)
            clash = clash || p.data.contains(boundary);
        if (!clash)
            return boundary;
    }
}

} // namespace airlock::daytona
