// SPDX-License-Identifier: Apache-2.0
#include "CreateSandboxDialog.h"

#include "model/SandboxSpec.h"
#include "policy/Policy.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

namespace airlock::ui {

CreateSandboxDialog::CreateSandboxDialog(const QStringList &presets, QWidget *parent)
    : QDialog(parent), m_name(new QLineEdit), m_preset(new QComboBox), m_network(new QComboBox), m_allow(new QLineEdit), m_mounts(new QLineEdit),
      m_memoryMiB(new QSpinBox), m_pids(new QSpinBox), m_problem(new QLabel),
      m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel))
{
    setWindowTitle(tr("New sandbox"));
    m_name->setPlaceholderText(tr("optional: a-z 0-9 _ . -"));
    m_preset->addItems(presets);
    m_preset->setCurrentText(QStringLiteral("locked"));
    m_network->addItem(tr("as the preset says"), QString());
    m_network->addItem(tr("none: no network"), QStringLiteral("none"));
    m_network->addItem(tr("allowlist: only these hosts, through the proxy"), QStringLiteral("allowlist"));
    m_network->addItem(tr("FULL: the host network"), QStringLiteral("full"));
    m_allow->setPlaceholderText(tr("pypi.org:443, *.example.com"));
    m_mounts->setPlaceholderText(tr("HOST_DIR:SANDBOX_PATH[:rw], … (read-only unless :rw)"));
    m_memoryMiB->setRange(0, 1 << 20);
    m_memoryMiB->setSpecialValueText(tr("no limit"));
    m_memoryMiB->setSuffix(tr(" MiB"));
    m_pids->setRange(0, 1 << 20);
    m_pids->setSpecialValueText(tr("default"));
    m_problem->setStyleSheet(QStringLiteral("color: #d03030"));
    m_problem->setWordWrap(true);

    auto *form = new QFormLayout(this);
    form->addRow(tr("&Name"), m_name);
    form->addRow(tr("&Preset"), m_preset);
    form->addRow(tr("N&etwork"), m_network);
    form->addRow(tr("&Allowed hosts"), m_allow);
    form->addRow(tr("Mo&unts"), m_mounts);
    form->addRow(tr("&Memory"), m_memoryMiB);
    form->addRow(tr("P&rocesses"), m_pids);
    form->addRow(m_problem);
    form->addRow(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    for (QLineEdit *edit : {m_name, m_allow, m_mounts})
        connect(edit, &QLineEdit::textChanged, this, &CreateSandboxDialog::validate);
    connect(m_network, &QComboBox::currentIndexChanged, this, &CreateSandboxDialog::validate);
    validate();
}

QString CreateSandboxDialog::problem() const
{
    if (!m_name->text().isEmpty())
        if (Status s = validateSandboxName(m_name->text()); !s)
            return s.error().message;
    for (const QString &host : m_allow->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        if (auto normal = policy::normaliseHostPattern(host.trimmed()); !normal)
            return tr("Allowed hosts: %1").arg(normal.error().message);
    QJsonArray mounts;
    for (const QString &arg : m_mounts->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        auto mount = parseMountArg(arg.trimmed());
        if (!mount)
            return tr("Mounts: %1").arg(mount.error().message);
        mounts.append(QJsonObject{{QStringLiteral("host"), mount->hostPath}, {QStringLiteral("path"), mount->sandboxPath}, {QStringLiteral("writable"), mount->writable}});
    }
    if (auto spec = SandboxSpec::fromJson({{QStringLiteral("mounts"), mounts}}); !spec) // the daemon's own checks
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
    m_allow->setEnabled(m_network->currentData().toString().isEmpty() || m_network->currentData().toString() == QLatin1String("allowlist"));
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(p.isEmpty());
}

QJsonObject CreateSandboxDialog::parameters() const
{
    QJsonObject spec, limits, params;
    if (!m_name->text().isEmpty())
        spec.insert(QStringLiteral("name"), m_name->text());
    QString network = m_network->currentData().toString();
    QJsonArray allow;
    for (const QString &host : m_allow->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        allow.append(*policy::normaliseHostPattern(host.trimmed()));
    if (!allow.isEmpty()) {
        network = QStringLiteral("allowlist");
        params.insert(QStringLiteral("policy"), QJsonObject{{QStringLiteral("network"), QJsonObject{{QStringLiteral("allow"), allow}}}});
    }
    if (!network.isEmpty())
        spec.insert(QStringLiteral("network"), network);
    if (m_memoryMiB->value() > 0)
        limits.insert(QStringLiteral("memoryBytes"), double(m_memoryMiB->value()) * 1024 * 1024);
    if (m_pids->value() > 0)
        limits.insert(QStringLiteral("pids"), m_pids->value());
    if (!limits.isEmpty())
        spec.insert(QStringLiteral("limits"), limits);
    QJsonArray mounts;
    for (const QString &arg : m_mounts->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        if (auto mount = parseMountArg(arg.trimmed()))
            mounts.append(QJsonObject{{QStringLiteral("host"), mount->hostPath}, {QStringLiteral("path"), mount->sandboxPath}, {QStringLiteral("writable"), mount->writable}});
    if (!mounts.isEmpty())
        spec.insert(QStringLiteral("mounts"), mounts);
    params.insert(QStringLiteral("spec"), spec);
    params.insert(QStringLiteral("preset"), m_preset->currentText());
    return params;
}

} // namespace airlock::ui
