// SPDX-License-Identifier: Apache-2.0
// airlock: the desktop console's composition root. Connects to this user's daemon (starting it
// when none answers), then shows the main window.
#include "AppLogging.h"
#include "MainWindow.h"
#include "client/DaemonClient.h"

#include <QApplication>
#include <QMessageBox>

using namespace airlock;

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("airlock"));
    QApplication::setOrganizationName(QStringLiteral("Airlock"));
    QApplication::setApplicationVersion(QStringLiteral(AIRLOCK_VERSION));
    app::setupLogging({QStringLiteral("airlock"), false, true, true});

    DaemonClient client;
    ConnectOptions options;
    options.clientName = QStringLiteral("airlock/") + QStringLiteral(AIRLOCK_VERSION);
    if (Status connected = client.connectToDaemon(options); !connected) {
        QMessageBox::critical(nullptr, QObject::tr("Airlock"),
                              QObject::tr("Cannot reach the Airlock daemon:\n%1").arg(connected.error().message));
        return 4;
    }
    ui::MainWindow window(client);
    window.show();
    return QApplication::exec();
}
