// SPDX-License-Identifier: Apache-2.0
#include "ApprovalsDock.h"
#include "StatusText.h"

#include "Theme.h"
#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "model/EventKinds.h"

#include <QApplication>
#include <QDateTime>
#include <QFocusEvent>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QPainter>
#include <QPointer>
#include <QPushButton>
#include <QScrollArea>
#include <QTimer>
#include <QVBoxLayout>

namespace airlock::ui {

namespace {

// The dock while nothing waits: its title down a slim bar along the edge.
class SlimBar final : public QWidget {
public:
    explicit SlimBar(QWidget *parent = nullptr)
        : QWidget(parent)
    {
        setObjectName(QStringLiteral("approvalsSlimBar"));
        setToolTip(ApprovalsDock::tr("Requests that wait for your decision appear here"));
    }
    QString text() const { return ApprovalsDock::tr("Approvals · none waiting"); }
    QSize sizeHint() const override
    {
        return {fontMetrics().height() + 10, fontMetrics().horizontalAdvance(text()) + 24};
    }
    QSize minimumSizeHint() const override { return sizeHint(); }

protected:
    void paintEvent(QPaintEvent *) override
    {
        QPainter painter(this);
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.translate(0, height());
        painter.rotate(-90);
        painter.drawText(QRect(12, 0, height() - 24, width()), Qt::AlignRight | Qt::AlignVCenter, text());
    }
};

constexpr int kFoldAt = 120; // characters of an argument shown before it is folded

// Long unbroken words (a 300-character argument) may wrap: a zero-width space every 40 characters,
// for display only.
QString wrappable(const QString &text)
{
    QString out;
    int run = 0;
    for (const QChar c : text) {
        out += c;
        run = c.isSpace() ? 0 : run + 1;
        if (run == 40) {
            out += QChar(0x200b);
            run = 0;
        }
    }
    return out;
}

QString joined(const QJsonValue &v)
{
    QStringList parts;
    for (const QJsonValue &p : v.toArray())
        parts.append(p.toString());
    return v.isString() ? v.toString() : parts.isEmpty() ? QObject::tr("none") : parts.join(QStringLiteral(", "));
}
} // namespace

ApprovalCard::ApprovalCard(const QJsonObject &request, QWidget *parent)
    : QFrame(parent)
    , m_request(request)
    , m_what(new QLabel)
    , m_countdown(new QLabel)
    , m_allow(new QPushButton(tr("Allow once")))
    , m_always(new QPushButton(tr("Always allow")))
    , m_deny(new QPushButton(tr("Deny")))
    , m_reason(new QLineEdit)
{
    setFrameShape(QFrame::StyledPanel);
    const QString kind = request.value(QStringLiteral("kind")).toString();
    auto *layout = new QVBoxLayout(this);
    // On another machine: its host first, so that a request is never taken for a local one.
    const QString host = request.value(QStringLiteral("host")).toString();
    auto *head = new QLabel((host.isEmpty() ? QString() : tr("<b>%1</b>: ").arg(display::escaped(host).toHtmlEscaped()))
        + tr("%1 in <b>%2</b> (run %3)")
              .arg(display::escaped(request.value(QStringLiteral("requester")).toString()).toHtmlEscaped(),
                  display::escaped(request.value(QStringLiteral("sandboxName")).toString()).toHtmlEscaped(),
                  display::escaped(request.value(QStringLiteral("run")).toString()).toHtmlEscaped()));
    head->setWordWrap(true); // a long run or host name wraps rather than widening the dock
    layout->addWidget(head);
    if (const QString risk = request.value(QStringLiteral("risk")).toString(); !risk.isEmpty()) {
        m_risk = new QLabel(QChar(0x26a0) + QLatin1Char(' ') + display::escaped(risk));
        m_risk->setTextFormat(Qt::PlainText);
        m_risk->setWordWrap(true);
        QFont bold = m_risk->font();
        bold.setBold(true);
        m_risk->setFont(bold);
        colourRisk();
        layout->addWidget(m_risk);
    }

    // What would run, escaped in full; folded only behind a button that must be pressed.
    if (kind == QLatin1String("network")) {
        m_full = tr("connect to %1").arg(display::escaped(request.value(QStringLiteral("destination")).toString()));
    } else if (kind == QLatin1String("tool")) {
        m_full = tr("tool %1 %2")
                     .arg(display::escaped(request.value(QStringLiteral("tool")).toString()),
                         display::escaped(
                             QString::fromUtf8(QJsonDocument(request.value(QStringLiteral("arguments")).toObject())
                                                   .toJson(QJsonDocument::Compact))));
    } else {
        m_full = QStringLiteral("$ ") + display::commandLine(request.value(QStringLiteral("argv")).toArray());
        if (!request.value(QStringLiteral("cwd")).toString().isEmpty())
            m_full += tr("\nin %1").arg(display::escaped(request.value(QStringLiteral("cwd")).toString()));
        if (!request.value(QStringLiteral("env")).toArray().isEmpty())
            m_full += tr("\nwith %1").arg(display::commandLine(request.value(QStringLiteral("env")).toArray()));
    }
    bool unusual = false;
    for (const QJsonValue &a : request.value(QStringLiteral("argv")).toArray())
        unusual = unusual || a.toString().size() > kFoldAt || display::escaped(a.toString()) != a.toString();
    m_what->setTextFormat(Qt::PlainText);
    m_what->setWordWrap(true);
    m_what->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);
    m_what->setFont(mono);
    layout->addWidget(m_what);
    if (unusual) {
        m_folded = m_full.left(kFoldAt) + QChar(0x2026);
        m_what->setText(wrappable(m_folded));
        m_expand = new QPushButton(tr("Show all of it (%1 characters) before deciding").arg(m_full.size()));
        layout->addWidget(m_expand);
        connect(m_expand, &QPushButton::clicked, this, [this] {
            m_what->setText(wrappable(m_full));
            m_expand->hide();
            m_allow->setEnabled(true);
            m_always->setEnabled(true);
        });
    } else {
        m_what->setText(wrappable(m_full));
    }

