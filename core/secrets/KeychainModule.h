// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one entry point of airlock-keychain.so, the module that holds QtKeychain (and with it QtDBus
// and libsecret's stack) so that a program loads them only when it opens the keyring: the CLI's
// start is not paid for by a library it rarely uses. Shared by the module and KeychainSecretStore,
// which loads it.

#include <QByteArray>
#include <QString>

class QObject;

namespace airlock::keychain {

// What a job ended with, as far as a caller needs to tell (the module maps QKeychain's errors).
enum Outcome : int { Done = 0, NotFound = 1, Failed = 2 };
enum class Op : int { Read = 0, Write = 1, Delete = 2 };

// Called on the parent's thread when the job ends, exactly once (never if the job is deleted
// first, e.g. with its parent); data is what a read found.
using Finished = void (*)(void *context, int outcome, const QString &message, const QByteArray &data);

// Bumped whenever the signature below changes: a module of another build is refused.
constexpr int kAbi = 1;
constexpr const char *kAbiSymbol = "airlock_keychain_abi";
constexpr const char *kStartSymbol = "airlock_keychain_start";
using AbiFunction = int (*)();
using StartFunction = void (*)(int op, const QString &service, const QString &key, const QByteArray &data,
    QObject *parent, Finished finished, void *context);

} // namespace airlock::keychain
