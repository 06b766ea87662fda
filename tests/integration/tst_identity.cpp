// SPDX-License-Identifier: Apache-2.0
// Who a sandbox is on the host and what it learns of the host from inside, probed as an attacker
// would: a local user whose subordinate id range reaches a sandbox's host uid, another root daemon
// on the same host, and a process in the sandbox reading mountinfo and the account databases.
#include "TestDaemon.h"
#include "TestHelpers.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
constexpr uid_t kFirstSandboxUid = 0x70000000; // airlockd's default --sandbox-uids
constexpr uid_t kSandboxUids = 65536;

QString run(const QString &program, const QStringList &arguments, int *exitCode = nullptr)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(program, arguments);
    p.waitForFinished(30000);
    if (exitCode)
        *exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    return QString::fromUtf8(p.readAll());
}

// One more line in an id file of /etc, for as long as it lives (the file is put back as it was).
class EtcLine {
public:
    EtcLine(QString file, const QByteArray &line)
        : m_file(std::move(file))
    {
        QFile f(m_file);
        if (f.open(QIODevice::ReadOnly))
            m_before = f.readAll();
        f.close();
        m_number = int(m_before.count('\n')) + (m_before.isEmpty() || m_before.endsWith('\n') ? 1 : 2);
        write(m_before + (m_before.isEmpty() || m_before.endsWith('\n') ? "" : "\n") + line + '\n');
    }
    ~EtcLine() { write(m_before); }
    int number() const { return m_number; }

private:
    void write(const QByteArray &content)
    {
        QFile f(m_file);
        if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            f.write(content);
    }
    QString m_file;
    QByteArray m_before;
    int m_number = 0;
};

// A local account made with useradd (no home), removed with userdel when it goes; the subordinate
// id files (where useradd may give it a range) are put back as they were.
class LocalUser {
public:
    explicit LocalUser(const QString &name, const QStringList &options = {})
        : m_name(name)
    {
        for (const QString &file : {QStringLiteral("/etc/subuid"), QStringLiteral("/etc/subgid")}) {
            QFile f(file);
            if (f.open(QIODevice::ReadOnly))
                m_idFiles.append({file, f.readAll()});
        }
        run(QStringLiteral("useradd"),
            options
                + QStringList{QStringLiteral("-M"), QStringLiteral("-s"), QStringLiteral("/usr/sbin/nologin"), m_name});
        if (const passwd *pw = ::getpwnam(m_name.toLocal8Bit().constData()))
            m_uid = pw->pw_uid;
    }
    ~LocalUser()
    {
        if (m_uid)
            run(QStringLiteral("userdel"), {m_name});
        for (const auto &[file, content] : std::as_const(m_idFiles)) {
            QFile f(file);
            if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
                f.write(content);
        }
    }
    QString name() const { return m_name; }
    uid_t uid() const { return m_uid; }

private:
    QString m_name;
    uid_t m_uid = 0;
    QList<std::pair<QString, QByteArray>> m_idFiles;
};

// airlockd as root in directories of its own that must refuse to start: its exit code and stderr.
std::pair<int, QString> refusedDaemon(const QStringList &options)
{
    QTemporaryDir dir;
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char *sub : {"XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"})
        env.insert(QLatin1String(sub), dir.filePath(QLatin1String(sub)));
    p.setProcessEnvironment(env);
    p.start(binDir() + QStringLiteral("/airlockd"),
        QStringList{QStringLiteral("--socket"), dir.filePath(QStringLiteral("s.sock")),
            QStringLiteral("--sandboxes-end-with-daemon")}
            + options);
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished();
        return {-1, QStringLiteral("still running")};
    }
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardError())};
}

QString modeAndOwner(const QString &path)
{
    struct stat st { };
    return ::stat(native(path).constData(), &st) == 0
        ? QString::number(st.st_mode & 07777, 8) + QLatin1Char(' ') + QString::number(st.st_uid)
        : QStringLiteral("missing");
}
} // namespace

