// SPDX-License-Identifier: Apache-2.0
// The policy editor's layers: what it shows as in force (each setting with the layer it comes from),
// a layer put into its widgets, and the layer its widgets make of a person's edits.
#include "PolicyEditor.h"

#include "SecretsDialog.h"
#include "StatusText.h"
#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "policy/Policy.h"
#include "policy/PolicyDiff.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QSaveFile>
#include <QScopedValueRollback>
#include <QTabWidget>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace airlock::ui {

namespace {
QStringList strings(const QJsonValue &v)
{
    QStringList out;
    for (const QJsonValue &s : v.toArray())
        out.append(s.toString());
    return out;
}
} // namespace

namespace {
// One entry of a section as the editor's cells: a command rule (decision, words, exact), a
// credential grant (secret, as, variable or path), a tool permission (decision, constraints).
QStringList ruleCells(const QJsonObject &r)
{
    const QJsonValue command = r.value(QStringLiteral("command"));
    return {r.value(QStringLiteral("decision")).toString(),
        command.isArray() ? strings(command).join(QLatin1Char(' ')) : command.toString(),
        r.value(QStringLiteral("exact")).toBool() ? QStringLiteral("yes") : QString()};
}

QStringList grantCells(const QJsonObject &g)
{
    const bool file = g.contains(QStringLiteral("file"));
    return {g.value(QStringLiteral("secret")).toString(), file ? QStringLiteral("file") : QStringLiteral("env"),
        g.value(file ? QStringLiteral("file") : QStringLiteral("env")).toString()};
}

QStringList toolCells(const QString &name, const QJsonObject &t, const QString &decision, const QString &about)
{
    QStringList constraints;
    const QJsonObject c = t.value(QStringLiteral("constraints")).toObject();
    for (auto k = c.begin(); k != c.end(); ++k)
        constraints.append(k.key() + QLatin1Char('=') + k.value().toString());
    return {name, decision, constraints.join(QStringLiteral("; ")), about};
}

void setChoice(QComboBox *box, const QJsonValue &value)
{
    box->setCurrentIndex(std::max(0, box->findData(value.toString())));
}

void setOrRemove(QJsonObject &object, const QString &key, const QJsonValue &value, bool keep)
{
    if (keep)
        object.insert(key, value);
    else
        object.remove(key);
}
} // namespace

void PolicyEditor::showEffective(const QJsonObject &effective)
{
    m_inForce = effective;
    const QJsonObject document = effective.value(QStringLiteral("policy")).toObject();
    const QJsonObject sources = effective.value(QStringLiteral("sources")).toObject();
    const QJsonObject network = document.value(QStringLiteral("network")).toObject();
    if (!m_sandbox.isEmpty()) {
        const QString preset = effective.value(QStringLiteral("preset")).toString();
        const QString about = m_presets.value(preset).toString();
        m_mode->setText(tr("Preset %1%2\nNetwork mode: %3 (fixed while the sandbox runs). Greyed values are in force "
                           "from the layers below; "
                           "what you edit is this sandbox's own layer, on top of them.")
                            .arg(preset.isEmpty() ? tr("none") : display::escaped(preset, 100),
                                about.isEmpty() ? QString() : QStringLiteral(": ") + display::escaped(about, 400),
                                display::escaped(network.value(QStringLiteral("mode")).toString(), 40)));
    }
    // Each value with the layer that set it: the nearest pointer the resolver recorded.
    m_effective->clear();
    m_fixed->clear();
    static const QStringList editedHere{QStringLiteral("/network/allow/"), QStringLiteral("/network/deny/"),
        QStringLiteral("/network/unknown"), QStringLiteral("/commands/default"), QStringLiteral("/commands/rules/"),
        QStringLiteral("/credentials/grants/"), QStringLiteral("/tools/")};
    std::function<void(const QJsonValue &, const QString &)> add = [&](const QJsonValue &v, const QString &pointer) {
        if (v.isObject() && !v.toObject().isEmpty()) {
            const QJsonObject o = v.toObject();
            for (auto it = o.begin(); it != o.end(); ++it)
                add(it.value(), pointer + QLatin1Char('/') + it.key());
            return;
        }
        if (v.isArray() && !v.toArray().isEmpty()) {
            const QJsonArray a = v.toArray();
            for (qsizetype i = 0; i < a.size(); ++i)
                add(a.at(i), pointer + QLatin1Char('/') + QString::number(i));
            return;
        }
        QString layer;
        for (QString p = pointer; layer.isEmpty() && !p.isEmpty(); p = p.left(p.lastIndexOf(QLatin1Char('/'))))
            layer = sources.value(p).toString();
        const QString value = v.isString()
            ? display::escaped(v.toString(), 200)
            : QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact)).mid(1).chopped(1);
        const QStringList cells{display::escaped(pointer, 300), value,
            display::escaped(layerLabel(layer.isEmpty() ? QStringLiteral("builtin") : layer), 100)};
        m_effective->addTopLevelItem(new QTreeWidgetItem(cells));
        // What no section edits (mounts, limits, the mode, the exec check) is listed on its own tab.
        const bool edited = std::any_of(editedHere.cbegin(), editedHere.cend(),
            [&](const QString &p) { return pointer == p || (p.endsWith(QLatin1Char('/')) && pointer.startsWith(p)); });
        if (!edited && pointer != QLatin1String("/version"))
            m_fixed->addTopLevelItem(new QTreeWidgetItem(cells));
    };
    add(document, QString());
    for (QTreeWidget *view : {m_effective, m_fixed})
        for (int c = 0; c < 3; ++c)
            view->resizeColumnToContents(c);
    showInherited();
}

