// SPDX-License-Identifier: Apache-2.0
// airlock: the desktop console's composition root. Connects to this user's daemon (starting it
// when none answers), then shows the main window; when the daemon cannot be reached the window
// says why and offers Retry rather than leaving the person with nothing.
#include "AppLogging.h"
#include "MainWindow.h"
#include "ManPage.h"
#include "RemoteHosts.h"
#include "Theme.h"
#include "client/DaemonClient.h"
#include "client/Hosts.h"
#include "util/Version.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QSettings>
#include <QStatusBar>

#include <cstdio>

using namespace airlock;

namespace {
QString manualPage(const QList<QCommandLineOption> &options)
{
    app::ManPage page(QStringLiteral("airlock"), QStringLiteral("the Airlock desktop console"));
    page.synopsis(QStringLiteral("[--socket PATH] [--no-autostart]"));
    page.paragraphs(QStringLiteral("Description"),
        QStringLiteral(
            "airlock shows this user's sandboxes and those of saved remote hosts, with their live output and a command "
            "line; asks a person about what agents want to run, reach or call; edits each sandbox's network, command, "
            "credential and tool policy; and browses the history of every run, on one host or all of them merged by "
            "time. It starts airlockd(1) when none answers.\n\n"
            "Add other hosts with File, Add host (or airlockctl hosts add)."));
    page.options(QStringLiteral("Options"), options);
    page.paragraphs(QStringLiteral("See also"), QStringLiteral("airlockctl(1), airlockd(1)"));
    return page.render(airlock::version());
}
} // namespace

int main(int argc, char *argv[])
{
    const QCommandLineOption socket(QStringLiteral("socket"),
        QStringLiteral("The daemon's socket (default: this user's)."), QStringLiteral("path"));
    const QCommandLineOption noAutostart(
        QStringLiteral("no-autostart"), QStringLiteral("Never start airlockd; only connect to a running one."));
    // The manual page needs no display: written before there is an application.
    if (argc == 2 && qstrcmp(argv[1], "--man") == 0) {
        std::fputs(qPrintable(manualPage({socket, noAutostart})), stdout);
        return 0;
    }
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("The Airlock desktop console: sandboxes, live output, approvals, policies and history."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addOptions({socket, noAutostart});
    // --version and --help need no display either: answered before QApplication, which aborts
    // without one. (Qt's own options such as -platform are read by QApplication below.)
    {
        QCoreApplication early(argc, argv);
        QCoreApplication::setApplicationName(QStringLiteral("airlock"));
        QCoreApplication::setApplicationVersion(airlock::version());
        if (parser.parse(QCoreApplication::arguments())) {
            if (parser.isSet(QStringLiteral("version")))
                parser.showVersion();
            if (parser.isSet(QStringLiteral("help")))
                parser.showHelp(0);
        }
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("airlock"));
    QApplication::setApplicationDisplayName(QStringLiteral("Airlock"));
    QApplication::setOrganizationName(QStringLiteral("Airlock"));
    QApplication::setApplicationVersion(airlock::version());
    QApplication::setDesktopFileName(QStringLiteral("airlock"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/airlock.svg")));
    parser.process(app);
    app::setupLogging({QStringLiteral("airlock"), false, true, true});
    ui::applyTheme(ui::themeFromName(QSettings().value(QStringLiteral("view/theme")).toString()));

    DaemonClient client;
    ConnectOptions options;
    options.socketPath = parser.value(socket);
    options.autostart = !parser.isSet(noAutostart);
    options.clientName = QStringLiteral("airlock/") + version();
    const Status connected = client.connectToDaemon(options);

    ui::MainWindow window(client);
    window.setReconnect([&client, options](bool autostart) {
        ConnectOptions again = options;
        again.autostart = again.autostart && autostart;
        return client.connectToDaemon(again);
    });
    if (!connected)
        window.showDisconnected(connected.error());
    // Other daemons the person saved (airlockctl hosts add, or File → Add host…), below this one,
    // and followed: what the CLI changes in hosts.json is picked up.
    const auto sayProblems = [&window](const QStringList &problems) {
        if (!problems.isEmpty())
            window.statusBar()->showMessage(problems.join(QStringLiteral("; ")));
    };
    QObject::connect(window.remoteHosts(), &airlock::ui::RemoteHosts::followed, &window, sayProblems);
    sayProblems(window.remoteHosts()->follow(HostRegistry::defaultPath()));
    window.show();
    return QApplication::exec();
}
