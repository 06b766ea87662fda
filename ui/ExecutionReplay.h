// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QObject>
#include <QPointer>

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

// Reads one execution's stored output back from the daemon (history.output, a page at a time) and
// hands it over chunk by chunk in the order it was produced, stdout and stderr interleaved as they
// were. Starting another replay abandons the one before.
class ExecutionReplay final : public QObject {
    Q_OBJECT
public:
    explicit ExecutionReplay(DaemonClient &client, QObject *parent = nullptr);

    void start(qint64 execution);
    void start(DaemonClient &client, qint64 execution); // from that daemon, and from it on
    void cancel();
    bool isRunning() const { return m_execution != 0; }
    qint64 bytesRead() const { return m_bytes; }

Q_SIGNALS:
    void chunk(int stream, const QByteArray &data, qint64 offset, qint64 timeMs); // offset: of data[0] in its stream
    void finished(qint64 execution);
    void failed(const QString &message);

private:
    void requestPage(qint64 afterChunk);

    QPointer<DaemonClient> m_client;
    qint64 m_execution = 0;
    quint64 m_generation = 0;
    qint64 m_bytes = 0;
};

} // namespace airlock::ui