void PolicyEditor::partLoaded()
{
    // Loaded once both the layer being edited and what is in force are here.
    if (m_loaded || --m_pendingParts > 0)
        return;
    m_loaded = true;
    updateDiff();
    Q_EMIT loaded();
}

void PolicyEditor::showInherited()
{
    // What the layers below this one put in force, in the section that edits it, with its layer.
    // A daemon that does not say what is below (a token limited to some sandboxes may not read the
    // defaults): what is in force, less what this layer set.
    const QString own = m_sandbox.isEmpty() ? QStringLiteral("user") : QStringLiteral("sandbox");
    const QJsonObject below
        = m_inForce.contains(QStringLiteral("below")) ? m_inForce.value(QStringLiteral("below")).toObject() : m_inForce;
    const QJsonObject document = below.value(QStringLiteral("policy")).toObject();
    const QJsonObject sources = below.value(QStringLiteral("sources")).toObject();
    const auto layerOf
        = [&](const QString &pointer) { return sources.value(pointer).toString(QStringLiteral("builtin")); };
    const QJsonObject network = document.value(QStringLiteral("network")).toObject();
    for (const auto &[key, list] : {std::pair{"allow", m_allow}, std::pair{"deny", m_deny}}) {
        QList<InheritedRow> rows;
        const QJsonArray hosts = network.value(QLatin1String(key)).toArray();
        for (qsizetype i = 0; i < hosts.size(); ++i)
            if (const QString layer = layerOf(QStringLiteral("/network/%1/%2").arg(QLatin1String(key)).arg(i));
                layer != own)
                rows.append({{hosts.at(i).toString()}, layer, hosts.at(i)});
        list->setInherited(rows);
    }
    const QJsonObject commands = document.value(QStringLiteral("commands")).toObject();
    QList<InheritedRow> rules;
    const QJsonArray ruleArray = commands.value(QStringLiteral("rules")).toArray();
    for (qsizetype i = 0; i < ruleArray.size(); ++i)
        if (const QString layer = layerOf(QStringLiteral("/commands/rules/%1").arg(i)); layer != own)
            rules.append({ruleCells(ruleArray.at(i).toObject()), layer, ruleArray.at(i)});
    m_rules->setInherited(rules);
    QList<InheritedRow> grants;
    const QJsonArray grantArray
        = document.value(QStringLiteral("credentials")).toObject().value(QStringLiteral("grants")).toArray();
    for (qsizetype i = 0; i < grantArray.size(); ++i)
        if (const QString layer = layerOf(QStringLiteral("/credentials/grants/%1").arg(i)); layer != own)
            grants.append({grantCells(grantArray.at(i).toObject()), layer, grantArray.at(i)});
    m_grants->setInherited(grants);
    // Tools: every declared one, once; named by a layer below, or by none (then denied).
    const QJsonObject tools = document.value(QStringLiteral("tools")).toObject();
    QMap<QString, QString> described;
    for (const QJsonValue &v : m_declaredTools)
        described.insert(v.toObject().value(QStringLiteral("name")).toString(),
            v.toObject().value(QStringLiteral("description")).toString());
    QStringList names = described.keys();
    for (auto it = tools.begin(); it != tools.end(); ++it)
        if (!names.contains(it.key()))
            names.append(it.key());
    QList<InheritedRow> toolRows;
    for (const QString &name : names) {
        const bool named = tools.contains(name);
        if (named && layerOf(QStringLiteral("/tools/") + name) == own)
            continue;
        const QJsonObject t = tools.value(name).toObject();
        const QString about = described.contains(name) ? display::escaped(described.value(name), 200)
                                                       : tr("(not declared on this host)");
        toolRows.append(
            {toolCells(name, t, named ? t.value(QStringLiteral("decision")).toString() : QStringLiteral("deny"), about),
                named ? layerOf(QStringLiteral("/tools/") + name) : tr("no layer names it"),
                named ? tools.value(name) : QJsonValue()});
    }
    m_tools->setInherited(toolRows);
    describeOwnTools();
    // A choice left to the layers below says what they decided, and which one.
    const auto inherit = [&](QComboBox *box, const QString &pointer, const QJsonValue &value) {
        box->setItemText(0,
            value.isUndefined() || layerOf(pointer) == own
                ? tr("(inherited)")
                : tr("inherited: %1 (%2)")
                      .arg(
                          display::escaped(value.toString(), 40), display::escaped(layerLabel(layerOf(pointer)), 100)));
    };
    inherit(m_unknown, QStringLiteral("/network/unknown"), network.value(QStringLiteral("unknown")));
    inherit(m_commandDefault, QStringLiteral("/commands/default"), commands.value(QStringLiteral("default")));
}