    // Each command of it, with what the rules said: the verdict of every part, not only the one
    // that made it ask.
    QStringList verdicts;
    const QJsonArray parts = request.value(QStringLiteral("parts")).toArray();
    for (const QJsonValue &v : parts) {
        const QJsonObject part = v.toObject();
        const QString rule = part.value(QStringLiteral("rule")).toString();
        verdicts.append(QStringLiteral("%1  %2   (%3)")
                            .arg(part.value(QStringLiteral("decision")).toString().leftJustified(5),
                                display::commandLine(part.value(QStringLiteral("argv")).toArray(), 160),
                                rule == QLatin1String("default") ? tr("no rule: the default")
                                    : rule == QLatin1String("covered")
                                    ? tr("covered by the command that started it")
                                    : tr("rule '%1', %2")
                                          .arg(display::escaped(rule, 80),
                                              display::escaped(part.value(QStringLiteral("layer")).toString()))));
    }
    if (parts.size() > 1 || (parts.size() == 1 && !request.value(QStringLiteral("exec")).isDouble())) {
        auto *partsLabel = new QLabel(verdicts.join(QLatin1Char('\n')));
        partsLabel->setTextFormat(Qt::PlainText);
        partsLabel->setWordWrap(true);
        partsLabel->setObjectName(QStringLiteral("parts"));
        layout->addWidget(partsLabel);
    }
    // The files it runs as code, bound by content: what they say now, and a change asks again.
    QStringList files;
    for (const QJsonValue &v : request.value(QStringLiteral("files")).toArray()) {
        const QJsonObject f = v.toObject();
        const QString path = display::escaped(f.value(QStringLiteral("path")).toString(), 120);
        if (f.contains(QStringLiteral("problem"))) {
            files.append(tr("%1: not bound (%2), it runs as it is then")
                             .arg(path, display::escaped(f.value(QStringLiteral("problem")).toString(), 120)));
            continue;
        }
        files.append(tr("%1  (sha256 %2…, %n bytes)", nullptr, f.value(QStringLiteral("size")).toInt())
                         .arg(path, f.value(QStringLiteral("sha256")).toString().left(12)));
        for (const QJsonValue &line : f.value(QStringLiteral("head")).toArray())
            files.append(QStringLiteral("  \u2502 ") + display::escaped(line.toString(), 100));
    }
    if (!files.isEmpty()) {
        auto *filesLabel
            = new QLabel(tr("Runs as code (a change before it runs asks again):\n") + files.join(QLatin1Char('\n')));
        filesLabel->setTextFormat(Qt::PlainText);
        filesLabel->setWordWrap(true);
        filesLabel->setFont(mono);
        filesLabel->setObjectName(QStringLiteral("files"));
        layout->addWidget(filesLabel);
    }
    QStringList chain;
    for (const QJsonValue &v : request.value(QStringLiteral("chain")).toArray())
        if (!v.toString().isEmpty())
            chain.append(display::escaped(v.toString()));
    if (!chain.isEmpty()) {
        auto *chainLabel = new QLabel(
            (kind == QLatin1String("network") ? tr("Running in the sandbox when it connected:\n") : tr("Started by:\n"))
            + chain.join(QLatin1Char('\n')));
        chainLabel->setTextFormat(Qt::PlainText);
        chainLabel->setWordWrap(true);
        chainLabel->setObjectName(QStringLiteral("chain"));
        layout->addWidget(chainLabel);
    }

