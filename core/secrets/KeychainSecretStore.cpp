// SPDX-License-Identifier: Apache-2.0
#include "secrets/KeychainSecretStore.h"
#include "util/FileSystem.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScopeGuard>
#include <QSemaphore>

#include <cerrno>
#include <cstring>
#include <mutex>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock {

namespace {
const QString kService = QStringLiteral("airlock");
constexpr int kTimeoutMs = 5000;

// Where the module may come from: this build tree's bin when the program runs from there, then
// where this build installs it (both fixed when it is built). Never a place derived from where a
// copy of the program happens to be: one under /tmp would look in /tmp/libexec, which anyone can
// make. AIRLOCK_KEYCHAIN_MODULE names another file (the tests' modules of another build).
QStringList moduleCandidates()
{
    if (const QString given = qEnvironmentVariable("AIRLOCK_KEYCHAIN_MODULE"); !given.isEmpty())
        return {given};
    QStringList out;
    const QString programDir = QCoreApplication::applicationDirPath(); // the executable's, links resolved
    if (programDir == QLatin1String(AIRLOCK_BUILD_BIN_DIR))
        out.append(programDir + QStringLiteral("/airlock-keychain.so"));
    out.append(QStringLiteral(AIRLOCK_LIBEXEC_DIR "/airlock-keychain.so"));
    return out;
}

// Owned by root or by this user and writable by nobody else: only then is it loaded (its
// constructors run before any check of what it is).
bool trusted(const struct stat &st)
{
    return (st.st_uid == 0 || st.st_uid == ::geteuid()) && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

// Opens the module found first and checks that it is this build's. Loaded for good once it is (the
// Secret Service's stack keeps threads); a failure is tried again at the next open.
Result<keychain::StartFunction> loadModule()
{
    static std::mutex mutex;
    static keychain::StartFunction loaded = nullptr;
    std::lock_guard lock(mutex);
    if (loaded)
        return loaded;
    const QStringList candidates = moduleCandidates();
    for (const QString &path : candidates) {
        // Its directory first, then the file in it: what is checked is what is loaded.
        const int dirFd
            = ::open(QFile::encodeName(QFileInfo(path).absolutePath()).constData(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        const int fd = dirFd < 0 ? -1
                                 : ::openat(dirFd, QFile::encodeName(QFileInfo(path).fileName()).constData(),
                                     O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        const int openError = errno;
        const auto closeBoth = qScopeGuard([&] {
            for (int f : {fd, dirFd})
                if (f >= 0)
                    ::close(f);
        });
        if (fd < 0 && openError == ENOENT)
            continue;
        const auto refuse = [&](const QString &why) {
            return makeError(ErrorCode::BoundaryUnavailable,
                QStringLiteral("the keyring module %1 %2; reinstall Airlock, or choose the file store").arg(path, why));
        };
        if (fd < 0)
            return refuse(QStringLiteral("cannot be opened (%1)").arg(QString::fromLocal8Bit(::strerror(openError))));
        struct stat file { };
        struct stat dir { };
        if (::fstat(fd, &file) != 0 || !S_ISREG(file.st_mode) || ::fstat(dirFd, &dir) != 0 || !trusted(file)
            || !trusted(dir))
            return refuse(QStringLiteral("is not owned by root or this user, or others may write it or its directory"));
        void *handle
            = ::dlopen(QByteArray("/proc/self/fd/" + QByteArray::number(fd)).constData(), RTLD_NOW | RTLD_LOCAL);
        if (!handle)
            return refuse(QStringLiteral("cannot be loaded (%1)").arg(QString::fromLocal8Bit(::dlerror())));
        auto abi = reinterpret_cast<keychain::AbiFunction>(::dlsym(handle, keychain::kAbiSymbol));
        auto start = reinterpret_cast<keychain::StartFunction>(::dlsym(handle, keychain::kStartSymbol));
        if (!abi || !start)
            return refuse(QStringLiteral("is not a keyring module"));
        if (const int theirs = abi(); theirs != keychain::kAbi)
            return refuse(QStringLiteral("is of another build (its interface %1, this program's %2): restart the "
                                         "program after an upgrade")
                              .arg(theirs)
                              .arg(keychain::kAbi));
        return loaded = start;
    }
    return makeError(ErrorCode::BoundaryUnavailable,
        QStringLiteral(
            "the keyring module is not installed (looked for %1); reinstall Airlock, or choose the file store")
            .arg(candidates.join(QStringLiteral(", "))));
}

// One keyring job's answer, shared by the caller (which may stop waiting) and the worker.
struct JobState {
    QSemaphore done;
    int outcome = -1;
    QString message;
    QByteArray data;
};

// The module's context for one job: a child of the worker, so that a job that never answers, or is
// deleted with the worker, takes it along.
class PendingJob final : public QObject {
public:
    PendingJob(std::shared_ptr<JobState> state, QObject *worker)
        : QObject(worker)
        , state(std::move(state))
    {
    }
    std::shared_ptr<JobState> state;
};
} // namespace

KeychainSecretStore::KeychainSecretStore(QString indexPath, keychain::StartFunction start)
    : m_indexPath(std::move(indexPath))
    , m_start(start)
{
    m_thread.setObjectName(QStringLiteral("keyring"));
    m_worker = new QObject;
    m_worker->moveToThread(&m_thread);
    QObject::connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread.start();
}

KeychainSecretStore::~KeychainSecretStore()
{
    m_thread.quit();
    m_thread.wait();
}

Result<std::unique_ptr<KeychainSecretStore>> KeychainSecretStore::open(const QString &indexPath, QString *why)
{
    if (qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS")) {
        *why = QStringLiteral("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)");
        return std::unique_ptr<KeychainSecretStore>();
    }
    const auto start = loadModule();
    if (!start)
        return start.error();
    std::unique_ptr<KeychainSecretStore> store(new KeychainSecretStore(indexPath, *start));
    // A read of a name that is never written: "not found" means a keyring answered.
    const Outcome probe = store->run(Op::Read, QStringLiteral("airlock-probe"));
    if (probe.outcome != keychain::NotFound && probe.outcome != keychain::Done) {
        *why = probe.outcome < 0
            ? QStringLiteral("the Secret Service did not answer within %1 s").arg(kTimeoutMs / 1000)
            : QStringLiteral("no Secret Service: %1").arg(probe.message);
        return std::unique_ptr<KeychainSecretStore>();
    }
    return store;
}

KeychainSecretStore::Outcome KeychainSecretStore::run(Op op, const QString &key, const QByteArray &data) const
{
    // Shared with the worker: a job that answers after the timeout writes into this, not a dead frame.
    auto state = std::make_shared<JobState>();
    QMetaObject::invokeMethod(m_worker, [worker = m_worker, start = m_start, op, key, data, state] {
        start(
            int(op), kService, key, data, worker,
            [](void *context, int outcome, const QString &message, const QByteArray &found) {
                std::unique_ptr<PendingJob> pending(static_cast<PendingJob *>(context)); // called once
                pending->state->outcome = outcome;
                pending->state->message = message;
                pending->state->data = found;
                pending->state->done.release();
            },
            new PendingJob(state, worker));
    });
    if (!state->done.tryAcquire(1, kTimeoutMs))
        return {};
    return {state->outcome, state->message, state->data};
}

QString KeychainSecretStore::backend() const
{
    return QStringLiteral("Secret Service (session keyring, service \"airlock\")");
}

Status KeychainSecretStore::loadIndex() const
{
    if (m_indexLoaded)
        return Ok{};
    QFile f(m_indexPath);
    if (f.exists()) {
        if (!f.open(QIODevice::ReadOnly))
            return makeError(
                ErrorCode::IoError, QStringLiteral("cannot read %1: %2").arg(m_indexPath, f.errorString()));
        const QJsonObject doc
            = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("secrets")).toObject();
        for (auto it = doc.begin(); it != doc.end(); ++it) {
            const QJsonObject e = it.value().toObject();
            m_index.insert(it.key(),
                {it.key(), QDateTime::fromString(e.value(QStringLiteral("updated")).toString(), Qt::ISODateWithMs),
                    qsizetype(e.value(QStringLiteral("bytes")).toDouble())});
        }
    }
    m_indexLoaded = true;
    return Ok{};
}

Status KeychainSecretStore::saveIndex() const
{
    const QString dir = QFileInfo(m_indexPath).absolutePath();
    if (!QDir().mkpath(dir))
        return makeError(ErrorCode::IoError, QStringLiteral("cannot create %1").arg(dir));
    ::chmod(QFile::encodeName(dir).constData(), 0700);
    QJsonObject secrets;
    for (const SecretInfo &i : std::as_const(m_index))
        secrets.insert(i.name,
            QJsonObject{{QStringLiteral("updated"), i.updated.toString(Qt::ISODateWithMs)},
                {QStringLiteral("bytes"), double(i.size)}});
    return fs::writePrivateFile(m_indexPath,
        QJsonDocument(
            QJsonObject{{QStringLiteral("version"), 1}, {QStringLiteral("backend"), QStringLiteral("secret-service")},
                {QStringLiteral("secrets"), secrets}})
            .toJson());
}

Status KeychainSecretStore::set(const QString &name, const QByteArray &value)
{
    if (Status s = validateName(name); !s)
        return s;
    if (Status s = validateValue(value); !s)
        return s;
    if (Status s = loadIndex(); !s)
        return s;
    const Outcome o = run(Op::Write, name, value);
    if (o.outcome != keychain::Done)
        return makeError(ErrorCode::IoError,
            QStringLiteral("the Secret Service could not store '%1': %2")
                .arg(name, o.outcome < 0 ? QStringLiteral("no answer in time") : o.message));
    m_cache.insert(name, value);
    m_index.insert(name, {name, QDateTime::currentDateTimeUtc(), value.size()});
    return saveIndex();
}

Result<QByteArray> KeychainSecretStore::get(const QString &name) const
{
    if (const auto it = m_cache.constFind(name); it != m_cache.cend())
        return *it;
    const Outcome o = run(Op::Read, name);
    if (o.outcome == keychain::NotFound)
        return makeError(ErrorCode::NotFound,
            QStringLiteral("no secret named '%1' (set it with 'airlockctl secret set %1')").arg(name.left(100)));
    if (o.outcome != keychain::Done)
        return makeError(ErrorCode::IoError,
            QStringLiteral("the Secret Service could not read '%1': %2")
                .arg(name.left(100), o.outcome < 0 ? QStringLiteral("no answer in time") : o.message));
    m_cache.insert(name, o.data);
    return o.data;
}

Status KeychainSecretStore::remove(const QString &name)
{
    if (Status s = loadIndex(); !s)
        return s;
    const Outcome o = run(Op::Delete, name);
    if (o.outcome == keychain::NotFound || (o.outcome != keychain::Done && !m_index.contains(name)))
        return makeError(ErrorCode::NotFound,
            QStringLiteral("no secret named '%1' (see 'airlockctl secret ls')").arg(name.left(100)));
    if (o.outcome != keychain::Done)
        return makeError(ErrorCode::IoError,
            QStringLiteral("the Secret Service could not delete '%1': %2")
                .arg(name, o.outcome < 0 ? QStringLiteral("no answer in time") : o.message));
    m_cache.remove(name);
    m_index.remove(name);
    return saveIndex();
}

Result<QList<SecretInfo>> KeychainSecretStore::list() const
{
    if (Status s = loadIndex(); !s)
        return s.error();
    QList<SecretInfo> out = m_index.values();
    std::sort(out.begin(), out.end(), [](const SecretInfo &a, const SecretInfo &b) { return a.name < b.name; });
    return out;
}

} // namespace airlock