void PolicyEditor::editLayer(const QJsonObject &layer)
{
    const QJsonObject network = layer.value(QStringLiteral("network")).toObject();
    m_allow->setHosts(strings(network.value(QStringLiteral("allow"))));
    m_deny->setHosts(strings(network.value(QStringLiteral("deny"))));
    const QJsonObject commands = layer.value(QStringLiteral("commands")).toObject();
    const QSignalBlocker a(m_unknown), b(m_commandDefault);
    setChoice(m_unknown, network.value(QStringLiteral("unknown")));
    setChoice(m_commandDefault, commands.value(QStringLiteral("default")));
    // Each row keeps its entry as the layer holds it: unchanged, it is applied exactly so.
    QList<QStringList> rules, grants, tools;
    QList<QJsonValue> ruleRaws, grantRaws, toolRaws;
    for (const QJsonValue &v : commands.value(QStringLiteral("rules")).toArray()) {
        rules.append(ruleCells(v.toObject()));
        ruleRaws.append(v);
    }
    m_rules->setRows(rules, ruleRaws);
    for (const QJsonValue &v :
        layer.value(QStringLiteral("credentials")).toObject().value(QStringLiteral("grants")).toArray()) {
        grants.append(grantCells(v.toObject()));
        grantRaws.append(v);
    }
    m_grants->setRows(grants, grantRaws);
    const QJsonObject toolObject = layer.value(QStringLiteral("tools")).toObject();
    for (auto it = toolObject.begin(); it != toolObject.end(); ++it) {
        tools.append(toolCells(it.key(), it.value().toObject(),
            it.value().toObject().value(QStringLiteral("decision")).toString(), QString()));
        toolRaws.append(it.value());
    }
    m_tools->setRows(tools, toolRaws);
    describeOwnTools();
    m_editedBase = layer;
    updateDiff();
}