    const QJsonObject caps = request.value(QStringLiteral("capabilities")).toObject();
    auto *why = new QLabel(tr("Asks because: %1\nIt will be able to reach: %2; credentials: %3; write: %4; tools: %5")
                               .arg(display::escaped(request.value(QStringLiteral("reason")).toString()),
                                   display::escaped(joined(caps.value(QStringLiteral("network")))),
                                   display::escaped(joined(caps.value(QStringLiteral("credentials")))),
                                   display::escaped(joined(caps.value(QStringLiteral("writable")))),
                                   display::escaped(joined(caps.value(QStringLiteral("tools"))))));
    why->setText(wrappable(why->text()));
    why->setTextFormat(Qt::PlainText);
    why->setWordWrap(true);
    layout->addWidget(why);

    m_reason->setPlaceholderText(tr("Reason for a denial (optional)"));
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_allow);
    buttons->addWidget(m_always);
    buttons->addWidget(m_deny);
    buttons->addStretch(1);
    layout->addLayout(buttons);
    auto *reasonRow = new QHBoxLayout;
    reasonRow->addWidget(m_reason, 1);
    reasonRow->addWidget(m_countdown);
    layout->addLayout(reasonRow);
    m_failure = new QLabel;
    m_failure->setObjectName(QStringLiteral("decisionFailure"));
    m_failure->setTextFormat(Qt::PlainText);
    m_failure->setWordWrap(true);
    m_failure->setStyleSheet(statusStyle(true));
    m_failure->hide();
    layout->addWidget(m_failure);
    m_allow->setEnabled(!unusual);
    m_always->setEnabled(!unusual);
    m_always->setToolTip(kind == QLatin1String("network") ? tr("Adds this host to the sandbox's allow list")
            : kind == QLatin1String("tool") ? tr("Makes this tool 'allow' for the sandbox, its constraints kept")
                                            : tr("Adds a rule allowing exactly this command"));
    m_allow->setText(tr("Allow once (1)"));
    m_always->setText(tr("Always allow (2)"));
    m_deny->setText(tr("Deny (3)"));
    for (QPushButton *b : {m_allow, m_always, m_deny}) {
        b->setFocusPolicy(Qt::NoFocus); // never reached by Tab, never pressed by Space or Enter
        b->setAutoDefault(false);
        b->setDefault(false);
    }
    if (m_expand)
        m_expand->setFocusPolicy(Qt::NoFocus);
    setFocusPolicy(Qt::ClickFocus);
    m_reason->setFocusPolicy(Qt::ClickFocus); // reached from the focused card with Tab
    m_reason->installEventFilter(this);
    connect(m_allow, &QPushButton::clicked, this, [this] { decide(QStringLiteral("allow"), false); });
    connect(m_always, &QPushButton::clicked, this, [this] { decide(QStringLiteral("allow"), true); });
    connect(m_deny, &QPushButton::clicked, this, [this] { decide(QStringLiteral("deny"), false); });
    m_steady.start();
    tick();
}

QString ApprovalCard::riskText() const
{
    return m_risk ? m_risk->text() : QString();
}

QString ApprovalCard::shownText() const
{
    return m_what->text();
}

bool ApprovalCard::settled() const
{
    return m_steady.isValid() && m_steady.elapsed() >= kGraceMs;
}

