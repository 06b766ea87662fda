// SPDX-License-Identifier: Apache-2.0
#include "ConnectAgentDialog.h"

#include "StatusText.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

namespace airlock::ui {

ConnectAgentDialog::ConnectAgentDialog(
    const QJsonArray &presets, const QStringList &hosts, const QString &program, QWidget *parent)
    : QDialog(parent)
    , m_program(program)
    , m_preset(new QComboBox)
    , m_presetInfo(new QLabel)
    , m_hosts(new QLineEdit)
    , m_hostsInfo(new QLabel)
    , m_host(new QComboBox)
    , m_tabs(new QTabWidget)
{
    setWindowTitle(tr("Connect an agent"));
    resize(760, 560);
    auto *intro = new QLabel(tr(
        "An agent that speaks MCP runs its commands in Airlock sandboxes through <tt>airlockctl mcp</tt>: under your "
        "policies and approvals, recorded in the history. Choose what its sandboxes may reach, then copy the "
        "configuration for your agent."));
    intro->setWordWrap(true);

    m_preset->addItem(tr("Default policy"), QString());
    m_preset->setItemData(0,
        tr("No network, no credentials, no tools; the agent's commands ask you unless they only read."),
        Qt::ToolTipRole);
    for (const QJsonValue &v : presets) {
        const QJsonObject p = v.toObject();
        const QString name = p.value(QStringLiteral("name")).toString();
        if (name == QLatin1String("locked"))
            continue; // the default, listed first
        m_preset->addItem(name, name);
        m_preset->setItemData(m_preset->count() - 1,
            p.value(QStringLiteral("policy")).toObject().value(QStringLiteral("description")).toString(),
            Qt::ToolTipRole);
    }
    m_preset->setToolTip(tr("The preset its sandboxes are created with; within it, the agent may ask for less"));
    m_presetInfo->setWordWrap(true);
    m_presetInfo->setForegroundRole(QPalette::PlaceholderText);
    m_hosts->setPlaceholderText(tr("pypi.org files.pythonhosted.org — or paste a URL"));
    m_hosts->setToolTip(tr("Hosts the agent may ask for in a sandbox's network allowlist, added to the preset's; "
                           "separated by spaces or commas"));
    m_hostsInfo->setWordWrap(true);
    m_host->addItem(tr("This computer"), QString());
    for (const QString &h : hosts)
        m_host->addItem(h, h);
    m_host->setToolTip(tr("The daemon whose sandboxes the agent uses (a saved remote host: --host)"));

    auto *form = new QFormLayout;
    form->addRow(tr("&Preset:"), m_preset);
    form->addRow(QString(), m_presetInfo);
    form->addRow(tr("&Network hosts:"), m_hosts);
    form->addRow(QString(), m_hostsInfo);
    form->addRow(tr("&Host:"), m_host);

    const QList<mcp::AgentConfig> configs = mcp::agentConfigs({});
    for (const mcp::AgentConfig &config : configs) {
        auto *page = new QWidget;
        auto *layout = new QVBoxLayout(page);
        auto *where = new QLabel;
        where->setWordWrap(true);
        where->setTextFormat(Qt::PlainText);
        where->setTextInteractionFlags(Qt::TextSelectableByMouse);
        auto *text = new QPlainTextEdit;
        text->setReadOnly(true);
        text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
        text->setLineWrapMode(QPlainTextEdit::WidgetWidth); // on screen only: what is copied has the lines as they are
        auto *copyButton = new QPushButton(tr("&Copy"));
        copyButton->setToolTip(tr("Copies the configuration above to the clipboard"));
        connect(copyButton, &QPushButton::clicked, this, [this, client = config.client] { copy(client); });
        layout->addWidget(where);
        layout->addWidget(text, 1);
        layout->addWidget(copyButton, 0, Qt::AlignRight);
        m_tabs->addTab(page, config.label);
        m_wheres.append(where);
        m_texts.append(text);
    }
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(m_tabs, 1);
    layout->addWidget(buttons);

    connect(m_preset, &QComboBox::currentIndexChanged, this, &ConnectAgentDialog::update);
    connect(m_host, &QComboBox::currentIndexChanged, this, &ConnectAgentDialog::update);
    connect(m_hosts, &QLineEdit::textChanged, this, &ConnectAgentDialog::update);
    update();
}

void ConnectAgentDialog::update()
{
    m_presetInfo->setText(m_preset->currentData(Qt::ToolTipRole).toString());
    mcp::AgentSetup setup;
    setup.program = m_program;
    setup.preset = m_preset->currentData().toString();
    setup.host = m_host->currentData().toString();
    auto hosts = mcp::parseAllowedHosts(m_hosts->text());
    m_hostsError = hosts ? QString() : hosts.error().message;
    if (hosts) {
        setup.allow = *hosts;
        showStatus(m_hostsInfo,
            hosts->isEmpty() ? tr("None beyond the preset's.")
                             : tr("Adds %n host(s) to the preset's: %1", nullptr, int(hosts->size()))
                                   .arg(hosts->join(QStringLiteral(", "))),
            false);
    } else {
        showStatus(m_hostsInfo, tr("Left out until it is a host: %1").arg(hosts.error().message), true);
    }
    const QList<mcp::AgentConfig> configs = mcp::agentConfigs(setup);
    for (qsizetype i = 0; i < configs.size() && i < m_texts.size(); ++i) {
        m_wheres[i]->setText(configs[i].where);
        m_texts[i]->setPlainText(configs[i].text);
    }
}

QString ConnectAgentDialog::configText(mcp::AgentClient client) const
{
    const qsizetype i = qsizetype(client);
    return i < m_texts.size() ? m_texts[i]->toPlainText() : QString();
}

QString ConnectAgentDialog::hostsError() const
{
    return m_hostsError;
}

void ConnectAgentDialog::copy(mcp::AgentClient client) const
{
    QApplication::clipboard()->setText(configText(client));
}

} // namespace airlock::ui
