// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDialog>

class QFileSystemWatcher;
class QLabel;
class QPlainTextEdit;

namespace airlock::ui {

// The console's own log (<state dir>/airlock.log), its last 512 KiB, followed as it grows; for
// when something in the window went wrong and the status bar has moved on.
class LogView final : public QDialog {
    Q_OBJECT
public:
    explicit LogView(QWidget *parent = nullptr, QString path = {});
    QString path() const { return m_path; }
    QString text() const;
    void reload();

private:
    QString m_path;
    QPlainTextEdit *m_text;
    QLabel *m_where;
    QFileSystemWatcher *m_watcher;
};

} // namespace airlock::ui
