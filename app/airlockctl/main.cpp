// SPDX-License-Identifier: Apache-2.0
// airlockctl: the composition root of the CLI. The commands live in airlockctl_lib (Cli.h), so
// that tests run them in-process; this is the program around them, on stdout and stderr.
#include "Cli.h"
#include "util/Version.h"

#include <QCoreApplication>

#include <csignal>

int main(int argc, char *argv[])
{
    ::signal(SIGPIPE, SIG_IGN);
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("airlockctl"));
    QCoreApplication::setApplicationVersion(airlock::version());
    QTextStream out(stdout), err(stderr);
    return airlock::cli::runAirlockctl(QCoreApplication::arguments().mid(1), out, err);
}
