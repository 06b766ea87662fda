// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/Hosts.h"
#include "util/Result.h"

#include <QByteArray>
#include <QString>

namespace airlock::hosttokens {

// The token a saved wss:// host is reached with (airlockctl hosts add … --token-file): in the
// session keyring when one answers (the same Secret Service the daemon's secrets use), else in
// $XDG_CONFIG_HOME/airlock/host-tokens.json (0600). hosts.json records which, never the token.
// The backend used; `fellBack`, if given, says why when a keyring was looked for and none answered.
Result<QString> save(const QString &host, const QByteArray &token, QString *fellBack = nullptr);
QString filePath(); // where the file backend keeps tokens
// What a person is told when `host`'s token went to filePath() because no keyring answered
// (`why`, as save() gave it): never silently in a file where a keyring was expected.
QString fellBackNotice(const QString &host, const QString &why);
Result<QByteArray> load(const QString &host, const QString &backend);
void remove(const QString &host, const QString &backend);

// A host saved with its token (if any), checked first: nothing is kept for a host that is
// refused. The registry is changed, not written (the caller saves it).
// `fellBack` as for save(): the token is in filePath() because no keyring answered, and why.
Status addHost(HostRegistry &hosts, const QString &name, const QString &url, const QByteArray &token = {},
    QString *fellBack = nullptr);
// A saved host and its token, gone.
Status removeHost(HostRegistry &hosts, const QString &name);

} // namespace airlock::hosttokens
