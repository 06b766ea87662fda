// SPDX-License-Identifier: Apache-2.0
#include "SecretsDialog.h"

#include "StatusText.h"
#include "client/DaemonApi.h"
#include "model/DisplayText.h"

#include <QDateTime>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace airlock::ui {

SecretsDialog::SecretsDialog(DaemonClient &client, QWidget *parent)
    : QDialog(parent)
    , m_client(client)
    , m_list(new QTreeWidget)
    , m_backend(new QLabel)
    , m_name(new QLineEdit)
    , m_value(new QLineEdit)
    , m_set(new QPushButton(tr("Set")))
    , m_status(new QLabel)
{
    setWindowTitle(tr("Secrets"));
    resize(640, 480);
    m_list->setHeaderLabels({tr("Name"), tr("Size"), tr("Set")});
    m_list->setRootIsDecorated(false);
    m_list->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_backend->setWordWrap(true);
    m_backend->setTextFormat(Qt::PlainText);
    auto *removeButton = new QPushButton(tr("Remove…"));
    removeButton->setShortcut(QKeySequence::Delete);
    connect(removeButton, &QPushButton::clicked, this, [this] {
        const QTreeWidgetItem *item = m_list->currentItem();
        if (item
            && QMessageBox::question(this, tr("Remove secret"),
                   tr("Remove %1? Sandboxes granted it keep what they were given; new executions and sandboxes that "
                      "ask "
                      "for it are refused.")
                       .arg(item->text(0)))
                == QMessageBox::Yes)
            this->remove(item->data(0, Qt::UserRole).toString());
    });

    // A new value: typed without being shown, or read from a file (a key, a certificate).
    auto *entry = new QGroupBox(tr("Set a secret"));
    auto *form = new QFormLayout(entry);
    m_name->setPlaceholderText(tr("NAME (letters, digits, _ . -)"));
    m_name->setToolTip(tr("How policies name it (a grant's secret); an existing name gets the new value"));
    m_value->setEchoMode(QLineEdit::Password);
    m_value->setPlaceholderText(tr("the value (not shown, never displayed again)"));
    m_value->setToolTip(tr("Typed unseen, sent once to the daemon's store, then cleared here; never shown again"));
    auto *fromFile = new QPushButton(tr("From file…"));
    auto *valueRow = new QHBoxLayout;
    valueRow->addWidget(m_value, 1);
    valueRow->addWidget(fromFile);
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Value"), valueRow);
    form->addRow(QString(), m_set);
    auto updateSet = [this] { m_set->setEnabled(!m_name->text().trimmed().isEmpty() && !m_value->text().isEmpty()); };
    connect(m_name, &QLineEdit::textChanged, this, updateSet);
    connect(m_value, &QLineEdit::textChanged, this, updateSet);
    connect(m_value, &QLineEdit::returnPressed, m_set, &QPushButton::click);
    connect(m_set, &QPushButton::clicked, this, [this] { setValue(m_value->text().toUtf8()); });
    connect(fromFile, &QPushButton::clicked, this, [this] {
        if (m_name->text().trimmed().isEmpty())
            return showStatus(tr("Name the secret first"), true);
        const QString path = QFileDialog::getOpenFileName(this, tr("Read a secret's value from a file"));
        if (path.isEmpty())
            return;
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly))
            return showStatus(tr("Cannot read %1: %2").arg(path, file.errorString()), true);
        if (file.size() > 1024 * 1024) // never a silently shortened secret
            return showStatus(tr("%1 is larger than 1 MiB: not a secret this store keeps").arg(path), true);
        setValue(file.readAll());
    });
    updateSet();
    connect(m_list, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem *item) {
        if (item && m_value->text().isEmpty())
            m_name->setText(item->data(0, Qt::UserRole).toString()); // ready to replace its value
    });

    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_backend);
    layout->addWidget(m_list, 1);
    auto *row = new QHBoxLayout;
    row->addStretch(1);
    row->addWidget(removeButton);
    layout->addLayout(row);
    layout->addWidget(entry);
    layout->addWidget(m_status);
    layout->addWidget(buttons);
    refresh();
}

QString SecretsDialog::statusText() const
{
    return m_status->text();
}

void SecretsDialog::showStatus(const QString &text, bool error)
{
    ui::showStatus(m_status, text, error);
}

void SecretsDialog::refresh()
{
    DaemonApi(m_client).listSecrets().then([self = QPointer<SecretsDialog>(this)](Result<QJsonObject> r) {
        if (!self)
            return;
        if (!r)
            return self->showStatus(r.error().message, true);
        const QJsonObject &o = *r;
        self->m_backend->setText(o.value(QStringLiteral("weaker")).toBool()
                ? tr("Stored in %1: a file only you can read, not your desktop keyring (none answered when the "
                     "daemon started).")
                      .arg(o.value(QStringLiteral("backend")).toString())
                : tr("Stored in %1.").arg(o.value(QStringLiteral("backend")).toString()));
        self->m_backend->setStyleSheet(
            o.value(QStringLiteral("weaker")).toBool() ? QStringLiteral("color: #b07000") : QString());
        self->m_list->clear();
        for (const QJsonValue &v : o.value(QStringLiteral("secrets")).toArray()) {
            const QJsonObject s = v.toObject();
            const QString name = s.value(QStringLiteral("name")).toString();
            auto *item = new QTreeWidgetItem({display::escaped(name, 100),
                QLocale().formattedDataSize(qint64(s.value(QStringLiteral("bytes")).toDouble())),
                display::timestamp(
                    QDateTime::fromString(s.value(QStringLiteral("updated")).toString(), Qt::ISODateWithMs)
                        .toMSecsSinceEpoch())});
            item->setData(0, Qt::UserRole, name);
            self->m_list->addTopLevelItem(item);
        }
        Q_EMIT self->refreshed();
    });
}

void SecretsDialog::setValue(const QByteArray &value)
{
    const QString name = m_name->text().trimmed();
    m_value->clear(); // sent once, never kept in the window
    DaemonApi(m_client)
        .setSecret(name, value)
        .then([self = QPointer<SecretsDialog>(this), name](Result<QJsonObject> r) {
            if (!self)
                return;
            const QString message = r ? tr("Set %1").arg(name) : tr("Not set: %1").arg(r.error().message);
            self->showStatus(message, !r);
            if (r)
                self->m_name->clear();
            self->refresh();
            Q_EMIT self->changeFinished(bool(r), message);
            if (r)
                Q_EMIT self->stored(name);
        });
}

void SecretsDialog::remove(const QString &name)
{
    DaemonApi(m_client).removeSecret(name).then([self = QPointer<SecretsDialog>(this), name](Result<QJsonObject> r) {
        if (!self)
            return;
        const QString message = r ? tr("Removed %1").arg(name) : tr("Not removed: %1").arg(r.error().message);
        self->showStatus(message, !r);
        self->refresh();
        Q_EMIT self->changeFinished(bool(r), message);
    });
}

} // namespace airlock::ui
