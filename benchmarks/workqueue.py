"""Cost of the work queue against tight floors and against client-go, in one run.

Prints, per cycle (one thread, 100 string keys, as benchmarks/go/main.go does):

* add -> get -> done on QueueCore, against a deque + two sets floor and client-go's
  ``workqueue.NewTyped`` (targets <= 1.3x the floor, <= 2.0x Go);
* the same on the threaded Queue shell, against that floor plus one lock and one
  condition that is notified only when someone waits (targets <= 1.2x, <= 7x Go);
* ``add_rate_limited`` + ``forget`` on a RateLimitingQueue with the default controller
  limiter, against client-go's ``NewTypedRateLimitingQueue`` (target <= 3x Go);

and the shell's throughput with one producer and 1, 2 and 4 worker threads, beside
Go's with as many goroutines. The floors are written out flat (no ``super()`` calls),
so the ratios are not flattered by a slow floor.

Go figures come from benchmarks/go (its own module, pinning k8s.io/client-go), built
into a temporary directory when a ``go`` toolchain is on PATH; without one, or with
``--no-go``, only the Python figures print.

Run: ``.venv/bin/python benchmarks/workqueue.py [--cycles N] [--repeat R] [--rounds K]``.
Each figure is the best of R repeats (least disturbed by the rest of the machine); with
K > 1 rounds the whole set is measured K times, Go interleaved with Python, and the
table shows each figure's median over the rounds. ``--cpu`` times the per-cycle figures
in process CPU time on both sides (steadier when other work shares the machine). A
script, never a timed test.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from refimpl.workqueue import Queue, QueueCore, RateLimitingQueue

GO_MODULE = Path(__file__).resolve().parent / "go"
KEYS = [f"key-{i}" for i in range(100)]


class FloorQueue:
    """The least a dirty/processing queue can do: a deque and two sets."""

    def __init__(self) -> None:
        self.queue: deque[str] = deque()
        self.dirty: set[str] = set()
        self.processing: set[str] = set()

    def add(self, item: str) -> None:
        if item in self.dirty:
            return
        self.dirty.add(item)
        if item in self.processing:
            return
        self.queue.append(item)

    def get(self) -> str:
        item = self.queue.popleft()
        self.processing.add(item)
        self.dirty.discard(item)
        return item

    def done(self, item: str) -> None:
        self.processing.discard(item)
        if item in self.dirty:
            self.queue.append(item)


class LockedFloorQueue:
    """The floor plus what any thread-safe version needs: one lock and one condition,
    notified only when a getter waits. Written flat: no calls into FloorQueue."""

    def __init__(self) -> None:
        self.queue: deque[str] = deque()
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.waiting = 0

    def add(self, item: str) -> None:
        with self.lock:
            if item in self.dirty:
                return
            self.dirty.add(item)
            if item in self.processing:
                return
            self.queue.append(item)
            if self.waiting:
                self.cond.notify()

    def get(self) -> str:
        with self.lock:
            if not self.queue:
                self.waiting += 1
                while not self.queue:
                    self.cond.wait()
                self.waiting -= 1
            item = self.queue.popleft()
            self.processing.add(item)
            self.dirty.discard(item)
            return item

    def done(self, item: str) -> None:
        with self.lock:
            self.processing.discard(item)
            if item in self.dirty:
                self.queue.append(item)
                if self.waiting:
                    self.cond.notify()


#: What per-cycle figures count: wall time, or (``--cpu``) the process's CPU time.
TIMER: Callable[[], float] = time.perf_counter


def best_of(repeat: int, fn: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = TIMER()
        fn()
        best = min(best, TIMER() - started)
    return best


def floor_cycles(
    make: Callable[[], FloorQueue | LockedFloorQueue],
) -> Callable[[int], Callable[[], None]]:
    """add -> get -> done, ``cycles`` times, on a fresh floor (its get returns the item)."""

    def cycles_of(cycles: int) -> Callable[[], None]:
        def run() -> None:
            q = make()
            add, get, done = q.add, q.get, q.done
            keys = KEYS
            for i in range(cycles):
                add(keys[i % 100])
                done(get())

        return run

    return cycles_of


def queue_cycles(
    make: Callable[[], QueueCore[str] | Queue[str]],
) -> Callable[[int], Callable[[], None]]:
    """add -> get -> done, ``cycles`` times, on a fresh refimpl queue (its get returns
    ``(item, shutdown)``)."""

    def cycles_of(cycles: int) -> Callable[[], None]:
        def run() -> None:
            q = make()
            add, get, done = q.add, q.get, q.done
            keys = KEYS
            for i in range(cycles):
                add(keys[i % 100])
                item, _ = get()
                done(item)  # type: ignore[arg-type]

        return run

    return cycles_of


cycle_floor = floor_cycles(FloorQueue)
cycle_core = queue_cycles(QueueCore)
cycle_locked_floor = floor_cycles(LockedFloorQueue)
cycle_shell = queue_cycles(Queue)


def cycle_rate_limited(cycles: int) -> Callable[[], None]:
    def run() -> None:
        q: RateLimitingQueue[str] = RateLimitingQueue()
        add_rate_limited, forget = q.add_rate_limited, q.forget
        keys = KEYS
        try:
            for i in range(cycles):
                key = keys[i % 100]
                add_rate_limited(key)
                forget(key)
        finally:
            q.shut_down()

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


def build_go(workdir: Path) -> Path | None:
    """Build benchmarks/go into ``workdir``; None (and why, on stderr) if impossible."""
    go = shutil.which("go")
    if go is None:
        print("no go toolchain on PATH: Go figures skipped", file=sys.stderr)
        return None
    binary = workdir / "wqbench"
    built = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=GO_MODULE,
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        print(f"go build failed: Go figures skipped\n{built.stderr}", file=sys.stderr)
        return None
    return binary


def run_go(binary: Path, cycles: int, repeat: int, cpu: bool) -> dict[str, float]:
    """One run of the Go program: ns per cycle, and items/s as ``throughput-<workers>``."""
    out = subprocess.run(
        [str(binary), f"--cycles={cycles}", f"--repeat={repeat}", f"--cpu={str(cpu).lower()}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    figures: dict[str, float] = {}
    for line in out.splitlines():
        record = json.loads(line)
        if record["name"] == "throughput":
            figures[f"throughput-{record['workers']}"] = record["items_per_second"]
        else:
            figures[record["name"]] = record["ns_per_cycle"]
    return figures


def run_python(cycles: int, repeat: int) -> dict[str, float]:
    """One round of the Python figures: ns per cycle, items/s as ``throughput-<w>``."""
    figures = {
        name: best_of(repeat, make(cycles)) / cycles * 1e9
        for name, make in (
            ("floor", cycle_floor),
            ("core", cycle_core),
            ("locked", cycle_locked_floor),
            ("shell", cycle_shell),
            ("rate_limited", cycle_rate_limited),
        )
    }
    for workers in (1, 2, 4):
        figures[f"throughput-{workers}"] = max(
            throughput(workers, cycles) for _ in range(max(1, repeat // 2))
        )
    return figures


def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cycles", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1, help="report medians over rounds")
    parser.add_argument("--no-go", action="store_true", help="skip the client-go figures")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="per-cycle figures in process CPU time (all threads) on both sides, not wall "
        "time: steadier on a shared machine; throughput stays wall time",
    )
    args = parser.parse_args()
    n, r, k = args.cycles, args.repeat, max(1, args.rounds)
    global TIMER
    if args.cpu:
        TIMER = time.process_time

    with tempfile.TemporaryDirectory(prefix="wqbench-") as tmp:
        binary = None if args.no_go else build_go(Path(tmp))
        py_rounds: list[dict[str, float]] = []
        go_rounds: list[dict[str, float]] = []
        for _ in range(k):
            if binary is not None:
                go_rounds.append(run_go(binary, n, r, args.cpu))
            py_rounds.append(run_python(n, r))
    py = medians(py_rounds)
    go = medians(go_rounds) if go_rounds else None

    how = f"best of {r}" + (f", median of {k} rounds" if k > 1 else "")
    how += ", process CPU time" if args.cpu else ", wall time"
    print(f"one thread, 100 string keys, {n} cycles, {how}")
    print(f"{'what':38s} {'ns/cycle':>9s} {'vs floor':>9s} {'vs Go':>7s} {'targets':>16s}")

    def row(name: str, ns: float, floor: float | None, go_ns: float | None, target: str) -> None:
        vs_floor = f"{ns / floor:.2f}x" if floor else ""
        vs_go = f"{ns / go_ns:.2f}x" if go_ns else ""
        print(f"{name:38s} {ns:9.0f} {vs_floor:>9s} {vs_go:>7s} {target:>16s}")

    go_queue = go["queue"] if go else None
    go_rl = go["rate_limited"] if go else None
    row("floor: deque + 2 sets", py["floor"], None, None, "")
    row("add/get/done: QueueCore", py["core"], py["floor"], go_queue, "<=1.3x, <=2.0x")
    row("floor + lock + waiter-only condition", py["locked"], None, None, "")
    row("add/get/done: Queue (threaded shell)", py["shell"], py["locked"], go_queue, "<=1.2x, <=7x")
    row("add_rate_limited + forget", py["rate_limited"], None, go_rl, "<=3x Go")
    if go:
        row("client-go: add/get/done", go["queue"], None, None, "")
        row("client-go: AddRateLimited + Forget", go["rate_limited"], None, None, "")

    print(f"\nthroughput, 1 producer, {n} distinct items")
    header = ("workers", "Queue items/s", "vs 1 worker", "Go items/s", "Go/Py")
    print("{:>7s} {:>14s} {:>12s} {:>12s} {:>7s}".format(*header))
    for workers in (1, 2, 4):
        rate = py[f"throughput-{workers}"]
        go_rate = go[f"throughput-{workers}"] if go else None
        go_s = f"{go_rate:12,.0f}" if go_rate else f"{'':12s}"
        ratio = f"{go_rate / rate:6.1f}x" if go_rate else ""
        print(f"{workers:7d} {rate:14,.0f} {rate / py['throughput-1']:11.2f}x {go_s} {ratio:>7s}")


if __name__ == "__main__":
    main()
