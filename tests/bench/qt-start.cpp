// SPDX-License-Identifier: Apache-2.0
// airlock-qt-start: the least a Qt command-line program does (QtCore loaded, an application object,
// a line printed). airlock-bench times it beside `airlockctl --version`: the start no Qt client
// can go below on the machine it runs on.
#include <QCoreApplication>

#include <cstdio>

int main(int argc, char **argv)
{
    const QCoreApplication app(argc, argv);
    std::puts("airlock-qt-start");
    return 0;
}