class TestIdentity final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init()
    {
        if (::geteuid() != 0)
            QSKIP("needs root: host uids are a root daemon's, and the probes make local accounts");
    }

    void anyoneWhoCouldBecomeASandboxUidStopsTheDaemon_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("option");
        QTest::newRow("a subordinate uid range over the sandboxes' uids") << "/etc/subuid"
                                                                          << "subuids";
        QTest::newRow("a subordinate gid range over the sandboxes' gids") << "/etc/subgid"
                                                                          << "subgids";
    }
    void anyoneWhoCouldBecomeASandboxUidStopsTheDaemon()
    {
        QFETCH(QString, file);
        QFETCH(QString, option);
        // What usermod --add-subuids would give: 65536 ids from the first of the default range.
        const QString range = QStringLiteral("%1-%2").arg(kFirstSandboxUid).arg(kFirstSandboxUid + kSandboxUids - 1);
        const EtcLine line(file, "mallory:" + QByteArray::number(kFirstSandboxUid) + ":65536");
        const auto [exitCode, err] = refusedDaemon({});
        QCOMPARE(exitCode, 4);
        const QString expected = QStringLiteral(
            "airlockd: the host uids for sandboxes (%1) overlap %2 line %3 (mallory:%4:65536), the subordinate range "
            "of mallory, who could become a sandbox's uid and read or plant files in its workspace; give mallory a "
            "range outside them (usermod --del-%5 %1 mallory, then --add-%5 a free one), or start airlockd with "
            "--sandbox-uids FIRST-LAST (now %1) outside every account and subordinate id range\n")
                                     .arg(range, file)
                                     .arg(line.number())
                                     .arg(kFirstSandboxUid)
                                     .arg(option);
        QVERIFY2(err.contains(expected), qPrintable(err));
    }

    void anAccountInTheRangeStopsTheDaemon()
    {
        const LocalUser mallory(
            QStringLiteral("airlock-mallory"), {QStringLiteral("-u"), QString::number(kFirstSandboxUid + 7)});
        QVERIFY(mallory.uid());
        const auto [exitCode, err] = refusedDaemon({});
        QCOMPARE(exitCode, 4);
        QVERIFY2(
            err.contains(QStringLiteral("overlap the account airlock-mallory (uid %1, gid ").arg(kFirstSandboxUid + 7)),
            qPrintable(err));
        // Another range that no one reaches: the daemon starts.
        TestDaemon elsewhere({QStringLiteral("--sandbox-uids"), QStringLiteral("1879179264-1879179519")});
        QVERIFY(elsewhere.start());
        QVERIFY(!elsewhere.create({}).isEmpty());
    }

    // With Debian's defaults the 13th user useradd makes gets 886432-951967 of /etc/subuid: with
    // newuidmap it can become any of those uids (it once covered the first sandbox's, 900000).
    void theThirteenthUsersRangeReachesNoSandbox()
    {
        const LocalUser mallory(QStringLiteral("airlock-mallory"));
        QVERIFY(mallory.uid());
        const EtcLine line(QStringLiteral("/etc/subuid"), "airlock-mallory:886432:65536");
        TestDaemon d;
        QVERIFY(d.start());
        const QString sb = d.create({});
        QVERIFY(!sb.isEmpty());
        QCOMPARE(execIn(d, sb, args("sh", "-c", "echo mine > /workspace/secret")).exitCode, 0);
        const QJsonObject info = sandboxInfo(d, sb);
        const uid_t uid
            = uid_t(info.value(QStringLiteral("isolation")).toObject().value(QStringLiteral("hostUid")).toDouble());
        QVERIFY2(uid < 886432 || uid > 951967, qPrintable(QString::number(uid)));
        QVERIFY2(uid >= kFirstSandboxUid && uid < kFirstSandboxUid + kSandboxUids, qPrintable(QString::number(uid)));
        QVERIFY(::getpwuid(uid) == nullptr);
        // Its workspace is its own, in folders that are root's and list nothing.
        const QString ws = info.value(QStringLiteral("workspace")).toString();
        const QString parent = QFileInfo(ws).path();
        QCOMPARE(modeAndOwner(ws), QStringLiteral("700 %1").arg(uid));
        QCOMPARE(modeAndOwner(parent), QStringLiteral("711 0"));
        QCOMPARE(modeAndOwner(QFileInfo(parent).path()), QStringLiteral("711 0"));
        // The local user neither finds nor reads it.
        for (const QStringList &command : {QStringList{QStringLiteral("ls"), parent},
                 QStringList{QStringLiteral("cat"), ws + QStringLiteral("/secret")}}) {
            int exitCode = -1;
            const QString out = run(QStringLiteral("setpriv"),
                QStringList{QStringLiteral("--reuid=%1").arg(mallory.uid()),
                    QStringLiteral("--regid=%1").arg(mallory.uid()), QStringLiteral("--clear-groups")}
                    + command,
                &exitCode);
            QVERIFY2(exitCode != 0 && out.contains(QStringLiteral("Permission denied")),
                qPrintable(command.join(QLatin1Char(' ')) + QLatin1Char(' ') + out));
        }
    }

    void twoRootDaemonsNeverShareAUid()
    {
        TestDaemon first, second;
        QVERIFY(first.start());
        QVERIFY(second.start());
        QSet<double> uids;
        for (const TestDaemon *d : {&first, &second, &first, &second}) {
            const QString sb = d->create({});
            QVERIFY(!sb.isEmpty());
            uids.insert(sandboxInfo(*d, sb)
                            .value(QStringLiteral("isolation"))
                            .toObject()
                            .value(QStringLiteral("hostUid"))
                            .toDouble());
        }
        QCOMPARE(uids.size(), 4);
    }

    // A process in the sandbox reads its mountinfo for where things come from on the host.
    void mountinfoNamesNoHostPath()
    {
        TestDaemon d;
        QVERIFY(d.start());
        const QString sb = d.create({});
        QVERIFY(!sb.isEmpty());
        const CliResult r = execIn(d, sb, args("cat", "/proc/self/mountinfo"));
        QCOMPARE(r.exitCode, 0);
        const QString mountinfo = QString::fromUtf8(r.out);
        QVERIFY(mountinfo.contains(QStringLiteral(" /workspace ")));
        for (const QString &hostPath : QStringList{d.rootDir(), d.dataDir(), QFileInfo(binDir()).canonicalFilePath(),
                 binDir(), binDir() + QStringLiteral("/airlock-guest"), QDir::currentPath()})
            QVERIFY2(!mountinfo.contains(hostPath), qPrintable(hostPath + QStringLiteral(" in\n") + mountinfo));
        // The workspace is a filesystem of its own (its image's): its root, on a loop device.
        QVERIFY2(
            QRegularExpression(
                QStringLiteral("\\n\\d+ \\d+ \\d+:\\d+ / /workspace rw,nosuid,nodev,[^\\n]* - ext4 /dev/loop\\d+ "))
                .match(mountinfo)
                .hasMatch(),
            qPrintable(mountinfo));
        // Without one (--disk none), a bind mount shows its source's path on its filesystem,
        // whatever it was bound from: the workspace's is Airlock's generic one, named by the id.
        const QString plain = d.create(args("--disk", "none"));
        QVERIFY(!plain.isEmpty());
        const QString bound = QString::fromUtf8(execIn(d, plain, args("cat", "/proc/self/mountinfo")).out);
        const QString ws = sandboxInfo(d, plain).value(QStringLiteral("workspace")).toString();
        QVERIFY2(ws.startsWith(QStringLiteral("/var/lib/airlock/workspaces-")), qPrintable(ws));
        QVERIFY2(bound.contains(QStringLiteral(" %1 /workspace ").arg(ws)), qPrintable(bound));
        QVERIFY2(!bound.contains(d.dataDir()), qPrintable(bound));
    }

    // A process in the sandbox lists the accounts and asks who it is.
    void theAccountDatabasesAreTheSandboxes()
    {
        const LocalUser bystander(QStringLiteral("airlock-bystander"));
        QVERIFY(bystander.uid());
        TestDaemon d;
        QVERIFY(d.start());
        const QString sb = d.create({});
        QVERIFY(!sb.isEmpty());
        const CliResult r = execIn(d, sb,
            args("sh", "-c",
                "getent passwd | cut -d: -f1,3; getent group | cut -d: -f1,3; id; "
                "cat /etc/subuid /etc/subgid /etc/passwd- /etc/group- 2>/dev/null; true"));
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(QString::fromUtf8(r.out),
            QStringLiteral("root:0\nsandbox:1000\nnobody:65534\nroot:0\nsandbox:1000\nnogroup:65534\n"
                           "uid=1000(sandbox) gid=1000(sandbox) groups=1000(sandbox)\n"));
        QCOMPARE(execIn(d, sb, args("getent", "passwd", "airlock-bystander")).exitCode, 2);
    }

    // The same from a sandbox of an ordinary user's daemon (which runs it as that user): the host's
    // account for uid 1000 is not who the sandbox is, and the guest comes from no build tree.
    void anOrdinaryUsersSandboxNamesNoHostAccount()
    {
        const LocalUser bystander(QStringLiteral("airlock-bystander"));
        QVERIFY(bystander.uid());
        UnprivilegedDaemon d;
        QVERIFY(d.start());
        QCOMPARE(d.ctl(args("create", "--name", "plain")).first, 0);
        const auto [exitCode, out] = d.ctl(args("exec", "plain", "-n", "--", "sh", "-c",
            "id -un; getent passwd | cut -d: -f1 | tr '\\n' ' '; echo; "
            "cat /proc/self/mountinfo"));
        QCOMPARE(exitCode, 0);
        const QString inside = QString::fromUtf8(out);
        QVERIFY2(inside.startsWith(QStringLiteral("sandbox\nroot sandbox nobody \n")), qPrintable(inside));
        for (const QString &hostPath : QStringList{QFileInfo(binDir()).canonicalFilePath(), binDir()})
            QVERIFY2(!inside.contains(hostPath), qPrintable(hostPath + QStringLiteral(" in\n") + inside));
    }
};

QTEST_GUILESS_MAIN(TestIdentity)
#include "tst_identity.moc"
