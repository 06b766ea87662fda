// SPDX-License-Identifier: Apache-2.0
// airlock: the desktop console's composition root. Connects to this user's daemon (starting it
// when none answers), then shows the main window; when the daemon cannot be reached the window
// says why and offers Retry rather than leaving the person with nothing.
#include "AppLogging.h"
#include "MainWindow.h"
#include "Theme.h"
#include "client/DaemonClient.h"
#include "client/Hosts.h"
#include "RemoteHosts.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QSettings>
#include <QStatusBar>

using namespace airlock;

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("airlock"));
    QApplication::setApplicationDisplayName(QStringLiteral("Airlock"));
    QApplication::setOrganizationName(QStringLiteral("Airlock"));
    QApplication::setApplicationVersion(QStringLiteral(AIRLOCK_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("airlock"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/airlock.svg")));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("The Airlock desktop console: sandboxes, live output, approvals, policies and history."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption socket(QStringLiteral("socket"), QStringLiteral("The daemon's socket (default: this user's)."), QStringLiteral("path"));
    const QCommandLineOption noAutostart(QStringLiteral("no-autostart"), QStringLiteral("Never start airlockd; only connect to a running one."));
    parser.addOptions({socket, noAutostart});
    parser.process(app);
    app::setupLogging({QStringLiteral("airlock"), false, true, true});
    ui::applyTheme(ui::themeFromName(QSettings().value(QStringLiteral("view/theme")).toString()));

    DaemonClient client;
    ConnectOptions options;
    options.socketPath = parser.value(socket);
    options.autostart = !parser.isSet(noAutostart);
    options.clientName = QStringLiteral("airlock/") + QStringLiteral(AIRLOCK_VERSION);
    const Status connected = client.connectToDaemon(options);

    ui::MainWindow window(client);
    window.setReconnect([&client, options](bool autostart) {
        ConnectOptions again = options;
        again.autostart = again.autostart && autostart;
        return client.connectToDaemon(again);
    });
    if (!connected)
        window.showDisconnected(connected.error());
    // Other daemons the person saved (airlockctl hosts add, or File → Add host…), below this one.
    if (auto hosts = HostRegistry::load())
        for (const HostRegistry::Entry &entry : hosts->entries())
            window.remoteHosts()->add(entry);
    else
        window.statusBar()->showMessage(hosts.error().message);
    window.show();
    return QApplication::exec();
}
