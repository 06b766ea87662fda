// SPDX-License-Identifier: Apache-2.0
#include "CreateSandboxDialog.h"

#include "mcp/AgentConfig.h"
#include "model/DisplayText.h"
#include "model/SandboxSpec.h"
#include "policy/Policy.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include <cmath>

namespace airlock::ui {

CreateSandboxDialog::CreateSandboxDialog(const QJsonArray &presets, const QStringList &hosts, int host, QWidget *parent)
    : QDialog(parent)
    , m_presets(presets)
    , m_host(new QComboBox)
    , m_name(new QLineEdit)
    , m_preset(new QComboBox)
    , m_presetAbout(new QLabel)
    , m_allowAbout(new QLabel)
    , m_network(new QComboBox)
    , m_isolation(new QComboBox)
    , m_allow(new QLineEdit)
    , m_mounts(new QLineEdit)
    , m_memoryMiB(new QSpinBox)
    , m_pids(new QSpinBox)
    , m_cpus(new QDoubleSpinBox)
    , m_diskGiB(new QDoubleSpinBox)
    , m_problem(new QLabel)
    , m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel))
{
    setWindowTitle(tr("New sandbox"));
    m_host->addItems(hosts);
    m_host->setCurrentIndex(std::clamp(host, 0, std::max(0, int(hosts.size()) - 1)));
    m_host->setToolTip(tr("The daemon that will own the sandbox: this computer, or a remote host you added"));
    m_name->setPlaceholderText(tr("optional: a-z 0-9 _ . -"));
    m_name->setToolTip(tr("Left empty, the daemon picks a name"));
    setPresets(presets);
    m_preset->setToolTip(tr("The policy the sandbox starts from; your defaults and what you set here apply on top"));
    for (QLabel *about : {m_presetAbout, m_allowAbout}) {
        about->setWordWrap(true);
        about->setTextFormat(Qt::PlainText);
        about->setStyleSheet(QStringLiteral("color: palette(mid)"));
    }
    m_network->addItem(tr("as the preset says"), QString());
    m_network->addItem(tr("none: no network"), QStringLiteral("none"));
    m_network->addItem(tr("allowlist: only these hosts, through the proxy"), QStringLiteral("allowlist"));
    m_network->addItem(tr("FULL: the host network"), QStringLiteral("full"));
    m_network->setToolTip(tr("Fixed for the sandbox's life; the allowlist's hosts can change while it runs"));
    m_isolation->addItem(tr("namespaces: bubblewrap on the host's kernel"), QStringLiteral("namespaces"));
    m_isolation->addItem(tr("gVisor: a kernel in user space (needs runsc)"), QStringLiteral("gvisor"));
    m_isolation->setToolTip(tr("What stands between the sandbox and the host's kernel. gVisor answers the sandbox's "
                               "system calls itself: a kernel bug reachable from inside is not an escape"));
    m_allow->setPlaceholderText(tr("pypi.org:443, *.example.com, or a pasted URL"));
    m_allow->setToolTip(tr("Hosts the egress proxy lets through, in addition to the preset's"));
    m_mounts->setPlaceholderText(tr("HOST_DIR:SANDBOX_PATH[:rw], … (read-only unless :rw)"));
    m_mounts->setToolTip(tr("Host folders to see inside, read-only unless :rw"));
    // Memory in steps of 256 MiB, processes in steps of 64: the sizes people pick.
    m_memoryMiB->setRange(0, 1 << 20);
    m_memoryMiB->setSingleStep(256);
    m_memoryMiB->setSpecialValueText(tr("default (half of this computer's, at most 4 GiB)"));
    m_memoryMiB->setSuffix(tr(" MiB"));
    m_memoryMiB->setToolTip(
        tr("The most memory the sandbox's processes may use together; past it, one of them is killed"));
    m_pids->setRange(0, 1 << 20);
    m_pids->setSingleStep(64);
    m_pids->setSpecialValueText(tr("default"));
    m_pids->setToolTip(tr("The most processes and threads at once: a fork bomb stops there"));
    m_cpus->setRange(0, 1024);
    m_cpus->setDecimals(2);
    m_cpus->setSingleStep(0.5);
    m_cpus->setSpecialValueText(tr("no limit"));
    m_cpus->setSuffix(tr(" cores"));
    m_cpus->setToolTip(tr("The CPU time the sandbox gets per second of wall time, in cores: 0.5 is half of one"));
    m_diskGiB->setRange(0, 1 << 20);
    m_diskGiB->setDecimals(2);
    m_diskGiB->setSingleStep(1);
    m_diskGiB->setSpecialValueText(tr("default (10 GiB, or what the disk has free)"));
    m_diskGiB->setSuffix(tr(" GiB"));
    m_diskGiB->setToolTip(
        tr("The size of the workspace: past it, writes fail with \"No space left on device\" and the rest of the disk "
           "stays free"));
    m_problem->setStyleSheet(QStringLiteral("color: #d03030"));
    m_problem->setWordWrap(true);

    auto *form = new QFormLayout(this);
    form->addRow(tr("&Host"), m_host);
    if (hosts.size() < 2) {
        m_host->setVisible(false);
        form->labelForField(m_host)->setVisible(false);
    }
    form->addRow(tr("&Name"), m_name);
    form->addRow(tr("&Preset"), m_preset);
    form->addRow(QString(), m_presetAbout);
    form->addRow(tr("&Isolation"), m_isolation);
    form->addRow(tr("N&etwork"), m_network);
    form->addRow(tr("&Allowed hosts"), m_allow);
    form->addRow(QString(), m_allowAbout);
    form->addRow(tr("Mo&unts"), m_mounts);
    form->addRow(tr("&Memory"), m_memoryMiB);
    form->addRow(tr("P&rocesses"), m_pids);
    form->addRow(tr("&CPUs"), m_cpus);
    form->addRow(tr("&Disk"), m_diskGiB);
    form->addRow(m_problem);
    form->addRow(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    for (QLineEdit *edit : {m_name, m_allow, m_mounts})
        connect(edit, &QLineEdit::textChanged, this, &CreateSandboxDialog::validate);
    connect(m_network, &QComboBox::currentIndexChanged, this, &CreateSandboxDialog::validate);
    connect(m_preset, &QComboBox::currentIndexChanged, this, &CreateSandboxDialog::validate);
    validate();
}

void CreateSandboxDialog::setPresets(const QJsonArray &presets)
{
    const QSignalBlocker quiet(m_preset);
    const QString chosen = m_preset->count() ? m_preset->currentData().toString() : QStringLiteral("locked");
    m_presets = presets;
    m_preset->clear();
    for (const QJsonValue &p : presets) { // a daemon's names: shown escaped, sent as they are
        const QString name = p.toObject().value(QStringLiteral("name")).toString();
        m_preset->addItem(display::escaped(name, 64), name);
    }
    m_preset->setCurrentIndex(std::max(0, m_preset->findData(chosen)));
}

void CreateSandboxDialog::setPresetSource(std::function<QJsonArray(int)> presetsOf)
{
    m_presetsOf = std::move(presetsOf);
    connect(
        m_host, &QComboBox::currentIndexChanged, this,
        [this](int host) {
            setPresets(m_presetsOf(host));
            validate();
        },
        Qt::UniqueConnection);
}

int CreateSandboxDialog::host() const
{
    return std::max(0, m_host->currentIndex());
}

void CreateSandboxDialog::describePreset()
{
    QJsonObject chosen;
    for (const QJsonValue &p : m_presets)
        if (p.toObject().value(QStringLiteral("name")).toString() == m_preset->currentData().toString())
            chosen = p.toObject().value(QStringLiteral("policy")).toObject();
    m_presetAbout->setText(
        display::escaped(chosen.value(QStringLiteral("description")).toString(), 400)); // a daemon's words
    const QJsonObject network = chosen.value(QStringLiteral("network")).toObject();
    const qsizetype presetHosts = network.value(QStringLiteral("allow")).toArray().size();
    const QString mode = m_network->currentData().toString().isEmpty()
        ? network.value(QStringLiteral("mode")).toString()
        : m_network->currentData().toString();
    if (mode != QLatin1String("allowlist")
        && !(m_network->currentData().toString().isEmpty() && !m_allow->text().trimmed().isEmpty()))
        m_allowAbout->setText(mode == QLatin1String("full")
                ? tr("Full network: every host is reachable; nothing to list.")
                : tr("No network: typing hosts here makes it an allowlist."));
    else
        m_allowAbout->setText(presetHosts == 0
                ? tr("The preset %1 lets no host through: only these will be.").arg(m_preset->currentText())
                : presetHosts == 1
                ? tr("Added to the 1 host the preset %1 already lets through.").arg(m_preset->currentText())
                : tr("Added to the %1 hosts the preset %2 already lets through.")
                      .arg(presetHosts)
                      .arg(m_preset->currentText()));
}

QString CreateSandboxDialog::problem() const
{
    if (!m_name->text().isEmpty())
        if (Status s = validateSandboxName(m_name->text()); !s)
            return s.error().message;
    if (auto hosts = mcp::parseAllowedHosts(m_allow->text()); !hosts)
        return tr("Allowed hosts: %1").arg(hosts.error().message);
    QJsonArray mounts;
    for (const QString &arg : m_mounts->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        auto mount = parseMountArg(arg.trimmed());
        if (!mount)
            return tr("Mounts: %1").arg(mount.error().message);
        mounts.append(QJsonObject{{QStringLiteral("host"), mount->hostPath},
            {QStringLiteral("path"), mount->sandboxPath}, {QStringLiteral("writable"), mount->writable}});
    }
    // The daemon's own checks, where they mean something: host folders on this computer.
    if (auto spec = host() == 0 ? SandboxSpec::fromJson({{QStringLiteral("mounts"), mounts}})
                                : Result<SandboxSpec>(SandboxSpec());
        !spec)
        return tr("Mounts: %1").arg(spec.error().message);
    const QString network = m_network->currentData().toString();
    if (!m_allow->text().trimmed().isEmpty() && !network.isEmpty() && network != QLatin1String("allowlist"))
        return tr("Allowed hosts go with the allowlist network");
    return {};
}

void CreateSandboxDialog::validate()
{
    const QString p = problem();
    m_problem->setText(p);
    m_problem->setVisible(!p.isEmpty());
    m_allow->setEnabled(m_network->currentData().toString().isEmpty()
        || m_network->currentData().toString() == QLatin1String("allowlist"));
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(p.isEmpty());
    describePreset();
}

CreateSandboxRequest CreateSandboxDialog::request() const
{
    CreateSandboxRequest request;
    request.name = m_name->text();
    request.isolation = isolationFromName(m_isolation->currentData().toString()).value_or(Isolation::Namespaces);
    const QString network = m_network->currentData().toString();
    if (!network.isEmpty()) // otherwise the preset decides
        request.network = network == QLatin1String("full") ? NetworkMode::Full
            : network == QLatin1String("allowlist")        ? NetworkMode::Allowlist
                                                           : NetworkMode::None;
    if (const auto hosts = mcp::parseAllowedHosts(m_allow->text()); hosts && !hosts->isEmpty())
        request.allowHosts(*hosts);
    if (m_memoryMiB->value() > 0)
        request.limits.memoryBytes = uint64_t(m_memoryMiB->value()) * 1024 * 1024;
    if (m_pids->value() > 0)
        request.limits.pids = uint64_t(m_pids->value());
    if (m_cpus->value() > 0)
        request.limits.cpuMillicores = uint64_t(std::round(m_cpus->value() * 1000));
    if (m_diskGiB->value() > 0)
        request.limits.diskBytes = uint64_t(std::round(m_diskGiB->value() * 1024 * 1024 * 1024));
    for (const QString &arg : m_mounts->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        if (auto mount = parseMountArg(arg.trimmed()))
            request.mounts.append(*mount);
    request.preset = m_preset->currentData().toString();
    return request;
}

} // namespace airlock::ui