QJsonObject PolicyEditor::edited() const
{
    // The layer being edited with the sections this editor shows replaced; everything else in it
    // (filesystem, limits, what the editor does not know) stays as it was.
    QJsonObject layer = m_editedBase;
    QJsonObject network = layer.value(QStringLiteral("network")).toObject();
    setOrRemove(
        network, QStringLiteral("allow"), QJsonArray::fromStringList(m_allow->hosts()), !m_allow->hosts().isEmpty());
    setOrRemove(
        network, QStringLiteral("deny"), QJsonArray::fromStringList(m_deny->hosts()), !m_deny->hosts().isEmpty());
    setOrRemove(network, QStringLiteral("unknown"), m_unknown->currentData().toString(),
        !m_unknown->currentData().toString().isEmpty());
    setOrRemove(layer, QStringLiteral("network"), network, !network.isEmpty());

    QJsonObject commands = layer.value(QStringLiteral("commands")).toObject();
    setOrRemove(commands, QStringLiteral("default"), m_commandDefault->currentData().toString(),
        !m_commandDefault->currentData().toString().isEmpty());
    QJsonArray rules;
    const QList<QJsonValue> ruleRaws = m_rules->raws();
    const QList<QStringList> ruleRows = m_rules->rows();
    for (qsizetype i = 0; i < ruleRows.size(); ++i) {
        if (ruleRaws.value(i).isObject()) { // as the layer holds it (a rule's words stay a list)
            rules.append(ruleRaws.value(i));
            continue;
        }
        const QStringList &row = ruleRows.at(i);
        QJsonObject rule{{QStringLiteral("decision"), row.value(0)}, {QStringLiteral("command"), row.value(1)}};
        if (row.value(2) == QLatin1String("yes"))
            rule.insert(QStringLiteral("exact"), true);
        rules.append(rule);
    }
    setOrRemove(commands, QStringLiteral("rules"), rules, !rules.isEmpty());
    setOrRemove(layer, QStringLiteral("commands"), commands, !commands.isEmpty());

    QJsonArray grants;
    const QList<QJsonValue> grantRaws = m_grants->raws();
    const QList<QStringList> grantRows = m_grants->rows();
    for (qsizetype i = 0; i < grantRows.size(); ++i) {
        const QStringList &row = grantRows.at(i);
        if (grantRaws.value(i).isObject())
            grants.append(grantRaws.value(i));
        else
            grants.append(QJsonObject{{QStringLiteral("secret"), row.value(0)},
                {row.value(1) == QLatin1String("file") ? QStringLiteral("file") : QStringLiteral("env"),
                    row.value(2)}});
    }
    QJsonObject credentials = layer.value(QStringLiteral("credentials")).toObject();
    setOrRemove(credentials, QStringLiteral("grants"), grants, !grants.isEmpty());
    setOrRemove(layer, QStringLiteral("credentials"), credentials, !credentials.isEmpty());

    QJsonObject tools;
    const QList<QJsonValue> toolRaws = m_tools->raws();
    const QList<QStringList> toolRows = m_tools->rows();
    for (qsizetype i = 0; i < toolRows.size(); ++i) {
        const QStringList &row = toolRows.at(i);
        if (toolRaws.value(i).isObject()) { // constraints as the layer holds them (';' and '=' included)
            tools.insert(row.value(0), toolRaws.value(i));
            continue;
        }
        QJsonObject permission{{QStringLiteral("decision"), row.value(1)}};
        QJsonObject constraints;
        for (const QString &pair : row.value(2).split(QLatin1Char(';'), Qt::SkipEmptyParts)) {
            const qsizetype eq = pair.indexOf(QLatin1Char('='));
            constraints.insert(pair.left(eq).trimmed(), eq < 0 ? QString() : pair.mid(eq + 1).trimmed());
        }
        if (!constraints.isEmpty())
            permission.insert(QStringLiteral("constraints"), constraints);
        tools.insert(row.value(0), permission);
    }
    setOrRemove(layer, QStringLiteral("tools"), tools, !tools.isEmpty());
    return layer;
}

} // namespace airlock::ui
