// SPDX-License-Identifier: Apache-2.0
#include "LogView.h"

#include "util/Paths.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QFileSystemWatcher>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QVBoxLayout>

namespace airlock::ui {

namespace {
constexpr qint64 kTail = 512 * 1024;
}

LogView::LogView(QWidget *parent, QString path)
    : QDialog(parent)
    , m_path(path.isEmpty() ? paths::stateDir() + QStringLiteral("/airlock.log") : std::move(path))
    , m_text(new QPlainTextEdit)
    , m_where(new QLabel)
    , m_watcher(new QFileSystemWatcher(this))
{
    setWindowTitle(tr("Application log"));
    resize(900, 500);
    m_text->setReadOnly(true);
    m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_where->setTextFormat(Qt::PlainText);
    m_where->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(
        buttons->addButton(tr("Reload"), QDialogButtonBox::ActionRole), &QPushButton::clicked, this, &LogView::reload);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_where);
    layout->addWidget(m_text, 1);
    layout->addWidget(buttons);
    connect(m_watcher, &QFileSystemWatcher::fileChanged, this, &LogView::reload);
    reload();
}

QString LogView::text() const
{
    return m_text->toPlainText();
}

void LogView::reload()
{
    QFile file(m_path);
    if (!file.open(QIODevice::ReadOnly)) {
        m_where->setText(tr("%1: %2").arg(m_path, file.errorString()));
        m_text->clear();
        return;
    }
    if (!m_watcher->files().contains(m_path))
        m_watcher->addPath(m_path);
    const qint64 size = file.size();
    file.seek(std::max<qint64>(0, size - kTail));
    QByteArray tail = file.readAll();
    if (size > kTail) // from the first whole line
        tail = tail.mid(tail.indexOf('\n') + 1);
    m_where->setText(size > kTail ? tr("%1 (the last %2 KiB)").arg(m_path).arg(kTail / 1024) : m_path);
    const bool atEnd = m_text->verticalScrollBar()->value() == m_text->verticalScrollBar()->maximum();
    m_text->setPlainText(QString::fromUtf8(tail));
    if (atEnd)
        m_text->verticalScrollBar()->setValue(m_text->verticalScrollBar()->maximum());
}

} // namespace airlock::ui
