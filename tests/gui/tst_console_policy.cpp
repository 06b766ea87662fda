// SPDX-License-Identifier: Apache-2.0
// The policy editor against a real daemon (with the shipped host tools declared): every value in
// force is in its section with the layer that set it, inherited ones greyed and never applied as
// this layer's; Block and Override make an inherited entry stricter; secrets and decisions are
// picked, not typed; Tab goes from cell to cell; a pasted URL becomes host:port; "what would
// happen" answers for the policy in force and for the pending edit, and again after Apply. Each
// change is checked where it counts: in the sandbox (a real connection, an agent's command).
// Also: editing lists, rules, grants and tools, import/export, and your defaults for new sandboxes.
#include "GuiScreenshots.h"
#include "GuiTestSettings.h"
#include "LoopbackServer.h"
#include "PolicyEditor.h"
#include "SecretsDialog.h"
#include "TestHelpers.h"

#include <QAbstractItemView>
#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStyledItemDelegate>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestConsolePolicy final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<DaemonClient> m_client;

    static int inheritedIndex(const RowListEditor *rows, const QString &firstCells)
    {
        const QList<InheritedRow> inherited = rows->inherited();
        for (int i = 0; i < inherited.size(); ++i)
            if (inherited.at(i).cells.mid(0, 2).join(QLatin1Char(' ')) == firstCells)
                return i;
        return -1;
    }
    static QTreeWidgetItem *rowWithText(QTreeWidget *tree, int column, const QString &text)
    {
        for (int i = 0; i < tree->topLevelItemCount(); ++i)
            if (tree->topLevelItem(i)->text(column) == text)
                return tree->topLevelItem(i);
        return nullptr;
    }
    static void showActive(QWidget &window)
    {
        window.show();
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
    }
    QString decisionOf(const char *sandbox, const QStringList &argv) const
    {
        return jsonObject(m_daemon->ctl(args("policy", "check", sandbox, "--json", "--") + argv).out)
            .value(QStringLiteral("decision"))
            .toString();
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(startConsoleTest(m_daemon, m_client, args("--tools", AIRLOCK_SOURCE_DIR "/resources/tools")));
    }
    void cleanupTestCase()
    {
        m_client.reset();
        m_daemon.reset();
    }

    void everyValueInForceIsInItsSectionWithItsLayer()
    {
        QCOMPARE(m_daemon->create(args("--name", "layers", "--preset", "package-install")), QStringLiteral("layers"));
        PolicyEditor editor(*m_client, QStringLiteral("layers"));
        QVERIFY(QTest::qWaitFor(
            [&] { return editor.isLoaded() && !editor.toolPermissions()->inherited().isEmpty(); }, 5000));
        // The preset's hosts, greyed in the allow list with their layer; none of them is this layer's.
        QVERIFY(editor.allowList()->inherited().contains(QStringLiteral("pypi.org:443")));
        QCOMPARE(editor.allowList()->inherited().size(), 14);
        QCOMPARE(editor.allowList()->hosts(), QStringList());
        QTreeWidgetItem *pypi = rowWithText(editor.allowList()->list(), 0, QStringLiteral("pypi.org:443"));
        QVERIFY(pypi);
        QCOMPARE(pypi->text(1), QStringLiteral("preset package-install"));
        QVERIFY(!(pypi->flags() & Qt::ItemIsEditable));
        // The preset's command rules beside this layer's (none), each with its layer.
        const int pip = inheritedIndex(editor.commandRules(), QStringLiteral("allow pip install"));
        QVERIFY(pip >= 0);
        QCOMPARE(editor.commandRules()->inherited().at(pip).layer, QStringLiteral("preset:package-install"));
        QCOMPARE(editor.commandRules()->rows().size(), 0);
        // Choices left to the layers below say what those decided, and which layer.
        QCOMPARE(editor.unknownDestinations()->itemText(0), QStringLiteral("inherited: deny (preset package-install)"));
        QCOMPARE(editor.commandDefault()->itemText(0), QStringLiteral("inherited: ask (preset package-install)"));
        // Every declared tool is a row, with its description; no layer names it, so it is denied.
        const QList<InheritedRow> tools = editor.toolPermissions()->inherited();
        const auto version = std::find_if(tools.cbegin(), tools.cend(),
            [](const InheritedRow &r) { return r.cells.value(0) == QLatin1String("package.version"); });
        QVERIFY(version != tools.cend());
        QCOMPARE(version->cells.value(1), QStringLiteral("deny"));
        QVERIFY2(version->cells.value(3).startsWith(QLatin1String("Which version of a Debian package")),
            qPrintable(version->cells.value(3)));
        QCOMPARE(version->layer, QStringLiteral("no layer names it"));
        // What no section edits is on its own tab, with its layer: the mode, the limits, the exec check.
        QTreeWidgetItem *mode = rowWithText(editor.fixedView(), 0, QStringLiteral("/network/mode"));
        QVERIFY(mode);
        QCOMPARE(mode->text(1), QStringLiteral("allowlist"));
        QCOMPARE(mode->text(2), QStringLiteral("preset package-install"));
        QVERIFY(!rowWithText(editor.fixedView(), 0, QStringLiteral("/network/allow/0"))); // that one is in its section
        // The preset is explained where the editor starts.
        QVERIFY2(
            editor.summary()->text().contains(QLatin1String("Package installs: the egress proxy lets through PyPI")),
            qPrintable(editor.summary()->text()));
        // Nothing inherited is part of what would be applied.
        QVERIFY(!editor.applyButton()->isEnabled());
        QCOMPARE(editor.edited(), QJsonObject());
        editor.show();
        for (const auto &[tab, name] : {std::pair{0, "policy-network"}, {1, "policy-commands"}, {3, "policy-tools"}}) {
            editor.tabs()->setCurrentIndex(tab);
            QVERIFY(saveScreenshots(editor, QLatin1String(name)));
        }
        QCOMPARE(m_daemon->ctl(args("rm", "layers")).exitCode, 0);
    }

    void blockAndOverrideMakeAnInheritedEntryStricter()
    {
        QCOMPARE(
            m_daemon->create(args("--name", "stricter", "--preset", "package-install")), QStringLiteral("stricter"));
        PolicyEditor editor(*m_client, QStringLiteral("stricter"));
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 5000));
        showActive(editor); // editors in cells take the keyboard's focus
        // Block: an inherited allow entry goes on this layer's deny list (it cannot be removed here).
        QTreeWidgetItem *pypi = rowWithText(editor.allowList()->list(), 0, QStringLiteral("pypi.org:443"));
        QVERIFY(pypi);
        editor.allowList()->list()->setCurrentItem(pypi);
        QVERIFY(!editor.allowList()->removeButton()->isEnabled());
        QVERIFY(editor.allowList()->blockButton()->isEnabled());
        QTest::mouseClick(editor.allowList()->blockButton(), Qt::LeftButton);
        QCOMPARE(editor.denyList()->hosts(), QStringList{QStringLiteral("pypi.org:443")});
        QCOMPARE(editor.diffText(), QStringLiteral("+ /network/deny pypi.org:443"));
        // Override: the preset's "allow pip install" copied into this layer, its decision picked.
        QTreeWidget *rules = editor.commandRules()->tree();
        const int pip = inheritedIndex(editor.commandRules(), QStringLiteral("allow pip install"));
        editor.tabs()->setCurrentIndex(1);
        rules->setCurrentItem(rules->topLevelItem(int(editor.commandRules()->rows().size()) + pip));
        QVERIFY(!editor.commandRules()->removeButton()->isEnabled());
        QTest::mouseClick(editor.commandRules()->overrideButton(), Qt::LeftButton);
        QCOMPARE(editor.commandRules()->rows().size(), 1);
        // The decision is a drop-down: the editor open on the copy is a combo box of the three.
        auto *combo = qobject_cast<QComboBox *>(QApplication::focusWidget());
        QVERIFY2(
            combo, QApplication::focusWidget() ? QApplication::focusWidget()->metaObject()->className() : "no focus");
        QCOMPARE(combo->count(), 3);
        combo->setCurrentIndex(combo->findText(QStringLiteral("deny")));
        Q_EMIT combo->activated(combo->currentIndex());
        QCOMPARE(editor.commandRules()->rows().first(),
            (QStringList{QStringLiteral("deny"), QStringLiteral("pip install"), QString()}));
        // Tab goes on to the next cell, the command, in place.
        QTest::keyClick(combo, Qt::Key_Tab);
        QCOMPARE(rules->currentIndex().column(), 1);
        auto *command = qobject_cast<QLineEdit *>(QApplication::focusWidget());
        QVERIFY(command);
        QCOMPARE(command->text(), QStringLiteral("pip install"));
        QTest::keyClick(command, Qt::Key_Escape);
        // Before Apply, "what would happen" answers for both: the preset allows, the draft denies.
        QTest::keyClicks(editor.tryInput(), QStringLiteral("pip install requests"));
        QVERIFY2(
            QTest::qWaitFor(
                [&] { return editor.tryAnswer().startsWith(QStringLiteral("now: allow → after Apply: deny")); }, 5000),
            qPrintable(editor.tryAnswer()));
        QCOMPARE(decisionOf("stricter", args("pip", "install", "requests")), QStringLiteral("allow"));
        QSignalSpy applied(&editor, &PolicyEditor::applied);
        QTest::mouseClick(editor.applyButton(), Qt::LeftButton);
        QVERIFY(applied.wait(5000));
        QVERIFY2(applied.at(0).at(0).toBool(), qPrintable(applied.at(0).at(1).toString()));
        // In force now, in the daemon, and the check re-run on Apply says so.
        QCOMPARE(decisionOf("stricter", args("pip", "install", "requests")), QStringLiteral("deny"));
        QVERIFY2(QTest::qWaitFor([&] { return editor.tryAnswer().startsWith(QLatin1String("deny: ")); }, 5000),
            qPrintable(editor.tryAnswer()));
        const QJsonObject url = jsonObject(
            m_daemon->ctl(args("policy", "check", "stricter", "--json", "--url", "https://pypi.org/simple")).out);
        QCOMPARE(url.value(QStringLiteral("decision")).toString(), QStringLiteral("deny"));
        // The inherited rows are still there after Apply, and still not this layer's.
        QVERIFY(QTest::qWaitFor(
            [&] { return inheritedIndex(editor.commandRules(), QStringLiteral("allow pip install")) >= 0; }, 5000));
        QCOMPARE(editor.commandRules()->rows().size(), 1);
        QCOMPARE(m_daemon->ctl(args("rm", "stricter")).exitCode, 0);
    }

    void aToolIsOneRowWithADecisionPicked()
    {
        QCOMPARE(m_daemon->create(args("--name", "tooled")), QStringLiteral("tooled"));
        PolicyEditor editor(*m_client, QStringLiteral("tooled"));
        QVERIFY(QTest::qWaitFor(
            [&] { return editor.isLoaded() && !editor.toolPermissions()->inherited().isEmpty(); }, 5000));
        QTreeWidget *tools = editor.toolPermissions()->tree();
        QTreeWidgetItem *version = rowWithText(tools, 0, QStringLiteral("package.version"));
        QVERIFY(version);
        tools->setCurrentItem(version);
        QTest::mouseClick(editor.toolPermissions()->overrideButton(), Qt::LeftButton);
        // One row per tool: the inherited one is hidden while this layer names it.
        QVERIFY(version->isHidden());
        QCOMPARE(editor.toolPermissions()->rows().size(), 1);
        QCOMPARE(editor.toolPermissions()->rows().first().value(3).left(30),
            QStringLiteral("Which version of a Debian pack"));
        tools->topLevelItem(0)->setText(1, QStringLiteral("allow")); // as the drop-down does
        QVERIFY(editor.diffText().contains(QLatin1String("+ /tools/package.version/decision = allow")));
        QTest::keyClicks(editor.tryInput(), QStringLiteral("tool package.version {\"package\": \"bash\"}"));
        QVERIFY2(
            QTest::qWaitFor(
                [&] { return editor.tryAnswer().startsWith(QStringLiteral("now: deny → after Apply: allow")); }, 5000),
            qPrintable(editor.tryAnswer()));
        // Removing this layer's row brings the inherited one back.
        tools->setCurrentItem(tools->topLevelItem(0));
        QTest::mouseClick(editor.toolPermissions()->removeButton(), Qt::LeftButton);
        QVERIFY(!version->isHidden());
        QCOMPARE(editor.diffText(), QStringLiteral("(no changes)"));
        QVERIFY2(QTest::qWaitFor([&] { return editor.tryAnswer().startsWith(QLatin1String("deny: ")); }, 5000),
            qPrintable(editor.tryAnswer()));
        QCOMPARE(m_daemon->ctl(args("rm", "tooled")).exitCode, 0);
    }

    void aGrantPicksASecretFromTheStoreOrANewOne()
    {
        QCOMPARE(m_daemon->create(args("--name", "granting")), QStringLiteral("granting"));
        PolicyEditor editor(*m_client, QStringLiteral("granting"));
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 5000));
        showActive(editor);
        editor.tabs()->setCurrentIndex(2);
        QTest::mouseClick(editor.grants()->addButton(), Qt::LeftButton);
        auto *secret = qobject_cast<QComboBox *>(QApplication::focusWidget());
        QVERIFY(secret);
        QCOMPARE(secret->itemText(secret->count() - 1), QStringLiteral("New secret…"));
        secret->setCurrentIndex(secret->count() - 1);
        Q_EMIT secret->activated(secret->count() - 1);
        QTest::keyClick(secret, Qt::Key_Tab); // commits: New secret… opens the secrets page
        QVERIFY(QTest::qWaitFor([&] { return editor.secretDialog() != nullptr; }, 2000));
        SecretsDialog *dialog = editor.secretDialog();
        QTest::keyClicks(dialog->nameEdit(), QStringLiteral("PICKED_TOKEN"));
        QTest::keyClicks(dialog->valueEdit(), QStringLiteral("picked-value-9"));
        QTest::mouseClick(dialog->setButton(), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor(
            [&] { return editor.grants()->rows().value(0).value(0) == QLatin1String("PICKED_TOKEN"); }, 5000));
        editor.grants()->tree()->topLevelItem(0)->setText(2, QStringLiteral("PICKED"));
        QVERIFY(editor.applyButton()->isEnabled());
        QSignalSpy applied(&editor, &PolicyEditor::applied);
        QTest::mouseClick(editor.applyButton(), Qt::LeftButton);
        QVERIFY(applied.wait(5000));
        QVERIFY2(applied.at(0).at(0).toBool(), qPrintable(applied.at(0).at(1).toString()));
        QCOMPARE(execIn(*m_daemon, QStringLiteral("granting"), args("sh", "-c", "printf %s \"$PICKED\" | wc -c"))
                     .out.trimmed(),
            QByteArray("14"));
        // Another editor offers it from the store now.
        PolicyEditor again(*m_client, QStringLiteral("granting"));
        QVERIFY(QTest::qWaitFor([&] { return again.isLoaded(); }, 5000));
        QVERIFY(QTest::qWaitFor(
            [&] { return again.grants()->columns().at(0).choices.contains(QStringLiteral("PICKED_TOKEN")); }, 5000));
        QCOMPARE(m_daemon->ctl(args("rm", "granting")).exitCode, 0);
    }

    void aPastedUrlBecomesHostAndPort()
    {
        QCOMPARE(m_daemon->create(args("--name", "pasted", "--network", "allowlist")), QStringLiteral("pasted"));
        PolicyEditor editor(*m_client, QStringLiteral("pasted"));
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 5000));
        editor.allowList()->input()->setText(
            QStringLiteral("https://Files.PythonHosted.org/packages/x.whl http://example.test:8080/a"));
        QVERIFY(editor.allowList()->addButton()->isEnabled());
        QTest::mouseClick(editor.allowList()->addButton(), Qt::LeftButton);
        QCOMPARE(editor.allowList()->hosts(),
            (QStringList{QStringLiteral("files.pythonhosted.org:443"), QStringLiteral("example.test:8080")}));
        editor.allowList()->input()->setText(QStringLiteral("ftp://x"));
        QVERIFY(!editor.allowList()->addButton()->isEnabled());
        QCOMPARE(m_daemon->ctl(args("rm", "pasted")).exitCode, 0);
    }

    void anAgentMayNotTryDraftsAndADraftsMountsAreNotLookedAt()
    {
        QCOMPARE(m_daemon->create(args("--name", "agent-draft")), QStringLiteral("agent-draft"));
        ConnectOptions options;
        options.socketPath = m_daemon->socketPath();
        options.autostart = false;
        options.agent = QStringLiteral("claude");
        DaemonClient agent;
        QVERIFY(agent.connectToDaemon(options));
        const QJsonObject draft{
            {QStringLiteral("commands"), QJsonObject{{QStringLiteral("default"), QStringLiteral("allow")}}}};
        auto refused = agent.call(QStringLiteral("policy.check"),
            {{QStringLiteral("sandbox"), QStringLiteral("agent-draft")},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("curl"), QStringLiteral("x")}},
                {QStringLiteral("policy"), draft}});
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, ErrorCode::Denied);
        QCOMPARE(refused.error().message, QStringLiteral("an agent connection cannot try policy drafts"));
        // The person's draft with a mount of a path that does not exist: mounts are fixed while
        // it runs, so the draft is judged with the sandbox's own (no host path is looked at).
        const QJsonObject mounting{{QStringLiteral("filesystem"),
            QJsonObject{{QStringLiteral("mounts"),
                QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/no/such/dir")},
                    {QStringLiteral("path"), QStringLiteral("/data")}}}}}}};
        auto judged = m_client->call(QStringLiteral("policy.check"),
            {{QStringLiteral("sandbox"), QStringLiteral("agent-draft")},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("ls")}}, {QStringLiteral("policy"), mounting}});
        QVERIFY2(judged, qPrintable(judged ? QString() : judged.error().message));
        QVERIFY(judged->contains(QStringLiteral("draft")));
        QCOMPARE(m_daemon->ctl(args("rm", "agent-draft")).exitCode, 0);
    }

    void rowsLeftAloneAreAppliedAsTheLayerHoldsThem()
    {
        // A rule whose words are a list (as "always" adds them), a constraint with ';' and '=',
        // a command with a right-to-left override: unchanged by the editor, shown escaped.
        QTemporaryDir dir;
        QFile file(dir.filePath(QStringLiteral("layer.json")));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(
            QJsonObject{{QStringLiteral("commands"),
                            QJsonObject{{QStringLiteral("rules"),
                                QJsonArray{QJsonObject{{QStringLiteral("decision"), QStringLiteral("allow")},
                                               {QStringLiteral("command"),
                                                   QJsonArray{QStringLiteral("find"), QStringLiteral("."),
                                                       QStringLiteral("-name"), QStringLiteral("x -delete")}},
                                               {QStringLiteral("exact"), true}},
                                    QJsonObject{{QStringLiteral("decision"), QStringLiteral("deny")},
                                        {QStringLiteral("command"), QStringLiteral("cat \u202Egnp.exe")}}}}}},
                {QStringLiteral("tools"),
                    QJsonObject{{QStringLiteral("package.version"),
                        QJsonObject{{QStringLiteral("decision"), QStringLiteral("ask")},
                            {QStringLiteral("constraints"),
                                QJsonObject{{QStringLiteral("package"), QStringLiteral("a;b=c")}}}}}}}})
                       .toJson());
        file.close();
        QCOMPARE(m_daemon->create(args("--name", "kept", "--policy", file.fileName())), QStringLiteral("kept"));
        PolicyEditor editor(*m_client, QStringLiteral("kept"));
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 5000));
        editor.allowList()->addHosts({QStringLiteral("example.test:443")});
        QCOMPARE(editor.diffText(), QStringLiteral("+ /network/allow example.test:443"));
        const QJsonObject edited = editor.edited();
        QCOMPARE(edited.value(QStringLiteral("commands"))
                     .toObject()
                     .value(QStringLiteral("rules"))
                     .toArray()
                     .first()
                     .toObject()
                     .value(QStringLiteral("command"))
                     .toArray()
                     .last()
                     .toString(),
            QStringLiteral("x -delete"));
        QCOMPARE(edited.value(QStringLiteral("tools"))
                     .toObject()
                     .value(QStringLiteral("package.version"))
                     .toObject()
                     .value(QStringLiteral("constraints"))
                     .toObject()
                     .value(QStringLiteral("package"))
                     .toString(),
            QStringLiteral("a;b=c"));
        // Shown escaped, kept as it is.
        QTreeWidget *rules = editor.commandRules()->tree();
        const QModelIndex cell = rules->model()->index(1, 1);
        QCOMPARE(cell.data().toString(), QStringLiteral("cat \u202Egnp.exe"));
        auto *delegate = qobject_cast<QStyledItemDelegate *>(rules->itemDelegate());
        QVERIFY(delegate);
        const QString shown = delegate->displayText(cell.data(), QLocale());
        QVERIFY2(!shown.contains(QChar(0x202E)) && shown.startsWith(QLatin1String("cat ")), qPrintable(shown));
        // Edited, a row is built from its cells: the change is said.
        rules->topLevelItem(0)->setText(0, QStringLiteral("deny"));
        QVERIFY(editor.diffText().contains(QLatin1String("/commands/rules")));
        QCOMPARE(m_daemon->ctl(args("rm", "kept")).exitCode, 0);
    }

    void aDraftThatIsNotAPolicyIsRefusedByTheChecker()
    {
        QCOMPARE(m_daemon->create(args("--name", "drafty")), QStringLiteral("drafty"));
        // The daemon judges a draft only as a whole valid layer; the error names the field.
        auto bad = m_client->call(QStringLiteral("policy.check"),
            {{QStringLiteral("sandbox"), QStringLiteral("drafty")},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}},
                {QStringLiteral("policy"),
                    QJsonObject{{QStringLiteral("commands"),
                        QJsonObject{{QStringLiteral("default"), QStringLiteral("maybe")}}}}}});
        QVERIFY(!bad);
        QVERIFY2(bad.error().message.startsWith(QLatin1String("params.policy (the draft): "))
                && bad.error().message.contains(QLatin1String("/commands/default")),
            qPrintable(bad.error().message));
        auto notObject = m_client->call(QStringLiteral("policy.check"),
            {{QStringLiteral("sandbox"), QStringLiteral("drafty")},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}},
                {QStringLiteral("policy"), QStringLiteral("allow everything")}});
        QVERIFY(!notObject);
        QVERIFY(notObject.error().message.startsWith(QLatin1String("params.policy: expected")));
        // A draft changes nothing: the policy in force is the same after it was asked about.
        auto drafted = m_client->call(QStringLiteral("policy.check"),
            {{QStringLiteral("sandbox"), QStringLiteral("drafty")},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("curl"), QStringLiteral("x")}},
                {QStringLiteral("policy"),
                    QJsonObject{{QStringLiteral("commands"),
                        QJsonObject{{QStringLiteral("default"), QStringLiteral("allow")}}}}}});
        QVERIFY(drafted);
        QCOMPARE(drafted->value(QStringLiteral("draft")).toObject().value(QStringLiteral("decision")).toString(),
            QStringLiteral("allow"));
        QCOMPARE(drafted->value(QStringLiteral("decision")).toString(), QStringLiteral("ask"));
        QCOMPARE(decisionOf("drafty", args("curl", "x")), QStringLiteral("ask"));
        QCOMPARE(m_daemon->ctl(args("rm", "drafty")).exitCode, 0);
    }
    void editingTheNetworkListChangesWhatTheSandboxCanReach()
    {
        LoopbackServer web("web");
        TestDaemon daemon(args("--resolve", "site.test=127.0.0.1"));
        QVERIFY(daemon.start());
        auto client = daemon.connect();
        QCOMPARE(daemon.create(args("--name", "net", "--network", "allowlist")), QStringLiteral("net"));
        const QString fetch
            = QStringLiteral("curl -sS -m 10 -o /dev/null -w '%{http_code}' http://site.test:%1/").arg(web.port());
        QCOMPARE(execIn(daemon, QStringLiteral("net"), args("sh", "-c", fetch)).out, QByteArray("403"));

        PolicyEditor editor(*client, QStringLiteral("net"));
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 5000));
        QVERIFY(!editor.applyButton()->isEnabled()); // nothing changed yet
        QTest::keyClicks(editor.allowList()->input(), QStringLiteral("bad!host"));
        QVERIFY(!editor.allowList()->addButton()->isEnabled()); // checked as typed
        editor.allowList()->input()->clear();
        QTest::keyClicks(editor.allowList()->input(), QStringLiteral("Site.Test."));
        QTest::mouseClick(editor.allowList()->addButton(), Qt::LeftButton);
        QCOMPARE(editor.allowList()->hosts(), QStringList{QStringLiteral("site.test")});
        QCOMPARE(editor.diffText(), QStringLiteral("+ /network/allow site.test"));
        QTest::keyClicks(editor.tryInput(), QStringLiteral("http://site.test/x"));
        // What would happen, asked as it is typed: under the policy in force, and after Apply.
        QVERIFY2(QTest::qWaitFor(
                     [&] {
                         return editor.tryAnswer().startsWith(
                             QStringLiteral("now: deny → after Apply: allow\nnow: deny: no rule names site.test:80"));
                     },
                     5000),
            qPrintable(editor.tryAnswer()));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            editor.show();
            QTest::qWait(100);
            QVERIFY(editor.grab().save(dir + QStringLiteral("/policy.png")));
        }
        QSignalSpy applied(&editor, &PolicyEditor::applied);
        QTest::mouseClick(editor.applyButton(), Qt::LeftButton);
        QVERIFY(applied.wait(5000));
        QVERIFY(applied.at(0).at(0).toBool());
        QCOMPARE(editor.diffText(), QStringLiteral("(no changes)"));
        QCOMPARE(execIn(daemon, QStringLiteral("net"), args("sh", "-c", fetch)).out, QByteArray("200"));
    }

    void thePolicyEditorEditsRulesGrantsAndToolsAndShowsTheirLayers()
    {
        QVERIFY(m_daemon->create(args("--name", "pol", "--preset", "package-install")) == QStringLiteral("pol"));
        PolicyEditor editor(*m_client, QStringLiteral("pol"));
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 5000));
        // In force: every value with its layer; the preset's hosts come from the preset.
        bool presetHost = false;
        for (int i = 0; i < editor.effectiveView()->topLevelItemCount(); ++i) {
            const QTreeWidgetItem *item = editor.effectiveView()->topLevelItem(i);
            presetHost |= item->text(0).startsWith(QLatin1String("/network/allow/"))
                && item->text(2) == QLatin1String("preset package-install");
        }
        QVERIFY(presetHost);
        QCOMPARE(editor.commandRules()->rows().size(), 0);

        // A command rule with a decision the policy does not know: Apply stays off, and why is said.
        editor.commandRules()->addRow({QStringLiteral("maybe"), QStringLiteral("curl"), QString()});
        Q_EMIT editor.commandRules()->changed();
        QVERIFY(!editor.applyButton()->isEnabled());
        QVERIFY2(
            editor.problem().startsWith(QLatin1String("/commands/rules/0/decision")), qPrintable(editor.problem()));
        editor.commandRules()->tree()->topLevelItem(0)->setText(0, QStringLiteral("deny")); // as an edit in place does
        QCOMPARE(editor.problem(), QString());
        editor.commandRules()->addRow({QStringLiteral("allow"), QStringLiteral("make"), QString()});
        Q_EMIT editor.commandRules()->changed();
        // However long a rule, its decision is in the change list (nothing elided).
        editor.commandRules()->addRow(
            {QStringLiteral("allow"), QStringLiteral("x") + QString(400, QLatin1Char('y')), QString()});
        Q_EMIT editor.commandRules()->changed();
        QVERIFY(
            editor.diffText().contains(QString(400, QLatin1Char('y')) + QLatin1String("\",\"decision\":\"allow\"}")));
        delete editor.commandRules()->tree()->topLevelItem(2);
        Q_EMIT editor.commandRules()->changed();
        QVERIFY(editor.diffText().contains(
            QLatin1String("+ /commands/rules {\"command\":\"curl\",\"decision\":\"deny\"}")));
        // A tool permission with an argument constraint.
        editor.toolPermissions()->addRow(
            {QStringLiteral("email.send"), QStringLiteral("ask"), QStringLiteral("to=*@example.com")});
        Q_EMIT editor.toolPermissions()->changed();
        QVERIFY(editor.diffText().contains(QLatin1String("+ /tools/email.send/constraints/to = *@example.com")));
        QVERIFY(editor.applyButton()->isEnabled());
        QSignalSpy applied(&editor, &PolicyEditor::applied);
        QTest::mouseClick(editor.applyButton(), Qt::LeftButton);
        QVERIFY(applied.wait(5000));
        QVERIFY2(applied.at(0).at(0).toBool(), qPrintable(applied.at(0).at(1).toString()));
        // In the daemon: an agent's curl is refused by the rule the editor added.
        const CliResult refused = m_daemon->ctl(args("--agent", "bot", "exec", "pol", "-n", "--", "curl", "-V"));
        QVERIFY2(refused.exitCode != 0 && refused.err.contains("curl"), qPrintable(refused.describe()));
        const QJsonObject check
            = jsonObject(m_daemon->ctl(args("policy", "check", "pol", "--json", "--", "curl", "x")).out);
        QCOMPARE(check.value(QStringLiteral("decision")).toString(), QStringLiteral("deny"));

        // Reordering is shown as such and can be applied; export and import give back the layer.
        QTreeWidget *rules = editor.commandRules()->tree();
        rules->insertTopLevelItem(0, rules->takeTopLevelItem(1));
        Q_EMIT editor.commandRules()->changed();
        QCOMPARE(editor.diffText(), QStringLiteral("(the same rules in another order)"));
        QVERIFY(editor.applyButton()->isEnabled());
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("layer.json"));
        QVERIFY(editor.exportFile(file));
        QFile bad(dir.filePath(QStringLiteral("bad.json")));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write(R"({"commands": {"rules": [{"decision": "allow"}]}})");
        bad.close();
        QString error;
        QVERIFY(!editor.importFile(bad.fileName(), &error));
        QVERIFY2(error.contains(QLatin1String("/commands/rules/0/command")), qPrintable(error));
        editor.commandRules()->setRows({});
        Q_EMIT editor.commandRules()->changed();
        QVERIFY(editor.importFile(file, &error));
        QCOMPARE(editor.commandRules()->rows().size(), 2);
        QCOMPARE(editor.commandRules()->rows().first().value(1), QStringLiteral("make"));
        QCOMPARE(m_daemon->ctl(args("rm", "pol")).exitCode, 0);
    }

    void yourDefaultsApplyToNewSandboxes()
    {
        PolicyEditor editor(*m_client, QString());
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 5000));
        editor.commandRules()->addRow({QStringLiteral("deny"), QStringLiteral("wget"), QString()});
        Q_EMIT editor.commandRules()->changed();
        QCOMPARE(editor.diffText(), QStringLiteral("+ /commands/rules {\"command\":\"wget\",\"decision\":\"deny\"}"));
        QSignalSpy applied(&editor, &PolicyEditor::applied);
        QTest::mouseClick(editor.applyButton(), Qt::LeftButton);
        QVERIFY(applied.wait(5000));
        QVERIFY2(applied.at(0).at(0).toBool(), qPrintable(applied.at(0).at(1).toString()));
        // Written where the daemon reads it, and a new sandbox starts from it, the value's layer "user".
        QFile file(m_daemon->configDir() + QStringLiteral("/policy.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(file.readAll().contains("wget"));
        QCOMPARE(int(file.permissions() & (QFileDevice::ReadGroup | QFileDevice::ReadOther)), 0);
        QVERIFY(m_daemon->create(args("--name", "after-defaults")) == QStringLiteral("after-defaults"));
        const QJsonObject shown
            = jsonObject(m_daemon->ctl(args("policy", "show", "after-defaults", "--effective", "--json")).out);
        QCOMPARE(
            shown.value(QStringLiteral("sources")).toObject().value(QStringLiteral("/commands/rules/0")).toString(),
            QStringLiteral("user"));
        // A layer the policy refuses changes nothing on disk.
        auto refused = m_client->call(QStringLiteral("policy.defaults.set"),
            {{QStringLiteral("policy"), QJsonObject{{QStringLiteral("network"), QStringLiteral("open")}}}});
        QVERIFY(!refused);
        QVERIFY2(refused.error().message.contains(QLatin1String("/network")), qPrintable(refused.error().message));
        QVERIFY(file.seek(0) && file.readAll().contains("wget"));
        // Back to none, for the tests after this one.
        editor.commandRules()->setRows({});
        Q_EMIT editor.commandRules()->changed();
        QTest::mouseClick(editor.applyButton(), Qt::LeftButton);
        QVERIFY(applied.wait(5000));
        QCOMPARE(m_daemon->ctl(args("rm", "after-defaults")).exitCode, 0);
    }
};

QTEST_MAIN(TestConsolePolicy)
#include "tst_console_policy.moc"
