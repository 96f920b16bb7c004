package adapter;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import io.kubernetes.client.extended.workqueue.DefaultDelayingQueue;
import io.kubernetes.client.extended.workqueue.DefaultRateLimitingQueue;
import io.kubernetes.client.extended.workqueue.DefaultWorkQueue;
import io.kubernetes.client.extended.workqueue.DelayingQueue;
import io.kubernetes.client.extended.workqueue.RateLimitingQueue;
import io.kubernetes.client.extended.workqueue.WorkQueue;
import io.kubernetes.client.extended.workqueue.ratelimiter.DefaultControllerRateLimiter;
import io.kubernetes.client.extended.workqueue.ratelimiter.ItemExponentialFailureRateLimiter;
import io.kubernetes.client.extended.workqueue.ratelimiter.ItemFastSlowRateLimiter;
import io.kubernetes.client.extended.workqueue.ratelimiter.MaxOfRateLimiter;
import io.kubernetes.client.extended.workqueue.ratelimiter.RateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * client-java-extended's work queues and rate limiters behind the protocol.
 *
 * <p>Fake time for DefaultDelayingQueue: its own test seam {@code injectTimeSource} gives it the
 * fake clock (milliseconds, its unit), and its waiting loop's only timed wait, {@code
 * waitingForAddQueue.poll(timeout)} (a protected field), is a {@link FakeTimedQueue} whose timeout
 * runs on the fake clock. The loop is handed to a {@link GatedExecutor} that starts it only after
 * both are in place. Quiescence: the loop thread is parked in that poll with nothing offered and
 * its deadline still ahead (or the loop has ended, after shutDown).
 */
final class Queues {
  private Queues() {}

  /** Limiters built from the library's own classes ({@code bucket} reads the wall clock). */
  static final List<String> LIMITERS =
      List.of("default_controller", "exponential", "fast_slow", "max_of");

  static long nanos(JsonElement seconds) {
    if (seconds == null || !seconds.isJsonPrimitive() || !seconds.getAsJsonPrimitive().isNumber()) {
      throw new Refused("bad_request", "a duration must be a number of seconds");
    }
    return Math.round(seconds.getAsDouble() * 1e9);
  }

  static RateLimiter<String> limiter(JsonElement spec) {
    if (spec == null || spec.isJsonNull()) {
      return new DefaultControllerRateLimiter<>();
    }
    if (!spec.isJsonObject()) {
      throw new Refused("bad_request", "a limiter spec is an object");
    }
    JsonObject o = spec.getAsJsonObject();
    String name = o.has("name") ? o.get("name").getAsString() : "";
    switch (name) {
      case "default_controller":
        return new DefaultControllerRateLimiter<>();
      case "exponential":
        return new ItemExponentialFailureRateLimiter<>(
            Duration.ofNanos(nanos(o.get("base"))), Duration.ofNanos(nanos(o.get("max"))));
      case "fast_slow":
        return new ItemFastSlowRateLimiter<>(
            Duration.ofNanos(nanos(o.get("fast"))),
            Duration.ofNanos(nanos(o.get("slow"))),
            o.get("max_fast").getAsInt());
      case "max_of":
        {
          List<RateLimiter<String>> parts = new ArrayList<>();
          for (JsonElement e : o.getAsJsonArray("limiters")) {
            parts.add(limiter(e));
          }
          return new MaxOfRateLimiter<>(parts);
        }
      default:
        throw new Refused("unsupported", "no limiter " + name + " in client-java-extended");
    }
  }

  static JsonElement seconds(Duration d) {
    return new JsonPrimitive(d.toNanos() / 1e9);
  }

  /** Starts the one task the library submits only when {@link #release()} is called. */
  static final class GatedExecutor extends AbstractExecutorService {
    private Runnable task;
    private Thread thread;
    private volatile boolean shutdown;

    @Override
    public synchronized void execute(Runnable command) {
      if (task != null) {
        throw new IllegalStateException("one task only");
      }
      task = command;
    }

    synchronized void release(String name) {
      thread = new Thread(task, name);
      thread.setDaemon(true);
      thread.start();
    }

    boolean alive() {
      Thread t;
      synchronized (this) {
        t = thread;
      }
      return t != null && t.isAlive();
    }

    @Override
    public void shutdown() {
      shutdown = true;
    }