void ApprovalCard::unsettle()
{
    m_steady.restart();
}

void ApprovalCard::decide(const QString &decision, bool always)
{
    if (!settled())
        return; // it has only just come under the pointer or the keys
    if (decision == QLatin1String("allow") && !(always ? m_always : m_allow)->isEnabled())
        return; // what is folded away has not been seen
    Q_EMIT decided(decision, always, decision == QLatin1String("deny") ? m_reason->text() : QString());
}

void ApprovalCard::keyPressEvent(QKeyEvent *event)
{
    // A held key repeats into the next card, and what the reason field does not take (Ctrl+1)
    // comes up here: only a fresh press of the bare key, on the card itself, decides.
    if (event->isAutoRepeat() || (event->modifiers() & ~Qt::KeypadModifier) != Qt::NoModifier || m_reason->hasFocus()) {
        event->accept();
        return;
    }
    switch (event->key()) {
    case Qt::Key_1:
        return decide(QStringLiteral("allow"), false);
    case Qt::Key_2:
        return decide(QStringLiteral("allow"), true);
    case Qt::Key_3:
    case Qt::Key_Escape:
        return decide(QStringLiteral("deny"), false);
    case Qt::Key_Up:
    case Qt::Key_Down:
        Q_EMIT stepFocus(event->key() == Qt::Key_Up ? -1 : 1);
        return;
    default:
        event->accept(); // Space, Enter and the rest do nothing here, and go nowhere else
    }
}

void ApprovalCard::colourRisk()
{
    if (!m_risk)
        return;
    QPalette warning = m_risk->palette();
    warning.setColor(
        QPalette::WindowText, isDark(QApplication::palette()) ? QColor(0xff, 0xa0, 0x60) : QColor(0xa3, 0x3a, 0x00));
    m_risk->setPalette(warning);
}

bool ApprovalCard::event(QEvent *event)
{
    if (event->type() == QEvent::ApplicationPaletteChange || event->type() == QEvent::PaletteChange)
        colourRisk(); // light or dark now

    // Tab from the card goes to its reason, never on to another widget (QWidget::event would).
    if (event->type() == QEvent::KeyPress) {
        const int key = static_cast<QKeyEvent *>(event)->key();
        if (key == Qt::Key_Tab || key == Qt::Key_Backtab) {
            m_reason->setFocus(Qt::TabFocusReason);
            return true;
        }
    }
    return QFrame::event(event);
}

bool ApprovalCard::eventFilter(QObject *watched, QEvent *event)
{
    // In the reason field, digits are text; Esc and Tab go back to the card, which decides.
    if (watched == m_reason && event->type() == QEvent::KeyPress) {
        const int key = static_cast<QKeyEvent *>(event)->key();
        if (key == Qt::Key_Escape || key == Qt::Key_Tab || key == Qt::Key_Backtab) {
            m_fromReason = true; // the same card: no new grace period
            setFocus(Qt::OtherFocusReason);
            m_fromReason = false;
            return true;
        }
    }
    return QFrame::eventFilter(watched, event);
}

void ApprovalCard::moveEvent(QMoveEvent *event)
{
    QFrame::moveEvent(event);
    unsettle();
}

void ApprovalCard::showEvent(QShowEvent *event)
{
    QFrame::showEvent(event);
    unsettle();
}

void ApprovalCard::focusInEvent(QFocusEvent *event)
{
    QFrame::focusInEvent(event);
    if (event->reason() != Qt::MouseFocusReason && !m_fromReason)
        unsettle(); // a card that comes under the keys waits a moment too
    setFrameShadow(QFrame::Plain);
    setLineWidth(2);
    QPalette p = palette();
    p.setColor(QPalette::WindowText, p.color(QPalette::Highlight));
    setPalette(p);
}

void ApprovalCard::focusOutEvent(QFocusEvent *event)
{
    QFrame::focusOutEvent(event);
    setLineWidth(1);
    setPalette(QPalette());
}

QString ApprovalCard::id() const
{
    return keyOf(m_request);
}

QString ApprovalCard::keyOf(const QJsonObject &request)
{
    // By the host's place in the dock, not its name: two hosts may carry the same one.
    return QString::number(request.value(QStringLiteral("hostIndex")).toInt()) + QLatin1Char('/')
        + request.value(QStringLiteral("id")).toString();
}

