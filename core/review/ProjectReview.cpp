// SPDX-License-Identifier: Apache-2.0
#include "review/ProjectReview.h"

#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "review/UnifiedDiff.h"
#include "util/Fd.h"
#include "util/FileSystem.h"

#include <QFile>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::review {

namespace {
using cow::Change;

constexpr int kWaitMs = 60000;

// What the host folder holds at `path` now: a file's bytes (up to the limit), a link's target, or
// nothing (absent: the view added it).
struct HostSide {
    bool exists = false;
    bool link = false;
    bool tooLarge = false;
    qint64 size = 0;
    unsigned mode = 0;
    QByteArray data;
};

Result<HostSide> readHost(const QString &hostDir, const QString &path)
{
    HostSide h;
    Fd top(::open(QFile::encodeName(hostDir).constData(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (top.fd < 0)
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot open %1: %2").arg(hostDir, QString::fromLocal8Bit(strerror(errno))));
    const QByteArray rel = QFile::encodeName(path);
    Fd file(fs::openBeneath(top.fd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
    if (file.fd == -ENOENT)
        return h;
    h.exists = true;
    if (file.fd == -ELOOP) { // a link here (or one on the way, which readlinkat refuses too)
        const qsizetype slash = rel.lastIndexOf('/');
        Fd folder(fs::openBeneath(top.fd, slash < 0 ? QByteArray(".") : rel.left(slash), O_PATH | O_DIRECTORY));
        char target[PATH_MAX];
        const ssize_t n
            = folder.fd < 0 ? -1 : ::readlinkat(folder.fd, rel.mid(slash + 1).constData(), target, sizeof target);
        if (n < 0)
            return makeError(ErrorCode::IoError, QStringLiteral("%1 here: a symbolic link on the way").arg(path));
        h.link = true;
        h.data = QByteArray(target, int(n));
        return h;
    }
    struct stat st { };
    if (file.fd < 0 || ::fstat(file.fd, &st) != 0)
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot read %1 here: %2")
                .arg(path, QString::fromLocal8Bit(strerror(file.fd < 0 ? -file.fd : errno))));
    h.size = st.st_size;
    h.mode = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode))
        return h;
    if (st.st_size > kMaxShownBytes) {
        h.tooLarge = true;
        return h;
    }
    h.data.resize(qsizetype(st.st_size));
    const ssize_t n = ::pread(file.fd, h.data.data(), size_t(h.data.size()), 0);
    h.data.truncate(n < 0 ? 0 : qsizetype(n));
    return h;
}

// "a/PATH" as git writes it: quoted, with C escapes, when the name holds a control character, a
// quote or a backslash (a newline in a name would otherwise start a header of its own).
QByteArray gitName(const char *side, const QByteArray &path)
{
    const QByteArray plain = side + path;
    if (std::none_of(
            plain.begin(), plain.end(), [](char c) { return uchar(c) < 0x20 || c == 0x7f || c == '"' || c == '\\'; }))
        return plain;
    QByteArray quoted = "\"";
    for (const char c : plain) {
        if (c == '"' || c == '\\')
            quoted += '\\' + QByteArray(1, c);
        else if (c == '\n')
            quoted += "\\n";
        else if (c == '\t')
            quoted += "\\t";
        else if (uchar(c) < 0x20 || c == 0x7f)
            quoted += '\\' + QByteArray::number(uchar(c), 8).rightJustified(3, '0');
        else
            quoted += c;
    }
    return quoted + '"';
}

// git's mode of a file: a link, an executable file or another.
QByteArray gitMode(Change::Kind kind, unsigned mode)
{
    if (kind == Change::Kind::Symlink)
        return "120000";
    return (mode & 0111) ? "100755" : "100644";
}
} // namespace

Result<cow::SandboxChanges> fetchChanges(const DaemonApi &api, const QString &sandbox)
{
    auto answer = api.sandboxChanges(sandbox).wait(kWaitMs);
    if (!answer)
        return answer.error();
    return cow::SandboxChanges::fromJson(*answer);
}

ReadView viewReader(const DaemonApi &api, const QString &sandbox, int mount)
{
    return [&api, sandbox, mount](const QString &path, qint64 offset) -> Result<cow::ViewChunk> {
        auto answer = api.readChange(sandbox, mount, path, offset).wait(kWaitMs);
        if (!answer)
            return answer.error();
        return cow::ViewChunk{QByteArray::fromBase64(answer->value(QStringLiteral("data")).toString().toLatin1()),
            answer->value(QStringLiteral("end")).toBool(true), answer->value(QStringLiteral("link")).toBool()};
    };
}

Result<cow::ViewChunk> readWhole(const ReadView &read, const QString &path, qint64 max)
{
    cow::ViewChunk whole;
    whole.end = false;
    while (!whole.end) {
        auto chunk = read(path, whole.data.size());
        if (!chunk)
            return chunk.error();
        whole.link = chunk->link;
        whole.data += chunk->data;
        whole.end = chunk->end || chunk->data.isEmpty();
        if (whole.data.size() > max)
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("%1: more than %2 bytes in the sandbox").arg(path).arg(max));
    }
    return whole;
}

QByteArray forTerminal(const QByteArray &diff)
{
    // Line by line, as every untrusted text is shown: controls (C0 and C1), bidi and other
    // format characters by code point; a tab stays a tab.
    QByteArray out;
    out.reserve(diff.size());
    const QList<QByteArray> lines = diff.split('\n');
    for (qsizetype i = 0; i < lines.size(); ++i) {
        const QList<QByteArray> cells = lines[i].split('\t');
        for (qsizetype j = 0; j < cells.size(); ++j)
            out += (j ? "\t" : "") + display::escaped(QString::fromUtf8(cells[j])).toUtf8();
        if (i + 1 < lines.size())
            out += '\n';
    }
    return out;
}

Result<QByteArray> diffOf(const QString &hostDir, const Change &change, const ReadView &read, QByteArray *shown)
{
    const QByteArray p = QFile::encodeName(change.path);
    const QByteArray a = gitName("a/", p), b = gitName("b/", p);
    QByteArray out = "diff --git " + a + ' ' + b + '\n';
    if (change.kind == Change::Kind::Directory) {
        // git has no folders; said as a line a reader sees and `git apply` ignores.
        if (change.status != Change::Status::Modified)
            return QByteArray("# folder " + gitName("", p) + "/ " + statusName(change.status).toUtf8() + '\n');
        return QByteArray(
            "# folder " + gitName("", p) + "/ permissions now " + QByteArray::number(change.mode, 8) + '\n');
    }
    if (change.kind == Change::Kind::Other)
        return QByteArray(
            "# " + gitName("", p) + ": not a file, folder or link (" + statusName(change.status).toUtf8() + ")\n");
    HostSide before;
    if (change.status != Change::Status::Added) {
        auto host = readHost(hostDir, change.path);
        if (!host)
            return host.error();
        before = *host;
    }
    cow::ViewChunk after;
    if (change.status != Change::Status::Deleted) {
        if (change.size > kMaxShownBytes)
            return QByteArray(out + "# " + gitName("", p) + ": " + QByteArray::number(change.size)
                + " bytes in the sandbox, too large to show (name it to apply it)\n");
        auto view = readWhole(read, change.path, kMaxShownBytes);
        if (!view)
            return view.error();
        after = *view;
        if (shown)
            *shown = digestOf(after.data);
    }
    const QByteArray mode = gitMode(change.kind, change.mode);
    if (change.status == Change::Status::Added) {
        out += "new file mode " + mode + '\n';
    } else if (change.status == Change::Status::Deleted) {
        out += "deleted file mode " + mode + '\n';
    } else if (!before.link && gitMode(change.kind, before.mode) != mode) {
        out += "old mode " + gitMode(change.kind, before.mode) + "\nnew mode " + mode + '\n';
    }
    if (before.tooLarge)
        return QByteArray(
            out + "# " + gitName("", p) + ": " + QByteArray::number(before.size) + " bytes here, too large to show\n");
    const QByteArray from = change.status == Change::Status::Added ? QByteArray("/dev/null") : a;
    const QByteArray to = change.status == Change::Status::Deleted ? QByteArray("/dev/null") : b;
    if (looksBinary(before.data) || looksBinary(after.data))
        return QByteArray(out + "Binary files " + from + " and " + to + " differ\n");
    const QByteArray hunks = unifiedHunks(before.data, after.data);
    if (hunks.isEmpty())
        return out;
    return QByteArray(out + "--- " + from + "\n+++ " + to + '\n' + hunks);
}

} // namespace airlock::review
