// SPDX-License-Identifier: Apache-2.0
// Sandboxes' runtimes are started off the daemon's main thread (issue 23, Launcher): meanwhile the
// sandbox is listed as starting and its name is taken; removing it then, or stopping the daemon,
// ends what was started once the launch has returned, and every create is answered. Attacked as
// a client would: the same name asked for at once, a create removed in the same breath, a daemon
// stopped under a burst; as root and as an ordinary user.
#include "TestDaemon.h"
#include "TestHelpers.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <sys/stat.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
struct Answer {
    bool ok = false;
    QString code; // errorCodeName() of a refusal
    QString message;
    QJsonObject result;
};

struct Request {
    QString method;
    QJsonObject params;
};

// Every request sent before any is answered; their answers, in the same order.
QList<Answer> burst(DaemonClient &client, const QList<Request> &requests)
{
    QList<Answer> answers(requests.size());
    int answered = 0;
    for (qsizetype i = 0; i < requests.size(); ++i)
        client.callAsync(requests[i].method, requests[i].params, [&answered, &into = answers[i]](Result<QJsonValue> r) {
            ++answered;
            into.ok = r.ok();
            if (r)
                into.result = r->toObject();
            else {
                into.code = errorCodeName(r.error().code);
                into.message = r.error().message;
            }
        });
    if (!waitFor([&] { return answered == requests.size(); }, 60000))
        qWarning("only %d of %d requests were answered", answered, int(requests.size()));
    return answers;
}

Request create(const QString &name)
{
    return {QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), QJsonObject{{QStringLiteral("name"), name}}}}};
}

Request remove(const QString &name, bool keep = false)
{
    return {QStringLiteral("sandbox.delete"), {{QStringLiteral("sandbox"), name}, {QStringLiteral("keep"), keep}}};
}

