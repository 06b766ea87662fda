// SPDX-License-Identifier: Apache-2.0
// airlock-keychain.so: one QtKeychain job per call, never falling back to a plain file. It links
// QtCore and QtKeychain only, and holds no Airlock code but this.
#include "secrets/KeychainModule.h"

#include <QObject>

#include <utility>

#include <qt6keychain/keychain.h>

using namespace airlock::keychain;

// AIRLOCK_KEYCHAIN_ABI_SHIFT: a test build that says it is another build's module.
#ifndef AIRLOCK_KEYCHAIN_ABI_SHIFT
#define AIRLOCK_KEYCHAIN_ABI_SHIFT 0
#endif

extern "C" __attribute__((visibility("default"))) int airlock_keychain_abi()
{
    return kAbi + AIRLOCK_KEYCHAIN_ABI_SHIFT;
}

extern "C" __attribute__((visibility("default"))) void airlock_keychain_start(int op, const QString &service,
    const QString &key, const QByteArray &data, QObject *parent, Finished finished, void *context)
{
    QKeychain::Job *job = nullptr;
    if (op == int(Op::Read)) {
        job = new QKeychain::ReadPasswordJob(service, parent);
    } else if (op == int(Op::Write)) {
        auto *w = new QKeychain::WritePasswordJob(service, parent);
        w->setBinaryData(data);
        job = w;
    } else {
        job = new QKeychain::DeletePasswordJob(service, parent);
    }
    job->setKey(key);
    job->setAutoDelete(true);
    job->setInsecureFallback(false); // never a plain file behind the user's back
    QObject::connect(
        job, &QKeychain::Job::finished, job, [op, finished, context, told = false](QKeychain::Job *j) mutable {
            if (std::exchange(told, true))
                return; // once: the caller frees the context when told
            const int outcome = j->error() == QKeychain::NoError ? Done
                : j->error() == QKeychain::EntryNotFound         ? NotFound
                                                                 : Failed;
            const QByteArray found = op == int(Op::Read) && outcome == Done
                ? static_cast<QKeychain::ReadPasswordJob *>(j)->binaryData()
                : QByteArray();
            finished(context, outcome, j->errorString(), found);
        });
    job->start();
}
