"""Cost of the work queue against floors measured in the same run.

Prints, for an add -> get -> done cycle:
* the core (QueueCore) against a minimal deque + two sets queue (target <= 1.5x);
* the threaded shell (Queue) against that floor plus one lock and one condition
  (target <= 2x);
and the shell's throughput with 1, 2 and 4 worker threads.

Run: ``.venv/bin/python benchmarks/workqueue.py [--cycles N] [--repeat R]``.
Each figure is the best of R repeats (least disturbed by the rest of the machine).
"""

from __future__ import annotations

import argparse
import threading
import time
from collections import deque
from collections.abc import Callable

from refimpl.workqueue import Queue, QueueCore


class FloorQueue:
    """The least a dirty/processing queue can do: a deque and two sets."""

    def __init__(self) -> None:
        self.queue: deque[int] = deque()
        self.dirty: set[int] = set()
        self.processing: set[int] = set()

    def add(self, item: int) -> None:
        if item in self.dirty:
            return
        self.dirty.add(item)
        if item in self.processing:
            return
        self.queue.append(item)

    def get(self) -> int:
        item = self.queue.popleft()
        self.processing.add(item)
        self.dirty.discard(item)
        return item

    def done(self, item: int) -> None:
        self.processing.discard(item)
        if item in self.dirty:
            self.queue.append(item)


class LockedFloorQueue(FloorQueue):
    """The floor plus what any thread-safe version needs: one lock, one condition."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)

    def add(self, item: int) -> None:
        with self.lock:
            super().add(item)
            self.cond.notify()

    def get(self) -> int:
        with self.lock:
            while not self.queue:
                self.cond.wait()
            return super().get()

    def done(self, item: int) -> None:
        with self.lock:
            super().done(item)


def best_of(repeat: int, fn: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def cycle_floor(cycles: int) -> Callable[[], None]:
    def run() -> None:
        q = FloorQueue()
        add, get, done = q.add, q.get, q.done
        for i in range(cycles):
            add(i & 1023)
            done(get())

    return run


def cycle_core(cycles: int) -> Callable[[], None]:
    def run() -> None:
        q: QueueCore[int] = QueueCore()
        add, get, done = q.add, q.get, q.done
        for i in range(cycles):
            add(i & 1023)
            item, _ = get()
            done(item)  # type: ignore[arg-type]

    return run


def cycle_locked_floor(cycles: int) -> Callable[[], None]:
    def run() -> None:
        q = LockedFloorQueue()
        add, get, done = q.add, q.get, q.done
        for i in range(cycles):
            add(i & 1023)
            done(get())

    return run


def cycle_shell(cycles: int) -> Callable[[], None]:
    def run() -> None:
        q: Queue[int] = Queue()
        add, get, done = q.add, q.get, q.done
        for i in range(cycles):
            add(i & 1023)
            item, _ = get()
            done(item)  # type: ignore[arg-type]

    return run


def throughput(workers: int, items: int) -> float:
    """Items per second through the shell: one producer, ``workers`` consumers."""
    q: Queue[int] = Queue()

    def work() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            q.done(item)  # type: ignore[arg-type]

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for i in range(items):
        q.add(i)
    q.shut_down()
    for t in threads:
        t.join()
    return items / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cycles", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, r = args.cycles, args.repeat

    floor = best_of(r, cycle_floor(n))
    core = best_of(r, cycle_core(n))
    locked = best_of(r, cycle_locked_floor(n))
    shell = best_of(r, cycle_shell(n))

    print(f"add -> get -> done, {n} cycles, best of {r}")
    print(f"{'what':34s} {'ns/cycle':>10s} {'ratio':>7s} {'target':>7s}")
    rows = [
        ("floor: deque + 2 sets", floor, None, None),
        ("QueueCore", core, core / floor, 1.5),
        ("floor + lock + condition", locked, None, None),
        ("Queue (threaded shell)", shell, shell / locked, 2.0),
    ]
    for name, secs, ratio, target in rows:
        ratio_s = f"{ratio:.2f}x" if ratio is not None else ""
        target_s = f"<={target}x" if target is not None else ""
        print(f"{name:34s} {secs / n * 1e9:10.0f} {ratio_s:>7s} {target_s:>7s}")

    print(f"\nshell throughput, 1 producer, {n} distinct items")
    print(f"{'workers':>7s} {'items/s':>12s} {'vs 1 worker':>12s}")
    base = 0.0
    for workers in (1, 2, 4):
        rate = max(throughput(workers, n) for _ in range(max(1, r // 2)))
        base = base or rate
        print(f"{workers:7d} {rate:12,.0f} {rate / base:11.2f}x")


if __name__ == "__main__":
    main()
