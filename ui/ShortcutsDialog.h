// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDialog>

class QAction;

namespace airlock::ui {

// Help → Keyboard shortcuts: every action given that has a key, as its menu names it, then the
// keys that work in one place (the fleet, the output, a request's card).
class ShortcutsDialog final : public QDialog {
    Q_OBJECT
public:
    explicit ShortcutsDialog(const QList<QAction *> &actions, QWidget *parent = nullptr);
};

} // namespace airlock::ui
