// SPDX-License-Identifier: Apache-2.0
// EpollEventDispatcher, the daemon's main loop: what Qt code relies on (timers never early, level-
// triggered notifiers, posted events from other threads, nested loops, deferred deletes) and what
// it is for (a descriptor is registered once, so a wake-up does not cost what is watched).
#include "util/EpollEventDispatcher.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QPointer>
#include <QSignalSpy>
#include <QSocketNotifier>
#include <QTest>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

using namespace airlock;

namespace {
struct SocketPair {
    int a = -1, b = -1;
    SocketPair()
    {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0) {
            a = fds[0];
            b = fds[1];
        }
    }
    ~SocketPair()
    {
        ::close(a);
        ::close(b);
    }
    SocketPair(const SocketPair &) = delete;
    SocketPair &operator=(const SocketPair &) = delete;
};

// The descriptors an epoll instance watches, from /proc/self/fdinfo (one "tfd:" line each).
int epollWatchCount()
{
    const QDir fds(QStringLiteral("/proc/self/fd"));
    for (const QString &name : fds.entryList(QDir::System | QDir::NoDotAndDotDot)) {
        char target[64] = {};
        const QByteArray path = QFile::encodeName(fds.filePath(name));
        if (::readlink(path.constData(), target, sizeof target - 1) <= 0
            || std::strcmp(target, "anon_inode:[eventpoll]") != 0)
            continue;
        QFile info(QStringLiteral("/proc/self/fdinfo/") + name);
        if (!info.open(QIODevice::ReadOnly))
            continue;
        return int(info.readAll().count("tfd:"));
    }
    return -1;
}

char readOne(int fd)
{
    char c = 0;
    return ::read(fd, &c, 1) == 1 ? c : 0;
}

// Round trips through a socket pair answered by a notifier, with `idle` more notifiers registered
// that never fire; the wall time of `rounds` round trips, in the calling thread's loop.
double pingPongMs(int idle, int rounds)
{
    std::vector<std::unique_ptr<SocketPair>> quiet;
    std::vector<std::unique_ptr<QSocketNotifier>> watching;
    for (int i = 0; i < idle; ++i) {
        quiet.push_back(std::make_unique<SocketPair>());
        watching.push_back(std::make_unique<QSocketNotifier>(quiet.back()->a, QSocketNotifier::Read));
    }
    SocketPair pair;
    QSocketNotifier echo(pair.b, QSocketNotifier::Read);
    QSocketNotifier back(pair.a, QSocketNotifier::Read);
    int left = rounds;
    QEventLoop loop;
    QObject::connect(&echo, &QSocketNotifier::activated, &echo, [&] {
        if (readOne(pair.b))
            (void)!::write(pair.b, "p", 1);
    });
    QObject::connect(&back, &QSocketNotifier::activated, &back, [&] {
        if (readOne(pair.a) && --left > 0)
            (void)!::write(pair.a, "p", 1);
        else if (left == 0)
            loop.quit();
    });
    QElapsedTimer t;
    t.start();
    (void)!::write(pair.a, "p", 1);
    loop.exec();
    return double(t.nsecsElapsed()) / 1e6;
}
} // namespace

