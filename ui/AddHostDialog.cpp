// SPDX-License-Identifier: Apache-2.0
#include "AddHostDialog.h"

#include "client/DaemonApi.h"
#include "client/HostTokens.h"
#include "model/DisplayText.h"
#include "remote/TokenStore.h"
#include "util/Version.h"

#include <QElapsedTimer>
#include <QRegularExpression>

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>

namespace airlock::ui {

namespace {
// A fingerprint in groups of four, to be read against another, not taken on trust.
QString inGroups(const QString &hex)
{
    QStringList groups;
    for (int i = 0; i < hex.size(); i += 4)
        groups << hex.mid(i, 4);
    return groups.join(QLatin1Char(' '));
}
} // namespace

AddHostDialog::AddHostDialog(QWidget *parent, std::optional<HostRegistry::Entry> editing)
    : QDialog(parent)
    , m_editing(std::move(editing))
    , m_name(new QLineEdit)
    , m_address(new QLineEdit)
    , m_token(new QLineEdit)
    , m_fingerprint(new QLabel)
    , m_problem(new QLabel)
    , m_test(new QLabel)
    , m_testButton(new QPushButton(tr("&Test connection")))
    , m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel))
{
    setWindowTitle(m_editing ? tr("Edit host %1").arg(display::escaped(m_editing->name, 64)) : tr("Add a host"));
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
    m_buttons->button(QDialogButtonBox::Ok)->setText(m_editing ? tr("Save") : tr("Add host"));
    m_name->setToolTip(tr("How the console and airlockctl --host call it; unique"));
    m_address->setToolTip(
        tr("wss://HOST:PORT#sha256=… as 'airlockd --listen' printed it, or ssh://[user@]host[:port]"));
    m_token->setToolTip(
        tr("The token 'airlockd token create' printed on that host; kept in your keyring, never in hosts.json"));
    m_testButton->setToolTip(tr("Connect with what is typed, without saving, and show who answers"));
    m_test->setTextFormat(Qt::PlainText);
    m_test->setWordWrap(true);
    m_test->setTextInteractionFlags(Qt::TextSelectableByMouse);
    if (m_editing) {
        m_name->setText(m_editing->name);
        m_address->setText(m_editing->url);
        if (!m_editing->token.isEmpty())
            m_token->setPlaceholderText(tr("(saved: leave empty to keep it, while the address stays)"));
    }
    auto *form = new QFormLayout(this);
    form->addRow(tr("&Name"), m_name);
    form->addRow(tr("A&ddress"), m_address);
    form->addRow(tr("Certificate"), m_fingerprint);
    form->addRow(tr("T&oken"), m_token);
    form->addRow(m_problem);
    form->addRow(m_testButton, m_test);
    form->addRow(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &AddHostDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    for (QLineEdit *edit : {m_name, m_address, m_token})
        connect(edit, &QLineEdit::textChanged, this, &AddHostDialog::check);
    connect(m_testButton, &QPushButton::clicked, this, &AddHostDialog::testConnection);
    check();
}

bool AddHostDialog::keepsSavedToken() const
{
    if (!m_editing || m_editing->token.isEmpty() || !m_token->text().trimmed().isEmpty())
        return false;
    auto now = parseHostAddress(m_address->text().trimmed());
    auto before = parseHostAddress(m_editing->url);
    return now && before && now->text == before->text;
}

Result<QByteArray> AddHostDialog::token() const
{
    if (!m_token->isEnabled())
        return QByteArray();
    if (!keepsSavedToken())
        return m_token->text().trimmed().toLatin1();
    auto saved = hosttokens::load(m_editing->name, m_editing->token);
    if (!saved)
        return makeError(
            saved.error().code, tr("the saved token could not be read (%1); type it again").arg(saved.error().message));
    return *saved;
}

bool AddHostDialog::testConnection()
{
    auto parsed = parseHostAddress(m_address->text().trimmed());
    if (!parsed) {
        m_test->setText(parsed.error().message);
        return false;
    }
    m_test->setText(tr("Connecting…"));
    m_testButton->setEnabled(false);
    ConnectOptions options;
    options.host = parsed->text;
    options.autostart = false;
    options.timeoutMs = 5000;
    auto typed = token();
    if (!typed) {
        m_testButton->setEnabled(true);
        m_test->setText(typed.error().message);
        return false;
    }
    options.token = QString::fromLatin1(*typed);
    options.clientName = QStringLiteral("airlock/") + version() + QStringLiteral(" (test)");
    DaemonClient probe;
    QElapsedTimer took;
    took.start();
    Status connected = probe.connectToDaemon(options);
    Result<QJsonObject> info
        = connected ? DaemonApi(probe).daemonInfo().wait(5000) : Result<QJsonObject>(connected.error());
    probe.close();
    m_testButton->setEnabled(true);
    const bool tls = parsed->scheme == HostAddress::Scheme::Wss;
    if (!info) {
        // A certificate that is not the pasted one: both, side by side, in groups to compare.
        static const QRegularExpression pin(QStringLiteral("expected sha256=([0-9a-f]{64}), got ([0-9a-f]{64})"));
        if (const auto m = pin.match(info.error().message); m.hasMatch()) {
            m_test->setText(
                tr("Refused: the daemon presented a certificate that is not the one pasted.\nPresented: SHA-256 "
                   "%1\nPasted:    SHA-256 %2\n"
                   "If that daemon made a new identity, check the new fingerprint on its machine before using it.")
                    .arg(inGroups(m.captured(2)), inGroups(m.captured(1))));
            return false;
        }
        m_test->setText(tr("Not connected: %1").arg(display::escaped(info.error().message, 400)));
        return false;
    }
    const double ms = double(took.nsecsElapsed()) / 1e6;
    QString said
        = tr("Connected in %1 ms: airlockd %2 on %3, %4.")
              .arg(ms, 0, 'f', 0)
              .arg(display::escaped(info->value(QStringLiteral("version")).toString(), 40),
                  display::escaped(info->value(QStringLiteral("host")).toString(), 80),
                  display::count(info->value(QStringLiteral("sandboxes")).toInt(), tr("sandbox"), tr("sandboxes")));
    if (tls)
        said += tr("\nPresented: SHA-256 %1 (the one pasted)").arg(inGroups(parsed->fingerprint));
    if (info->value(QStringLiteral("version")).toString() != version())
        said += tr("\nIt runs another version than this console (%1).").arg(version());
    m_test->setText(said);
    return true;
}

void AddHostDialog::check()
{
    QString problem;
    m_fingerprint->clear();
    const QString address = m_address->text().trimmed();
    auto parsed = address.isEmpty()
        ? Result<HostAddress>(makeError(ErrorCode::InvalidArgument, tr("Paste the address airlockd printed.")))
        : parseHostAddress(address);
    const bool needsToken
        = parsed && (parsed->scheme == HostAddress::Scheme::Wss || parsed->scheme == HostAddress::Scheme::Ws);
    m_token->setEnabled(needsToken);
    if (!parsed) {
        problem = parsed.error().message;
    } else if (parsed->scheme == HostAddress::Scheme::Wss) {
        m_fingerprint->setText(tr("SHA-256 %1\nCompare it with the server's before adding (or Test connection): it is "
                                  "the only proof this is that daemon.")
                                   .arg(inGroups(parsed->fingerprint)));
    } else {
        m_fingerprint->setText(
            tr("none (%1)")
                .arg(parsed->scheme == HostAddress::Scheme::Ssh ? tr("ssh checks the host key") : tr("this machine")));
    }
    if (problem.isEmpty() && needsToken && !keepsSavedToken()
        && !remote::isTokenShaped(m_token->text().trimmed().toLatin1()))
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
    auto kept = token(); // read before an edited entry goes
    if (!kept)
        return kept.error();
    if (m_editing) {
        if (Status removed = hosts->remove(m_editing->name); !removed)
            return removed.error();
    }
    QString fellBack;
    if (Status added = hosttokens::addHost(*hosts, name, url, *kept, &fellBack);
        !added) // nothing written for an edit that is refused
        return added.error();
    m_tokenNotice.clear();
    if (!fellBack.isEmpty()) {
        m_tokenNotice = hosttokens::fellBackNotice(name, fellBack);
        m_tokenNotice[0] = m_tokenNotice.at(0).toUpper();
    }
    if (Status written = hosts->save(); !written)
        return written.error();
    // The old name's token goes only once the new entry is written (a failed save loses nothing).
    if (m_editing && !m_editing->token.isEmpty() && m_editing->name != name)
        hosttokens::remove(m_editing->name, m_editing->token);
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