// What is left of sandbox `id` on the host: its cgroups (cgroup v1: any controller, any daemon
// instance).
QStringList cgroupsOf(const QString &id)
{
    QStringList found;
    for (const QString &controller :
        QDir(QStringLiteral("/sys/fs/cgroup")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QString root = QStringLiteral("/sys/fs/cgroup/%1/airlock").arg(controller);
        for (const QString &instance : QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
            if (QFileInfo(root + QLatin1Char('/') + instance + QLatin1Char('/') + id).isDir())
                found.append(root + QLatin1Char('/') + instance + QLatin1Char('/') + id);
    }
    return found;
}
} // namespace

class TstLauncher : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Six creates of one name and six of names of their own, sent before any is answered: the
    // name is taken from the moment its sandbox is listed (starting), not once it runs.
    void oneNameAskedForAtOnceIsGivenOnce()
    {
        TestDaemon d;
        QVERIFY(d.start());
        auto client = d.connect();
        QVERIFY(client);
        QList<Request> requests;
        for (int i = 0; i < 6; ++i)
            requests << create(QStringLiteral("twin")) << create(QStringLiteral("solo-%1").arg(i));
        const QList<Answer> answers = burst(*client, requests);
        QList<Answer> twins, solos;
        for (qsizetype i = 0; i < answers.size(); ++i)
            (i % 2 ? solos : twins).append(answers[i]);
        int made = 0;
        for (const Answer &a : twins) {
            if (a.ok) {
                ++made;
                continue;
            }
            QCOMPARE(a.code, QStringLiteral("already_exists"));
            QVERIFY2(a.message.contains(QLatin1String("a sandbox named 'twin' already exists")), qPrintable(a.message));
        }
        QCOMPARE(made, 1);
        QSet<QString> ids;
        for (const Answer &a : solos) {
            QVERIFY2(a.ok, qPrintable(a.message));
            QCOMPARE(a.result.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
            ids.insert(a.result.value(QStringLiteral("id")).toString());
        }
        QCOMPARE(ids.size(), 6);
        const CliResult ls = d.ctl(args("ls"));
        QCOMPARE(ls.exitCode, 0);
        QCOMPARE(int(ls.out.count("twin")), 1);
        QCOMPARE(int(ls.out.count("solo-")), 6);
        // Each runs: its runtime was started and its guest answers.
        QCOMPARE(d.ctl(args("exec", "twin", "--", "true")).exitCode, 0);
    }

    // Each create followed at once by a delete of its name: the delete finds it (listed while its
    // runtime starts) and is answered at once; the create is answered as removed; once the
    // launch has returned what it started is killed and nothing of it is left: no runtime, no
    // workspace, no cgroup, and its host uid goes back to the pool.
    void removedWhileItsRuntimeStartsLeavesNothing()
    {
        TestDaemon d;
        QVERIFY(d.start());
        auto client = d.connect();
        QVERIFY(client);
        QList<Request> requests;
        for (int i = 0; i < 6; ++i)
            requests << create(QStringLiteral("gone-%1").arg(i)) << remove(QStringLiteral("gone-%1").arg(i));
        const QList<Answer> answers = burst(*client, requests);
        QList<Answer> creates, deletes;
        for (qsizetype i = 0; i < answers.size(); ++i)
            (i % 2 ? deletes : creates).append(answers[i]);
        QStringList ids;
        for (int i = 0; i < 6; ++i) {
            QVERIFY2(deletes[i].ok, qPrintable(deletes[i].message));
            QCOMPARE(deletes[i].result.value(QStringLiteral("name")).toString(), QStringLiteral("gone-%1").arg(i));
            ids.append(deletes[i].result.value(QStringLiteral("id")).toString());
            QVERIFY(!creates[i].ok);
            QCOMPARE(creates[i].code, QStringLiteral("sandbox_not_running"));
            QVERIFY2(creates[i].message.contains(QLatin1String("removed while it was being created")),
                qPrintable(creates[i].message));
        }
        QVERIFY2(waitFor([] { return pidsWithCommandLine("--hostname gone-").isEmpty(); }, 5000),
            "a removed sandbox's runtime is still running");
        const QString workspaces = d.dataDir() + QStringLiteral("/workspaces");
        for (const QString &id : std::as_const(ids)) {
            QVERIFY2(!QFileInfo::exists(workspaces + QLatin1Char('/') + id), qPrintable(id));
            QVERIFY2(waitFor([&] { return cgroupsOf(id).isEmpty(); }, 5000),
                qPrintable(cgroupsOf(id).join(QLatin1Char(' '))));
        }
        QCOMPARE(sandboxWorkspaces(workspaces), QStringList());
        // Their host uids are back in the pool (a root daemon claims one per sandbox).
        for (const QString &id : std::as_const(ids))
            QVERIFY2(!hostUidClaims(d.dataDir()).contains(id), qPrintable(id + QStringLiteral(" still holds its uid")));
        const CliResult ls = d.ctl(args("ls"));
        QCOMPARE(ls.exitCode, 0);
        QVERIFY2(!ls.out.contains("gone-"), ls.out.constData());
        // The daemon goes on as before; a sandbox that runs holds its claim (what was looked for).
        QVERIFY(!d.create(args("--name", "after")).isEmpty());
        QCOMPARE(d.ctl(args("exec", "after", "--", "true")).exitCode, 0);
        const QString afterId = sandboxInfo(d, QStringLiteral("after")).value(QStringLiteral("id")).toString();
        if (::geteuid() == 0)
            QVERIFY(hostUidClaims(d.dataDir()).contains(afterId));
        // (cgroupsOf reads cgroup v1's layout; on v2 a sandbox's cgroup is a systemd scope.)
        if (QFileInfo(QStringLiteral("/sys/fs/cgroup/pids")).isDir())
            QVERIFY2(!cgroupsOf(afterId).isEmpty(), qPrintable(afterId + QStringLiteral(" has no cgroup to look for")));
    }

    // Keeping the workspace of a sandbox whose runtime is still starting is refused (nothing ran in
    // it yet): the sandbox is left as it was, and starts.
    void keepingTheWorkspaceOfOneStillStartingIsRefused()
    {
        TestDaemon d;
        QVERIFY(d.start());
        auto client = d.connect();
        QVERIFY(client);
        const QList<Answer> answers
            = burst(*client, {create(QStringLiteral("kept")), remove(QStringLiteral("kept"), true)});
        const QList<Answer> creates{answers[0]}, keeps{answers[1]};
        QVERIFY(!keeps[0].ok);
        QCOMPARE(keeps[0].code, QStringLiteral("busy"));
        QVERIFY2(keeps[0].message.contains(QLatin1String("kept is starting")), qPrintable(keeps[0].message));
        QVERIFY2(creates[0].ok, qPrintable(creates[0].message));
        QCOMPARE(d.ctl(args("exec", "kept", "--", "true")).exitCode, 0);
        QCOMPARE(d.ctl(args("rm", "--keep", "kept")).exitCode, 0);
    }

    // Stopped under a burst of creates: the launches under way finish, and what they started ends
    // with the daemon (its sandboxes end with it); none is left running or on disk.
    void stoppedWhileRuntimesStartLeavesNothing()
    {
        TestDaemon d;
        QVERIFY(d.start());
        auto client = d.connect();
        QVERIFY(client);
        for (int i = 0; i < 8; ++i)
            client->callAsync(QStringLiteral("sandbox.create"), create(QStringLiteral("burst-%1").arg(i)).params,
                [](Result<QJsonValue>) {});
        QVERIFY(waitFor([] { return !pidsWithCommandLine("--hostname burst-").isEmpty(); }, 10000));
        client.reset();
        d.stop();
        QVERIFY2(waitFor([] { return pidsWithCommandLine("--hostname burst-").isEmpty(); }, 5000),
            "a runtime started under the stop is still running");
        QCOMPARE(sandboxWorkspaces(d.dataDir() + QStringLiteral("/workspaces")), QStringList());
    }

    // A mount named through a link is the folder the link named when it was checked: its
    // canonical path is what the launcher opens (with no link followed), and what info shows.
    void aMountThroughALinkIsTheFolderItNamedThen()
    {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("real")));
        QFile note(dir.filePath(QStringLiteral("real/note")));
        QVERIFY(note.open(QIODevice::WriteOnly) && note.write("through the link\n") > 0);
        note.close();
        QVERIFY(::chmod(QFile::encodeName(dir.path()).constData(), 0755) == 0);
        QVERIFY(QFile::link(dir.filePath(QStringLiteral("real")), dir.filePath(QStringLiteral("link"))));
        TestDaemon d;
        QVERIFY(d.start());
        QString error;
        const QString sb = d.create(
            args("--name", "linked", "--mount", dir.filePath(QStringLiteral("link")) + QStringLiteral(":/mnt/p")),
            &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const CliResult read = d.ctl(args("exec", sb, "--", "cat", "/mnt/p/note"));
        QCOMPARE(read.exitCode, 0);
        QCOMPARE(read.out, QByteArray("through the link\n"));
        const QJsonArray mounts = sandboxInfo(d, sb).value(QStringLiteral("mounts")).toArray();
        QCOMPARE(mounts.size(), 1);
        QCOMPARE(mounts.first().toObject().value(QStringLiteral("host")).toString(),
            QFileInfo(dir.filePath(QStringLiteral("real"))).canonicalFilePath());
    }

    // The same as an ordinary user: creates of one name at once from separate airlockctl
    // processes, one made.
    void anOrdinaryUsersCreatesAtOnceToo()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to start the daemon as another, unprivileged user");
        UnprivilegedDaemon d;
        QVERIFY(d.start());
        std::vector<std::unique_ptr<QProcess>> ctls;
        for (int i = 0; i < 5; ++i) {
            ctls.push_back(d.startCtl(args("create", "--name", "twin")));
            ctls.push_back(d.startCtl(args("create", "--name", QStringLiteral("solo-%1").arg(i))));
        }
        int twins = 0, solos = 0;
        for (auto &p : ctls) {
            QVERIFY(p->waitForFinished(60000));
            const QByteArray out = p->readAllStandardOutput() + p->readAllStandardError();
            const bool twin = p->arguments().contains(QStringLiteral("twin"));
            if (p->exitCode() == 0) {
                (twin ? twins : solos)++;
                continue;
            }
            QVERIFY2(twin, out.constData());
            QVERIFY2(out.contains("a sandbox named 'twin' already exists"), out.constData());
        }
        QCOMPARE(twins, 1);
        QCOMPARE(solos, 5);
        const auto ran = d.ctl(args("exec", "twin", "--", "id", "-u"));
        QCOMPARE(ran.first, 0);
        QCOMPARE(ran.second, QByteArray("1000\n"));
    }
};

QTEST_GUILESS_MAIN(TstLauncher)
#include "tst_launcher.moc"