class TstEventDispatcher : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void theDaemonsDispatcherIsInstalled()
    {
        QVERIFY(qobject_cast<EpollEventDispatcher *>(QAbstractEventDispatcher::instance()));
    }

    void aTimerIsNeverEarly()
    {
        for (int ms : {1, 7, 30}) {
            QElapsedTimer t;
            t.start();
            qint64 firedAfterNs = -1;
            QTimer::singleShot(ms, Qt::PreciseTimer, this, [&] { firedAfterNs = t.nsecsElapsed(); });
            QTRY_VERIFY_WITH_TIMEOUT(firedAfterNs >= 0, 2000);
            QVERIFY2(firedAfterNs >= qint64(ms) * 1'000'000,
                qPrintable(QStringLiteral("%1 ms timer fired after %2 ns").arg(ms).arg(firedAfterNs)));
        }
    }

    void aRepeatingTimerKeepsItsPaceAndStopsWhenKilled()
    {
        QTimer timer;
        timer.setTimerType(Qt::PreciseTimer);
        int ticks = 0;
        connect(&timer, &QTimer::timeout, this, [&] {
            if (++ticks == 10)
                timer.stop(); // killed from inside its own event
        });
        QElapsedTimer t;
        t.start();
        timer.start(10);
        QTRY_COMPARE_WITH_TIMEOUT(ticks, 10, 3000);
        QVERIFY2(t.elapsed() >= 100, qPrintable(QString::number(t.elapsed())));
        QTest::qWait(50);
        QCOMPARE(ticks, 10);
        QVERIFY(QAbstractEventDispatcher::instance()->registeredTimers(&timer).isEmpty());
    }

    void remainingTimeAndRegisteredTimersAreTrue()
    {
        QTimer timer;
        timer.setTimerType(Qt::PreciseTimer);
        timer.start(500);
        const int left = timer.remainingTime();
        QVERIFY2(left > 400 && left <= 500, qPrintable(QString::number(left)));
        const auto timers = QAbstractEventDispatcher::instance()->registeredTimers(&timer);
        QCOMPARE(timers.size(), 1);
        QCOMPARE(timers.first().timerId, timer.timerId());
        QCOMPARE(timers.first().interval, 500);
        timer.stop();
        QCOMPARE(QAbstractEventDispatcher::instance()->remainingTime(timers.first().timerId), -1);
    }

    void aZeroTimerDoesNotStarveADescriptor()
    {
        QTimer busy;
        int spins = 0;
        connect(&busy, &QTimer::timeout, this, [&] { ++spins; });
        busy.start(0);
        SocketPair pair;
        QSocketNotifier n(pair.b, QSocketNotifier::Read);
        bool read = false;
        connect(&n, &QSocketNotifier::activated, this, [&] { read = readOne(pair.b) == 'x'; });
        QTest::qWait(5);
        QCOMPARE(::write(pair.a, "x", 1), 1);
        QTRY_VERIFY_WITH_TIMEOUT(read, 1000);
        QVERIFY(spins > 0);
    }

    void aNotifierIsLevelTriggeredAndSilentWhenDisabled()
    {
        SocketPair pair;
        QSocketNotifier n(pair.b, QSocketNotifier::Read);
        int activations = 0;
        connect(&n, &QSocketNotifier::activated, this, [&] {
            if (++activations >= 3)
                readOne(pair.b); // read only from the third on: it is told until then
        });
        QTest::qWait(20);
        QCOMPARE(activations, 0);
        QCOMPARE(::write(pair.a, "a", 1), 1);
        QTRY_VERIFY_WITH_TIMEOUT(activations >= 3, 1000);
        QTest::qWait(20);
        QCOMPARE(activations, 3); // drained: nothing more
        n.setEnabled(false);
        QCOMPARE(::write(pair.a, "b", 1), 1);
        QTest::qWait(30);
        QCOMPARE(activations, 3);
        n.setEnabled(true);
        QTRY_COMPARE_WITH_TIMEOUT(activations, 4, 1000);
    }

    void readAndWriteNotifiersShareADescriptor()
    {
        SocketPair pair;
        QSocketNotifier reader(pair.a, QSocketNotifier::Read);
        QSocketNotifier writer(pair.a, QSocketNotifier::Write);
        bool wrote = false, read = false;
        connect(&writer, &QSocketNotifier::activated, this, [&] {
            wrote = ::write(pair.a, "w", 1) == 1;
            writer.setEnabled(false); // the reader stays
        });
        connect(&reader, &QSocketNotifier::activated, this, [&] { read = readOne(pair.a) == 'r'; });
        QTRY_VERIFY_WITH_TIMEOUT(wrote, 1000);
        QCOMPARE(readOne(pair.b), 'w');
        QCOMPARE(::write(pair.b, "r", 1), 1);
        QTRY_VERIFY_WITH_TIMEOUT(read, 1000);
        QCOMPARE(epollWatchCount(), 2); // the wake-up eventfd and pair.a, once for both types
    }

    void aHangUpReachesTheReader()
    {
        auto pair = std::make_unique<SocketPair>();
        QSocketNotifier n(pair->a, QSocketNotifier::Read);
        ssize_t got = -2;
        connect(&n, &QSocketNotifier::activated, this, [&] {
            char c;
            got = ::read(pair->a, &c, 1);
            n.setEnabled(false);
        });
        ::close(pair->b);
        pair->b = -1;
        QTRY_COMPARE_WITH_TIMEOUT(got, ssize_t(0), 1000);
    }

    void aNotifierDeletedByAnotherInTheSameBatchIsNotTold()
    {
        SocketPair one, two;
        auto *first = new QSocketNotifier(one.b, QSocketNotifier::Read);
        auto *second = new QSocketNotifier(two.b, QSocketNotifier::Read);
        QPointer<QSocketNotifier> firstAlive(first), secondAlive(second);
        int told = 0;
        // Whichever is told first deletes the other; both descriptors are ready in one wait.
        connect(first, &QSocketNotifier::activated, this, [&] {
            ++told;
            delete secondAlive.data();
            first->setEnabled(false);
        });
        connect(second, &QSocketNotifier::activated, this, [&] {
            ++told;
            delete firstAlive.data();
            second->setEnabled(false);
        });
        QCOMPARE(::write(one.a, "1", 1), 1);
        QCOMPARE(::write(two.a, "2", 1), 1);
        QTRY_COMPARE_WITH_TIMEOUT(told, 1, 1000);
        QTest::qWait(30);
        QCOMPARE(told, 1);
        QCOMPARE(int(bool(firstAlive)) + int(bool(secondAlive)), 1);
        delete firstAlive.data();
        delete secondAlive.data();
        QCOMPARE(epollWatchCount(), 1);
    }

    // A slot earlier in a batch closes a descriptor the batch also reported and registers a new one
    // under the same number: the report was the old one's, and the new notifier is not told.
    void aReportForAClosedDescriptorDoesNotReachItsNumbersNextOwner()
    {
        SocketPair first;
        int old[2];
        QCOMPARE(::pipe2(old, O_CLOEXEC | O_NONBLOCK), 0);
        const int number = old[0];
        auto *oldReader = new QSocketNotifier(number, QSocketNotifier::Read);
        QSocketNotifier firstReader(first.b, QSocketNotifier::Read);
        std::unique_ptr<QSocketNotifier> newReader;
        int fresh[2] = {-1, -1};
        int newTold = 0, oldTold = 0;
        connect(oldReader, &QSocketNotifier::activated, this, [&] { ++oldTold; });
        connect(&firstReader, &QSocketNotifier::activated, this, [&] {
            readOne(first.b);
            firstReader.setEnabled(false);
            if (newReader)
                return;
            delete oldReader;
            QCOMPARE(::pipe2(fresh, O_CLOEXEC | O_NONBLOCK), 0);
            QCOMPARE(::dup2(fresh[0], number), number); // closes the old pipe: its number, a new (empty) pipe
            ::close(fresh[0]);
            newReader = std::make_unique<QSocketNotifier>(number, QSocketNotifier::Read);
            connect(newReader.get(), &QSocketNotifier::activated, this, [&] { ++newTold; });
        });
        // Both ready before the loop looks: one batch, the first pair reported first.
        QCOMPARE(::write(first.a, "f", 1), 1);
        QCOMPARE(::write(old[1], "o", 1), 1);
        QTRY_VERIFY_WITH_TIMEOUT(newReader != nullptr, 1000);
        QTest::qWait(50);
        QCOMPARE(oldTold + newTold, 0);
        newReader.reset();
        ::close(number);
        ::close(old[1]);
        ::close(fresh[1]);
    }

    // Another thread posting as fast as it can, then once more after a pause, when the loop waits
    // with no timer due and no descriptor ready: only that post can end the wait, and it does (a
    // wake-up lost in the flood would leave the loop asleep).
    void anotherThreadWakesABlockedLoopEvenAfterAFlood()
    {
        QThread poster;
        poster.start();
        QObject sender;
        sender.moveToThread(&poster);
        QEventLoop loop;
        QTimer guard;
        guard.setSingleShot(true);
        connect(&guard, &QTimer::timeout, &loop, &QEventLoop::quit);
        guard.start(10000);
        constexpr int kFlood = 200000;
        int received = 0;
        bool last = false;
        QElapsedTimer sinceLast;
        QMetaObject::invokeMethod(
            &sender,
            [&] {
                for (int i = 0; i < kFlood; ++i)
                    QMetaObject::invokeMethod(
                        &loop, [&] { ++received; }, Qt::QueuedConnection);
                QThread::msleep(100); // the loop drains the flood and goes to sleep
                sinceLast.start();
                QMetaObject::invokeMethod(
                    &loop,
                    [&] {
                        last = true;
                        loop.quit();
                    },
                    Qt::QueuedConnection);
            },
            Qt::QueuedConnection);
        loop.exec();
        poster.quit();
        poster.wait();
        QCOMPARE(received, kFlood);
        QVERIFY(last);
        QVERIFY2(sinceLast.elapsed() < 1000, qPrintable(QString::number(sinceLast.elapsed())));
    }

    void aNestedLoopRunsAndADeferredDeleteWaitsForTheOuterOne()
    {
        SocketPair pair;
        QSocketNotifier n(pair.b, QSocketNotifier::Read);
        QPointer<QObject> doomed = new QObject;
        bool innerRan = false, aliveAfterInner = false;
        connect(&n, &QSocketNotifier::activated, this, [&] {
            readOne(pair.b);
            n.setEnabled(false);
            doomed->deleteLater();
            QEventLoop inner;
            QTimer::singleShot(20, &inner, [&] {
                innerRan = true;
                inner.quit();
            });
            inner.exec();
            aliveAfterInner = !doomed.isNull(); // posted in this loop's level: not deleted inside
        });
        QCOMPARE(::write(pair.a, "n", 1), 1);
        QTRY_VERIFY_WITH_TIMEOUT(innerRan, 1000);
        QVERIFY(aliveAfterInner);
        QTRY_VERIFY_WITH_TIMEOUT(doomed.isNull(), 1000);
    }

    void exitEndsAWaitWithNothingElseToDo()
    {
        QEventLoop loop;
        QThread stopper;
        stopper.start();
        QObject helper;
        helper.moveToThread(&stopper);
        QMetaObject::invokeMethod(
            &helper,
            [&] {
                QThread::msleep(30);
                loop.exit(7);
            },
            Qt::QueuedConnection);
        QElapsedTimer t;
        t.start();
        QCOMPARE(loop.exec(), 7);
        QVERIFY2(t.elapsed() < 1000, qPrintable(QString::number(t.elapsed())));
        stopper.quit();
        stopper.wait();
    }

    void aDescriptorIsRegisteredOnceNotOnEveryWait()
    {
        const int before = epollWatchCount();
        QCOMPARE(before, 1); // the wake-up eventfd
        std::vector<std::unique_ptr<SocketPair>> pairs;
        std::vector<std::unique_ptr<QSocketNotifier>> notifiers;
        for (int i = 0; i < 500; ++i) {
            pairs.push_back(std::make_unique<SocketPair>());
            notifiers.push_back(std::make_unique<QSocketNotifier>(pairs.back()->a, QSocketNotifier::Read));
        }
        QCOMPARE(epollWatchCount(), 501);
        notifiers.clear();
        QCOMPARE(epollWatchCount(), 1);
    }

    // What it is for: a wake-up costs what is ready. With 2,000 idle descriptors watched, a round
    // trip through one costs about what it costs with none; Qt's own loop, in a thread of its own
    // in the same run, is reported beside it.
    void aWakeUpDoesNotCostWhatIsWatched()
    {
        const int rounds = 2000;
        auto measure = [&](int idle) {
            QList<double> runs;
            for (int i = 0; i < 5; ++i)
                runs.append(pingPongMs(idle, rounds));
            std::sort(runs.begin(), runs.end());
            return runs[2];
        };
        const double none = measure(0);
        const double many = measure(2000);
        double qtNone = 0, qtMany = 0;
        QThread qtLoop; // Qt's default dispatcher
        QObject worker;
        worker.moveToThread(&qtLoop);
        qtLoop.start();
        QMetaObject::invokeMethod(
            &worker,
            [&] {
                qtNone = pingPongMs(0, rounds / 4) * 4;
                qtMany = pingPongMs(2000, rounds / 4) * 4;
            },
            Qt::BlockingQueuedConnection);
        qtLoop.quit();
        qtLoop.wait();
        qInfo("%d round trips: epoll %.1f ms with 0 idle, %.1f ms with 2000 idle (%.2fx); Qt's loop %.1f / %.1f "
              "(%.2fx)",
            rounds, none, many, many / none, qtNone, qtMany, qtMany / qtNone);
        QVERIFY2(many < none * 2.0, qPrintable(QStringLiteral("%1 ms vs %2 ms").arg(many).arg(none)));
    }
};

int main(int argc, char *argv[])
{
    auto *dispatcher = new EpollEventDispatcher;
    if (!dispatcher->isValid())
        return 1;
    QCoreApplication::setEventDispatcher(dispatcher);
    QCoreApplication app(argc, argv);
    TstEventDispatcher test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_event_dispatcher.moc"
