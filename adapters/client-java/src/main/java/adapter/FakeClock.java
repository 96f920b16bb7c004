package adapter;

/**
 * The adapter's one fake clock: integer nanoseconds since the adapter started (or the last
 * {@code reset}). Only {@code advance} moves it. Every thread that waits on fake time waits on
 * {@link #LOCK}; {@link #tick()} wakes them, and the quiescence barrier ({@link Barrier}) also
 * waits on it for state changes.
 */
final class FakeClock {
  static final Object LOCK = new Object();
  private static volatile long nowNs;

  private FakeClock() {}

  static long nanos() {
    return nowNs;
  }

  /** The library's millisecond view of the clock (DefaultDelayingQueue's time source). */
  static long millis() {
    return nowNs / 1_000_000L;
  }

  static void set(long ns) {
    synchronized (LOCK) {
      nowNs = ns;
      LOCK.notifyAll();
    }
  }

  /** Wakes every fake-time waiter and the barrier: something they look at changed. */
  static void tick() {
    synchronized (LOCK) {
      LOCK.notifyAll();
    }
  }
}
