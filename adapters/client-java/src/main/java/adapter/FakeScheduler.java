package adapter;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A ScheduledExecutorService on the fake clock, standing in for the single-thread scheduled
 * executors that client-java's {@code Controller} creates for its reflector and resync loops.
 * Like {@code Executors.newSingleThreadScheduledExecutor()}: one worker thread runs the due tasks
 * one at a time; a fixed-delay task is due again {@code delay} after its run returned, a
 * fixed-rate one {@code period} after its previous due time; a task that throws is not run again.
 * Time is {@link FakeClock}: the worker parks on {@link FakeClock#LOCK} until a task is due.
 */
final class FakeScheduler extends AbstractExecutorService implements ScheduledExecutorService {
  private final String name;
  private final List<Task> tasks = new ArrayList<>();
  private Thread worker;
  private volatile boolean shutdown;
  private volatile boolean parked;
  private volatile Long parkedUntil; // the due time the parked worker waits for (null: none)

  FakeScheduler(String name) {
    this.name = name;
  }

  private final class Task implements ScheduledFuture<Object> {
    final Runnable command;
    final long delayNs; // > 0: fixed delay; < 0: fixed rate (-period); 0: once
    long due;
    volatile boolean cancelled;
    volatile boolean done;

    Task(Runnable command, long due, long delayNs) {
      this.command = command;
      this.due = due;
      this.delayNs = delayNs;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(due - FakeClock.nanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      cancelled = true;
      FakeClock.tick();
      return true;
    }

    @Override
    public boolean isCancelled() {
      return cancelled;
    }

    @Override
    public boolean isDone() {
      return done || cancelled;
    }

    @Override
    public Object get() {
      throw new UnsupportedOperationException("not used by client-java");
    }

    @Override
    public Object get(long timeout, TimeUnit unit) {
      throw new UnsupportedOperationException("not used by client-java");
    }
  }

  private ScheduledFuture<?> add(Runnable command, long initialNs, long delayNs) {
    if (shutdown) {
      throw new java.util.concurrent.RejectedExecutionException(name + " is shut down");
    }
    Task t = new Task(command, FakeClock.nanos() + Math.max(0, initialNs), delayNs);
    synchronized (FakeClock.LOCK) {
      tasks.add(t);
      if (worker == null) {
        worker = new Thread(this::work, name);
        worker.setDaemon(true);
        worker.start();
      }
      FakeClock.LOCK.notifyAll();
    }
    return t;
  }

  private Task nextTask() {
    Task best = null;
    for (Task t : tasks) {
      if (!t.cancelled && (best == null || t.due < best.due)) {
        best = t;
      }
    }
    return best;
  }

  private void work() {
    while (true) {
      Task t;
      synchronized (FakeClock.LOCK) {
        try {
          while (true) {
            tasks.removeIf(x -> x.cancelled || x.done);
            if (shutdown) {
              return;
            }
            t = nextTask();
            if (t != null && t.due <= FakeClock.nanos()) {
              break;
            }
            parkedUntil = t == null ? null : t.due;
            parked = true;
            FakeClock.LOCK.notifyAll();
            FakeClock.LOCK.wait();
          }
        } catch (InterruptedException e) {
          return;
        } finally {
          parked = false;
        }
      }
      boolean threw = false;
      try {
        t.command.run();
      } catch (Throwable e) {
        threw = true;
      }
      synchronized (FakeClock.LOCK) {
        if (threw || t.delayNs == 0) {
          t.done = true;
        } else if (t.delayNs > 0) {
          t.due = FakeClock.nanos() + t.delayNs;
        } else {
          t.due = t.due - t.delayNs;
        }
        FakeClock.LOCK.notifyAll();
      }
      if (Thread.interrupted() && shutdown) {
        return;
      }
    }
  }

  /**
   * The worker waits for a task that is not due yet, or for none (or never started). Read under
   * the lock the worker parks in, so {@code parked} and {@code parkedUntil} belong together.
   */
  boolean sleeping() {
    synchronized (FakeClock.LOCK) {
      Thread w = worker;
      if (w == null || !w.isAlive()) {
        return true;
      }
      Long until = parkedUntil;
      return parked && (until == null || until > FakeClock.nanos());
    }
  }

  /**
   * As {@link #sleeping()}, but false while no task was ever scheduled: for a caller that knows
   * a task is about to be (one read under the lock, so "no worker yet" and "parked" cannot mix).
   */
  boolean sleepingOnceStarted() {
    synchronized (FakeClock.LOCK) {
      return worker != null && sleeping();
    }
  }

  /** The worker is parked waiting for a task that will fall due. */
  boolean sleepingOnTask() {
    synchronized (FakeClock.LOCK) {
      Thread w = worker;
      return w != null && w.isAlive() && parked && parkedUntil != null;
    }
  }

  Long deadlineNs() {
    synchronized (FakeClock.LOCK) {
      Thread w = worker;
      return w != null && w.isAlive() && parked ? parkedUntil : null;
    }
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return add(command, unit.toNanos(delay), 0);
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException("not used by client-java");
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(
      Runnable command, long initialDelay, long period, TimeUnit unit) {
    return add(command, unit.toNanos(initialDelay), -unit.toNanos(period));
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(
      Runnable command, long initialDelay, long delay, TimeUnit unit) {
    return add(command, unit.toNanos(initialDelay), unit.toNanos(delay));
  }

  @Override
  public void execute(Runnable command) {
    add(command, 0, 0);
  }

  @Override
  public void shutdown() {
    shutdownNow();
  }

  @Override
  public List<Runnable> shutdownNow() {
    synchronized (FakeClock.LOCK) {
      shutdown = true;
      FakeClock.LOCK.notifyAll();
    }
    Thread w = worker;
    if (w != null) {
      w.interrupt();
    }
    return new ArrayList<>();
  }

  @Override
  public boolean isShutdown() {
    return shutdown;
  }

  @Override
  public boolean isTerminated() {
    Thread w = worker;
    return shutdown && (w == null || !w.isAlive());
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
    Thread w = worker;
    if (w != null) {
      w.join(unit.toMillis(timeout));
    }
    return isTerminated();
  }
}