void ApprovalCard::showFailure(const QString &why)
{
    m_failure->setText(tr("Your decision did not reach the daemon: %1").arg(display::escaped(why, 300)));
    m_failure->show();
}

QString ApprovalCard::failureText() const
{
    return m_failure->isHidden() ? QString() : m_failure->text();
}

void ApprovalCard::tick()
{
    const qint64 left
        = (qint64(m_request.value(QStringLiteral("expiresMs")).toDouble()) - QDateTime::currentMSecsSinceEpoch())
        / 1000;
    m_countdown->setText(tr("denied in %1 s").arg(std::max<qint64>(0, left)));
}

ApprovalsDock::ApprovalsDock(DaemonClient &client, QWidget *parent)
    : QDockWidget(tr("Approvals"), parent)
    , m_list(new QVBoxLayout)
    , m_empty(new QLabel(tr("Nothing is waiting for you.")))
{
    m_hosts.append({QString(), &client, {}, false});
    setObjectName(QStringLiteral("approvalsDock"));
    setMinimumWidth(kWidth);
    auto *inner = new QWidget;
    auto *outer = new QVBoxLayout(inner);
    auto *keys = new QLabel(
        tr("Click a request or press Ctrl+Shift+A, then: 1 allow once, 2 always, 3 or Esc deny, Tab for a reason"));
    keys->setWordWrap(true);
    keys->setForegroundRole(QPalette::PlaceholderText);
    outer->addWidget(keys);
    outer->addWidget(m_empty);
    outer->addLayout(m_list);
    outer->addStretch(1);
    auto *scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff); // cards wrap to the dock's width
    scroll->setWidget(inner);
    m_content = scroll;
    m_slimBar = new SlimBar;
    m_slimBar->hide();
    auto *holder = new QWidget;
    auto *holderLayout = new QVBoxLayout(holder);
    holderLayout->setContentsMargins(0, 0, 0, 0);
    holderLayout->addWidget(m_slimBar);
    holderLayout->addWidget(scroll);
    setWidget(holder);
    auto *timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, [this] {
        for (ApprovalCard *card : cards())
            card->tick();
    });
    timer->start(1000);
    refresh();
}

QList<ApprovalCard *> ApprovalsDock::cards() const
{
    QList<ApprovalCard *> out;
    for (int i = 0; i < m_list->count(); ++i)
        if (auto *card = qobject_cast<ApprovalCard *>(m_list->itemAt(i)->widget()))
            out.append(card);
    return out;
}

void ApprovalsDock::focusNewest()
{
    QDockWidget::show(); // the dock, if it was closed
    raise();
    if (const QList<ApprovalCard *> all = cards(); !all.isEmpty())
        all.first()->setFocus(Qt::ShortcutFocusReason);
}

void ApprovalsDock::onEvent(const Event &event)
{
    if (event.kind.startsWith(event::family::Approval))
        refreshHost(0); // this computer's (other hosts' events come through addHost)
}

void ApprovalsDock::addHost(const QString &name, DaemonClient &client)
{
    m_hosts.append({name, &client, {}, false});
    connect(&client, &DaemonClient::eventReceived, this, [this, host = int(m_hosts.size() - 1)](const Event &event) {
        if (event.kind.startsWith(event::family::Approval))
            refreshHost(host);
    });
    refreshHost(int(m_hosts.size() - 1));
}

void ApprovalsDock::retireHost(int host)
{
    if (host <= 0 || host >= m_hosts.size())
        return;
    m_hosts[host].client->disconnect(this);
    m_hosts[host].retired = true;
    show(host, {});
}

void ApprovalsDock::refresh()
{
    for (int host = 0; host < m_hosts.size(); ++host)
        refreshHost(host);
}

void ApprovalsDock::refreshHost(int host)
{
    DaemonClient *client = m_hosts.at(host).client;
    if (m_hosts.at(host).retired)
        return;
    if (!client->isConnected()) {
        show(host, {}); // what waits there cannot be decided from here now
        return;
    }
    DaemonApi(*client).pendingApprovals().then([self = QPointer<ApprovalsDock>(this), host](Result<QJsonArray> r) {
        if (self && r && !self->m_hosts.at(host).retired)
            self->show(host, *r);
    });
}

