// SPDX-License-Identifier: Apache-2.0
#include "AddHostDialog.h"

#include "client/HostTokens.h"
#include "remote/TokenStore.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>

namespace airlock::ui {

AddHostDialog::AddHostDialog(QWidget *parent)
    : QDialog(parent), m_name(new QLineEdit), m_address(new QLineEdit), m_token(new QLineEdit), m_fingerprint(new QLabel), m_problem(new QLabel),
      m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel))
{
    setWindowTitle(tr("Add a host"));
    setMinimumWidth(620);
    m_name->setPlaceholderText(tr("build-box"));
    m_address->setPlaceholderText(tr("wss://10.0.0.5:7443#sha256=… as airlockd printed it, or ssh://me@host"));
    m_token->setPlaceholderText(tr("alk_… from 'airlockd token create' on that host"));
    m_token->setEchoMode(QLineEdit::Password);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);
    m_fingerprint->setFont(mono);
    m_fingerprint->setTextFormat(Qt::PlainText);
    m_fingerprint->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_fingerprint->setWordWrap(true);
    m_problem->setTextFormat(Qt::PlainText);
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #c0392b"));
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Add host"));
    auto *form = new QFormLayout(this);
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Address"), m_address);
    form->addRow(tr("Certificate"), m_fingerprint);
    form->addRow(tr("Token"), m_token);
    form->addRow(m_problem);
    form->addRow(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &AddHostDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    for (QLineEdit *edit : {m_name, m_address, m_token})
        connect(edit, &QLineEdit::textChanged, this, &AddHostDialog::check);
    check();
}

void AddHostDialog::check()
{
    QString problem;
    m_fingerprint->clear();
    const QString address = m_address->text().trimmed();
    auto parsed = address.isEmpty() ? Result<HostAddress>(makeError(ErrorCode::InvalidArgument, tr("Paste the address airlockd printed.")))
                                    : parseHostAddress(address);
    const bool needsToken = parsed && (parsed->scheme == HostAddress::Scheme::Wss || parsed->scheme == HostAddress::Scheme::Ws);
    m_token->setEnabled(needsToken);
    if (!parsed) {
        problem = parsed.error().message;
    } else if (parsed->scheme == HostAddress::Scheme::Wss) {
        // In groups of four, to be read against what the server shows, not taken on trust.
        QStringList groups;
        for (int i = 0; i < parsed->fingerprint.size(); i += 4)
            groups << parsed->fingerprint.mid(i, 4);
        m_fingerprint->setText(tr("SHA-256 %1\nCompare it with the server's before adding: it is the only proof this is that daemon.")
                                   .arg(groups.join(QLatin1Char(' '))));
    } else {
        m_fingerprint->setText(tr("none (%1)").arg(parsed->scheme == HostAddress::Scheme::Ssh ? tr("ssh checks the host key") : tr("this machine")));
    }
    if (problem.isEmpty() && needsToken && !remote::isTokenShaped(m_token->text().trimmed().toLatin1()))
        problem = tr("The token is what 'airlockd token create --name NAME' printed on that host (alk_…).");
    if (problem.isEmpty() && m_name->text().trimmed().isEmpty())
        problem = tr("Give the host a name.");
    m_problem->setText(problem);
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(problem.isEmpty());
}

Result<HostRegistry::Entry> AddHostDialog::save()
{
    auto hosts = HostRegistry::load();
    if (!hosts)
        return hosts.error();
    const QString name = m_name->text().trimmed();
    const QString url = m_address->text().trimmed();
    if (Status checked = HostRegistry(*hosts).add(name, url); !checked) // nothing kept for a host that is refused
        return checked.error();
    QString backend;
    if (m_token->isEnabled()) {
        auto saved = hosttokens::save(name, m_token->text().trimmed().toLatin1());
        if (!saved)
            return saved.error();
        backend = *saved;
    }
    if (Status added = hosts->add(name, url, backend); !added)
        return added.error();
    if (Status written = hosts->save(); !written)
        return written.error();
    m_token->clear();
    return *hosts->find(name);
}

void AddHostDialog::accept()
{
    auto saved = save();
    if (!saved) {
        m_problem->setText(saved.error().message);
        return;
    }
    m_saved = *saved;
    QDialog::accept();
}

} // namespace airlock::ui