    @Override
    public synchronized List<Runnable> shutdownNow() {
      shutdown = true;
      if (thread != null) {
        thread.interrupt();
      }
      return new ArrayList<>();
    }

    @Override
    public boolean isShutdown() {
      return shutdown;
    }

    @Override
    public boolean isTerminated() {
      return shutdown && !alive();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      Thread t;
      synchronized (this) {
        t = thread;
      }
      if (t != null) {
        t.join(unit.toMillis(timeout));
      }
      return !alive();
    }
  }

  /**
   * DefaultDelayingQueue's {@code waitingForAddQueue}: a LinkedBlockingQueue whose timed poll
   * waits on the fake clock (in the library's milliseconds) instead of the wall clock.
   */
  static final class FakeTimedQueue<E> extends LinkedBlockingQueue<E> {
    private static final long serialVersionUID = 1L;
    private volatile boolean parked;
    private volatile long deadlineMs;

    FakeTimedQueue() {
      super(1000); // the capacity DefaultDelayingQueue gives its own
    }

    @Override
    public boolean offer(E e) {
      boolean ok = super.offer(e);
      FakeClock.tick();
      return ok;
    }

    @Override
    public E poll(long timeout, TimeUnit unit) throws InterruptedException {
      long deadline = FakeClock.millis() + unit.toMillis(timeout);
      synchronized (FakeClock.LOCK) {
        try {
          while (true) {
            E e = super.poll();
            if (e != null) {
              return e;
            }
            if (FakeClock.millis() >= deadline) {
              return null;
            }
            deadlineMs = deadline;
            parked = true;
            FakeClock.LOCK.notifyAll();
            FakeClock.LOCK.wait();
          }
        } finally {
          parked = false;
        }
      }
    }

    /** Under the lock {@code poll} parks in, so the fields and the queue agree. */
    boolean idle() {
      synchronized (FakeClock.LOCK) {
        return parked && isEmpty() && deadlineMs > FakeClock.millis();
      }
    }

    Long deadlineNs() {
      return parked ? deadlineMs * 1_000_000L : null;
    }
  }

  /** DefaultDelayingQueue on the fake clock. */
  static final class FakeDelayingQueue<T> extends DefaultDelayingQueue<T> {
    private final GatedExecutor worker;
    private final FakeTimedQueue<Object> timed;

    @SuppressWarnings({"unchecked", "rawtypes"})
    FakeDelayingQueue(GatedExecutor worker) {
      super(worker);
      this.worker = worker;
      this.timed = new FakeTimedQueue<>();
      this.waitingForAddQueue = (FakeTimedQueue) timed;
      injectTimeSource(FakeClock::millis);
      worker.release("delaying-queue-waiting-loop");
    }

    boolean quiet() {
      return !worker.alive() || timed.idle();
    }

    Long deadlineNs() {
      return worker.alive() ? timed.deadlineNs() : null;
    }

    void close() {
      shutDown();
      worker.shutdownNow();
    }
  }

  /** DefaultRateLimitingQueue on the fake clock (the same seams as FakeDelayingQueue). */
  static final class FakeRateLimitingQueue<T> extends DefaultRateLimitingQueue<T> {
    private final GatedExecutor worker;
    private final FakeTimedQueue<Object> timed;

    @SuppressWarnings({"unchecked", "rawtypes"})
    FakeRateLimitingQueue(GatedExecutor worker, RateLimiter<T> limiter) {
      super(worker, limiter);
      this.worker = worker;
      this.timed = new FakeTimedQueue<>();
      this.waitingForAddQueue = (FakeTimedQueue) timed;
      injectTimeSource(FakeClock::millis);
      worker.release("rate-limiting-queue-waiting-loop");
    }

    boolean quiet() {
      return !worker.alive() || timed.idle();
    }

    Long deadlineNs() {
      return worker.alive() ? timed.deadlineNs() : null;
    }

    void close() {
      shutDown();
      worker.shutdownNow();
    }
  }

  /** One queue instance of any of the three queue components. */
  static final class QueueInstance implements Instance {
    final String component;
    final WorkQueue<String> queue;

    QueueInstance(String component, JsonObject options) {
      this.component = component;
      switch (component) {
        case "queue":
          queue = new DefaultWorkQueue<>();
          break;
        case "delaying_queue":
          queue = new FakeDelayingQueue<>(new GatedExecutor());
          break;
        case "rate_limiting_queue":
          queue = new FakeRateLimitingQueue<>(new GatedExecutor(), limiter(options.get("limiter")));
          break;
        default:
          throw new IllegalArgumentException(component);
      }
      settle();
    }