void ApprovalsDock::show(int host, const QJsonArray &requests)
{
    QJsonArray labelled;
    for (const QJsonValue &v : requests) {
        QJsonObject request = v.toObject();
        request.insert(QStringLiteral("hostIndex"), host);
        if (!m_hosts.at(host).name.isEmpty())
            request.insert(QStringLiteral("host"), m_hosts.at(host).name);
        labelled.append(request);
    }
    m_hosts[host].pending = labelled;
    QJsonArray all;
    for (const Host &h : std::as_const(m_hosts))
        for (const QJsonValue &v : h.pending)
            all.append(v);
    show(all);
}

void ApprovalsDock::show(const QJsonArray &requests)
{
    const auto key = [](const QJsonObject &r) -> QString { return ApprovalCard::keyOf(r); };
    QSet<QString> waiting;
    for (const QJsonValue &v : requests)
        waiting.insert(key(v.toObject()));
    bool focusWent = false;
    for (ApprovalCard *card : cards()) {
        if (!waiting.contains(card->id())) {
            focusWent = focusWent || card->hasFocus() || card->isAncestorOf(QApplication::focusWidget());
            delete card;
        }
    }
    QSet<QString> shown;
    for (ApprovalCard *card : cards())
        shown.insert(card->id());
    for (const QJsonValue &v : requests) { // oldest first from the daemon: each new one goes on top
        const QJsonObject request = v.toObject();
        if (shown.contains(key(request)))
            continue;
        auto *card = new ApprovalCard(request);
        connect(card, &ApprovalCard::decided, this,
            [this, request](const QString &decision, bool always, const QString &reason) {
                decide(request, decision, always, reason);
            });
        connect(card, &ApprovalCard::stepFocus, this, [this, card](int delta) {
            const QList<ApprovalCard *> all = cards();
            const qsizetype next = all.indexOf(card) + delta;
            if (next >= 0 && next < all.size())
                all.at(next)->setFocus(Qt::OtherFocusReason);
        });
        m_list->insertWidget(0, card);
    }
    // Decided from the keys: the next request takes the focus (and its grace period).
    if (focusWent && !cards().isEmpty())
        cards().first()->setFocus(Qt::OtherFocusReason);
    m_empty->setVisible(requests.isEmpty());
    setSlim(requests.isEmpty());
    Q_EMIT pendingCountChanged(int(requests.size()));
}

void ApprovalsDock::setSlim(bool slim)
{
    // Nothing waiting: a slim bar along the edge that says so, and the console gets the room.
    if (slim == isSlim())
        return;
    m_content->setVisible(!slim);
    m_slimBar->setVisible(slim);
    setTitleBarWidget(slim ? new QWidget : nullptr); // the bar says it all; the usual title comes back with requests
    setMinimumWidth(slim ? 0 : kWidth);
    if (auto *window = qobject_cast<QMainWindow *>(parentWidget()); window && !isFloating())
        window->resizeDocks({this}, {slim ? m_slimBar->sizeHint().width() : kWidth}, Qt::Horizontal);
}

bool ApprovalsDock::isSlim() const
{
    return m_slimBar->isVisibleTo(const_cast<ApprovalsDock *>(this));
}

void ApprovalsDock::decide(const QJsonObject &request, const QString &decision, bool always, const QString &reason)
{
    const int host = request.value(QStringLiteral("hostIndex")).toInt(-1);
    if (host < 0 || host >= m_hosts.size())
        return;
    DaemonApi(*m_hosts.at(host).client)
        .decideApproval(request.value(QStringLiteral("id")).toString(),
            request.value(QStringLiteral("nonce")).toString(), decision == QLatin1String("allow"), always, reason)
        .then([self = QPointer<ApprovalsDock>(this), host, key = ApprovalCard::keyOf(request)](Result<QJsonObject> r) {
            if (!self)
                return;
            // Not taken: said on its card (which stays while the request waits).
            if (!r)
                for (ApprovalCard *card : self->cards())
                    if (card->id() == key)
                        card->showFailure(r.error().message);
            self->refreshHost(host); // decided, or already gone: the list says which
        });
}

} // namespace airlock::ui
