package io.cbprobe.conformance;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A ScheduledExecutorService driven by a FakeClock, following the vector README's time rules:
 * advanceTo(t) runs every task due at or before t in due-time order (ties in scheduling order),
 * with the clock reading each task's due time while it runs, then sets the clock to t. An
 * exception thrown by a task is kept in its future and goes no further, as in
 * ScheduledThreadPoolExecutor. Only schedule(Runnable, long, TimeUnit) is used by the
 * circuit breaker; everything else is refused.
 */
final class FakeScheduler implements ScheduledExecutorService {
    private FakeClock clock;
    private long seq;
    private final PriorityQueue<Task> queue =
        new PriorityQueue<>(Comparator.comparing((Task t) -> t.due).thenComparingLong(t -> t.order));

    void reset(FakeClock c) {
        clock = c;
        seq = 0;
        queue.clear();
    }

    void advanceTo(Instant t) {
        while (!queue.isEmpty() && !queue.peek().due.isAfter(t)) {
            Task task = queue.poll();
            if (task.due.isAfter(clock.instant())) {
                clock.set(task.due);
            }
            task.run();
        }
        if (t.isAfter(clock.instant())) {
            clock.set(t);
        }
    }

    final class Task implements ScheduledFuture<Object> {
        final Instant due;
        final long order;
        final Runnable body;
        boolean done, cancelled;
        Throwable failure;

        Task(Instant due, long order, Runnable body) {
            this.due = due;
            this.order = order;
            this.body = body;
        }

        void run() {
            done = true;
            try {
                body.run();
            } catch (RuntimeException | Error e) {
                failure = e;
            }
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(due.toEpochMilli() - clock.millis(), TimeUnit.MILLISECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            return Long.compare(getDelay(TimeUnit.MILLISECONDS), o.getDelay(TimeUnit.MILLISECONDS));
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            if (done) {
                return false;
            }
            done = true;
            cancelled = true;
            queue.remove(this);
            return true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return done;
        }

        @Override
        public Object get() {
            throw new UnsupportedOperationException("get on a fake-clock task");
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            throw new UnsupportedOperationException("get on a fake-clock task");
        }
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
        long ms = Math.max(0, unit.toMillis(delay));
        Task t = new Task(clock.instant().plusMillis(ms), seq++, command);
        queue.add(t);
        return t;
    }

    private static UnsupportedOperationException refused() {
        return new UnsupportedOperationException("the fake-clock scheduler only supports schedule(Runnable, long, TimeUnit)");
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
        throw refused();
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
        throw refused();
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
        throw refused();
    }

    @Override
    public void shutdown() {
    }

    @Override
    public List<Runnable> shutdownNow() {
        return new ArrayList<>();
    }

    @Override
    public boolean isShutdown() {
        return false;
    }

    @Override
    public boolean isTerminated() {
        return false;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
        return true;
    }

    @Override
    public <T> Future<T> submit(Callable<T> task) {
        throw refused();
    }

    @Override
    public <T> Future<T> submit(Runnable task, T result) {
        throw refused();
    }

    @Override
    public Future<?> submit(Runnable task) {
        throw refused();
    }

    @Override
    public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks) {
        throw refused();
    }

    @Override
    public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit) {
        throw refused();
    }

    @Override
    public <T> T invokeAny(Collection<? extends Callable<T>> tasks) {
        throw refused();
    }

    @Override
    public <T> T invokeAny(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit) {
        throw refused();
    }

    @Override
    public void execute(Runnable command) {
        throw refused();
    }
}
