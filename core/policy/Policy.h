// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/SandboxSpec.h"
#include "policy/CommandRules.h"
#include "policy/NetworkRules.h"
#include "util/Result.h"

#include <QJsonObject>

#include <QList>
#include <QMap>
#include <QStringList>
#include <optional>

namespace airlock::policy {

inline constexpr int kPolicyVersion = 1;

// One layer of policy: a (partial) policy document and where it came from.
struct Layer {
    QString name; // builtin, user, preset:NAME, sandbox
    QJsonObject document;
};

struct CredentialGrant {
    QString secret; // the secret's name in the store; never its value
    QString env; // as this environment variable, or
    QString file; // as a read-only file at this absolute path
    // Brokered: the sandbox gets only a placeholder (in env or file), and the egress proxy puts
    // the secret in place of it in header `brokerHeader` of requests to https://brokerHost.
    QString brokerHost, brokerHeader;
    bool brokered() const { return !brokerHost.isEmpty(); }
    // What a brokered grant's sandbox holds instead of the secret.
    QByteArray placeholder() const { return "airlock-brokered-" + secret.toUtf8(); }
};

struct ToolPermission {
    Decision decision = Decision::Ask;
    QMap<QString, QString> constraints; // argument name -> glob its value must match
};

// The effective policy of a sandbox, typed, plus the merged document and, for every value in it
// (by JSON pointer), the layer it came from: what is enforced, and why.
struct EffectivePolicy {
    QJsonObject document;
    QJsonObject sources; // "/network/mode" -> "preset:locked"
    QString preset;

    QString networkMode = QStringLiteral("none"); // none | allowlist | full
    QStringList networkAllow, networkDeny; // normalised host[:port] patterns
    QStringList networkResolveWildcards; // wildcard patterns whose names may be looked up in DNS
    Decision unknownDestination = Decision::Deny;
    QList<CredentialGrant> grants;
    QMap<QString, ToolPermission> tools;
    CommandRules commands;
    bool judgeExecs = true; // every program a command starts is judged (commands.judgeExecs)
    NetworkRules network;
    QList<Mount> mounts;
    Limits limits;
};

// What the tool permissions say about one call: a tool the policy does not name is denied; a
// constraint (argument -> glob) that the call's argument does not match denies it.
struct ToolVerdict {
    Decision decision = Decision::Deny;
    QString reason;
    QJsonObject toJson() const;
};
ToolVerdict evaluateTool(const EffectivePolicy &policy, const QString &tool, const QJsonObject &arguments);

// Checks one policy document (a layer, or a file a user wrote). Errors name the field as a JSON
// pointer and say what was expected; nothing of an invalid document is ever used.
Status validate(const QJsonObject &document);

// Merges the layers in order (later ones win): scalars are replaced; lists (network allow/deny,
// command rules, grants, mounts) accumulate; tools and limits merge by name. Each layer is
// validated first, and the error names the layer.
Result<EffectivePolicy> resolve(const QList<Layer> &layers);

// A sandbox's layers: built-in defaults < the user's defaults (USERFILE, if it exists) < the preset
// (locked unless named) < the sandbox's own overrides.
// The user's own layer (their defaults for every new sandbox): {} when the file does not exist;
// an error saying how to fix it when it cannot be read or is not a JSON object.
Result<QJsonObject> readUserLayer(const QString &file);
// The user's layer, or none when the file does not exist.
Result<std::optional<QJsonObject>> readUserLayerIfAny(const QString &file);
// Validated whole, then written atomically (0600, its directory created); a bad layer changes nothing.
Status writeUserLayer(const QString &file, const QJsonObject &layer);
Result<EffectivePolicy> resolveForSandbox(
    const QJsonObject &overrides, const QString &presetName, const QString &userFile);
// The same with the user's layer as it was read (none: std::nullopt): a sandbox taken over by a
// later daemon keeps the policy it had, whatever the file says now.
Result<EffectivePolicy> resolveForSandbox(
    const QJsonObject &overrides, const QString &presetName, const std::optional<QJsonObject> &userLayer);

// The sandbox layer for a create request: `overrides`, with what the spec states explicitly
// (network, mounts, limits: the CLI's --network, --mount, --memory ...) taking precedence.
QJsonObject withSpecFields(QJsonObject overrides, const QJsonObject &spec);

// The built-in defaults (the bottom layer): no network, no credentials, no tools, commands ask.
QJsonObject builtinDefaults();
// Presets shipped with Airlock (resources/presets): name -> document.
QStringList presetNames();
Result<QJsonObject> preset(const QString &name);
// A domain pattern as the policy stores it: lower case, no trailing dot, IDNA (ACE) form; with an
// optional :port. Errors say what is wrong with it.
Result<QString> normaliseHostPattern(const QString &pattern);
// A host name the proxy can broker a credential for, normalised (lower case, IDNA): not an address
// in any spelling, a wildcard, a port or a name of one label. Errors say why not.
Result<QString> brokeredHostName(const QString &host);
// "NAME=ADDR[,ADDR]" (airlockd --resolve): the normalised name and its addresses.
Result<std::pair<QString, QList<QHostAddress>>> parseResolveEntry(const QString &entry);

} // namespace airlock::policy