    @Override
    public boolean quiet() {
      if (queue instanceof FakeDelayingQueue) {
        return ((FakeDelayingQueue<String>) queue).quiet();
      }
      if (queue instanceof FakeRateLimitingQueue) {
        return ((FakeRateLimitingQueue<String>) queue).quiet();
      }
      return true;
    }

    @Override
    public Long deadlineNs() {
      if (queue instanceof FakeDelayingQueue) {
        return ((FakeDelayingQueue<String>) queue).deadlineNs();
      }
      if (queue instanceof FakeRateLimitingQueue) {
        return ((FakeRateLimitingQueue<String>) queue).deadlineNs();
      }
      return null;
    }

    @Override
    public void close() {
      if (queue instanceof FakeDelayingQueue) {
        ((FakeDelayingQueue<String>) queue).close();
      } else if (queue instanceof FakeRateLimitingQueue) {
        ((FakeRateLimitingQueue<String>) queue).close();
      } else {
        queue.shutDown();
      }
    }

    private void settle() {
      Barrier.await(component + " waiting loop", this::quiet);
    }

    private static String item(JsonObject args) {
      JsonElement e = args.get("item");
      if (e == null || !e.isJsonPrimitive() || !e.getAsJsonPrimitive().isString()) {
        throw new Refused("bad_request", "item must be a string");
      }
      return e.getAsString();
    }

    @Override
    public JsonElement call(String method, JsonObject args) throws InterruptedException {
      JsonElement result = JsonNull.INSTANCE;
      switch (method) {
        case "add":
          queue.add(item(args));
          break;
        case "get_nowait":
          {
            JsonObject r = new JsonObject();
            if (queue.length() > 0 || queue.isShuttingDown()) {
              String got = queue.get(); // returns at once: something is queued, or shut down
              if (got == null) {
                r.addProperty("kind", "shutdown");
              } else {
                r.addProperty("kind", "item");
                r.addProperty("item", got);
              }
            } else {
              r.addProperty("kind", "empty");
            }
            result = r;
            break;
          }
        case "done":
          queue.done(item(args));
          break;
        case "len":
          result = new JsonPrimitive(queue.length());
          break;
        case "shut_down":
          queue.shutDown();
          FakeClock.tick();
          break;
        case "shutting_down":
          result = new JsonPrimitive(queue.isShuttingDown());
          break;
        case "add_after":
          if (!(queue instanceof DelayingQueue)) {
            throw new Refused("unsupported", "queue has no add_after");
          }
          ((DelayingQueue<String>) queue)
              .addAfter(item(args), Duration.ofNanos(nanos(args.get("delay"))));
          break;
        case "add_rate_limited":
        case "forget":
        case "num_requeues":
          {
            if (!(queue instanceof RateLimitingQueue)) {
              throw new Refused("unsupported", "queue has no " + method);
            }
            RateLimitingQueue<String> rq = (RateLimitingQueue<String>) queue;
            if (method.equals("add_rate_limited")) {
              rq.addRateLimited(item(args));
            } else if (method.equals("forget")) {
              rq.forget(item(args));
            } else {
              result = new JsonPrimitive(rq.numRequeues(item(args)));
            }
            break;
          }
        default:
          throw new Refused("unsupported", component + " has no " + method);
      }
      settle();
      return result;
    }
  }

  /** A rate limiter alone. */
  static final class LimiterInstance implements Instance {
    final RateLimiter<String> limiter;

    LimiterInstance(JsonObject options) {
      limiter = limiter(options.get("limiter"));
    }

    @Override
    public JsonElement call(String method, JsonObject args) {
      String item = args.get("item").getAsString();
      switch (method) {
        case "when":
          return seconds(limiter.when(item));
        case "forget":
          limiter.forget(item);
          return JsonNull.INSTANCE;
        case "num_requeues":
          return new JsonPrimitive(limiter.numRequeues(item));
        default:
          throw new Refused("unsupported", "rate_limiter has no " + method);
      }
    }
  }

  static JsonArray strings(List<String> values) {
    JsonArray a = new JsonArray();
    for (String v : values) {
      a.add(v);
    }
    return a;
  }
}
