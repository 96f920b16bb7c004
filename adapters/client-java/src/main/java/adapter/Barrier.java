package adapter;

import java.util.function.BooleanSupplier;

/**
 * The quiescence barrier: waits (in real time, bounded) until a condition built from observable
 * points holds -- a thread parked in the seam or on the fake clock, a queue empty, counters
 * equal. Every place that changes one of those points calls {@link FakeClock#tick()}; the wait
 * also re-checks every millisecond, so a missed wake-up costs at most that.
 */
final class Barrier {
  /** Real time: only a guard against a thread that never parks again (an adapter bug). */
  static final long GUARD_NS = 4_000_000_000L;

  private Barrier() {}

  static void await(String what, BooleanSupplier quiet) {
    long giveUp = System.nanoTime() + GUARD_NS;
    while (!quiet.getAsBoolean()) {
      if (System.nanoTime() > giveUp) {
        throw new Refused("internal", "no quiescence: " + what);
      }
      synchronized (FakeClock.LOCK) {
        try {
          FakeClock.LOCK.wait(1);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new Refused("internal", "interrupted while waiting for " + what);
        }
      }
    }
  }
}
