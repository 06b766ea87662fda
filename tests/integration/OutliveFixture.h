// SPDX-License-Identifier: Apache-2.0
// What tst_outlive and tst_outlive_hidden share: a daemon whose sandboxes outlive it, started with
// one, and the record it keeps of a sandbox (what the next daemon takes it over from).
#pragma once

#include "TestDaemon.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QStringList>

namespace airlock::test {

inline QJsonObject recordOf(const TestDaemon &d, const QString &id)
{
    QFile f(d.dataDir() + QStringLiteral("/sandboxes/") + id + QStringLiteral("/record.json"));
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject{};
}

// Starts `d` with sandboxes that outlive it and creates one: its name, or empty and `error`.
inline QString startWithSandbox(TestDaemon &d, const QStringList &options, QString *error)
{
    d.setSandboxesOutlive(true);
    if (!d.start()) {
        *error = QStringLiteral("airlockd did not start");
        return {};
    }
    return d.create(options, error);
}

} // namespace airlock::test
