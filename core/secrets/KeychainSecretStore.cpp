// SPDX-License-Identifier: Apache-2.0
#include "secrets/KeychainSecretStore.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSemaphore>

#include <dlfcn.h>
#include <sys/stat.h>

namespace airlock {

namespace {
const QString kService = QStringLiteral("airlock");
constexpr int kTimeoutMs = 5000;

struct Module {
    keychain::StartFunction start = nullptr;
    QString why; // set when it could not be loaded
};

// airlock-keychain.so next to this program (the build tree), or where the package puts it. Loaded
// once and never unloaded (QtDBus keeps threads).
Module loadModule()
{
    const QString dir = QFileInfo(QFile::symLinkTarget(QStringLiteral("/proc/self/exe"))).absolutePath();
    QStringList tried;
    for (const QString &path : QStringList{dir + QStringLiteral("/airlock-keychain.so"),
             dir + QStringLiteral("/../libexec/airlock/airlock-keychain.so"),
             QStringLiteral("/usr/libexec/airlock/airlock-keychain.so")}) {
        if (!QFileInfo::exists(path)) {
            tried.append(path);
            continue;
        }
        void *handle = ::dlopen(QFile::encodeName(path).constData(), RTLD_NOW | RTLD_LOCAL);
        if (!handle)
            return {nullptr, QStringLiteral("cannot load %1: %2").arg(path, QString::fromLocal8Bit(::dlerror()))};
        auto abi = reinterpret_cast<keychain::AbiFunction>(::dlsym(handle, keychain::kAbiSymbol));
        auto start = reinterpret_cast<keychain::StartFunction>(::dlsym(handle, keychain::kStartSymbol));
        if (!abi || !start || abi() != keychain::kAbi)
            return {
                nullptr, QStringLiteral("%1 is not the keyring module of this build (reinstall Airlock)").arg(path)};
        return {start, {}};
    }
    return {nullptr,
        QStringLiteral("the keyring module is not installed (looked for %1)").arg(tried.join(QStringLiteral(", ")))};
}
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

std::unique_ptr<KeychainSecretStore> KeychainSecretStore::open(const QString &indexPath, QString *why)
{
    if (qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS")) {
        *why = QStringLiteral("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)");
        return nullptr;
    }
    static const Module module = loadModule();
    if (!module.start) {
        *why = module.why;
        return nullptr;
    }
    std::unique_ptr<KeychainSecretStore> store(new KeychainSecretStore(indexPath, module.start));
    // A read of a name that is never written: "not found" means a keyring answered.
    const Outcome probe = store->run(Op::Read, QStringLiteral("airlock-probe"));
    if (probe.outcome != keychain::NotFound && probe.outcome != keychain::Done) {
        *why = probe.outcome < 0
            ? QStringLiteral("the Secret Service did not answer within %1 s").arg(kTimeoutMs / 1000)
            : QStringLiteral("no Secret Service: %1").arg(probe.message);
        return nullptr;
    }
    return store;
}

KeychainSecretStore::Outcome KeychainSecretStore::run(Op op, const QString &key, const QByteArray &data) const
{
    // Shared with the worker: a job that answers after the timeout writes into this, not a dead frame.
    struct State {
        QSemaphore done;
        Outcome outcome;
    };
    auto state = std::make_shared<State>();
    QMetaObject::invokeMethod(m_worker, [worker = m_worker, start = m_start, op, key, data, state] {
        // The module calls back once, on this thread: the context keeps the state alive until then.
        auto *context = new std::shared_ptr<State>(state);
        start(
            int(op), kService, key, data, worker,
            [](void *c, int outcome, const QString &message, const QByteArray &found) {
                std::unique_ptr<std::shared_ptr<State>> held(static_cast<std::shared_ptr<State> *>(c));
                (*held)->outcome = {outcome, message, found};
                (*held)->done.release();
            },
            context);
    });
    if (!state->done.tryAcquire(1, kTimeoutMs))
        return {};
    return state->outcome;
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
