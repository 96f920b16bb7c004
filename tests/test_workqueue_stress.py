"""Threaded stress on the queue shells: real threads, bounded, seeded.

The seed fixes every random choice the test makes (keys, work, re-adds); thread
scheduling is the part it cannot fix, which is the point. A short GIL switch interval
makes the threads interleave far more often than by default. Checked properties:

* no two workers ever hold the same item at once (holders tracked under their own lock);
* every key is processed after its last add (a global sequence number is taken just
  *before* each add and just *after* each get; a correct queue hands the key out after
  the last add, so some processing start must come later);
* no spurious deliveries: a key is handed out at most as often as it was added;
* shut_down_with_drain returns only after every worker holding an item has called done.
"""

from __future__ import annotations

import itertools
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from refimpl.workqueue import ItemExponentialFailureRateLimiter, Queue, RateLimitingQueue

if TYPE_CHECKING:
    from conftest import Eventually

SEED = 20260801
KEYS = 48
PRODUCERS = 4
ADDS_PER_PRODUCER = 4000
BOUND = 30.0  # real-time bound on any single wait in these tests

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


@pytest.fixture(autouse=True)
def fast_thread_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _join(threads: list[threading.Thread], seed: int) -> None:
    deadline = time.monotonic() + BOUND
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, f"seed={seed}: threads still running: {alive}"


class Ledger:
    """Everything the threads record, under one lock separate from the queue's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._seq = itertools.count(1)
        self.last_add: dict[int, int] = {}
        self.add_count: dict[int, int] = {}
        self.starts: dict[int, list[int]] = {}
        self.holders: set[int] = set()
        self.max_holders = 0
        self.violations: list[str] = []
        self.errors: list[BaseException] = []

    def before_add(self, key: int) -> None:
        with self.lock:
            self.last_add[key] = next(self._seq)
            self.add_count[key] = self.add_count.get(key, 0) + 1

    def got(self, key: int, worker: int) -> None:
        with self.lock:
            self.starts.setdefault(key, []).append(next(self._seq))
            if key in self.holders:
                self.violations.append(f"worker {worker} got {key} while another holds it")
            self.holders.add(key)
            self.max_holders = max(self.max_holders, len(self.holders))

    def releasing(self, key: int) -> None:
        # Must happen before done(): right after done another worker may get the key.
        with self.lock:
            self.holders.discard(key)

    def check(self, seed: int) -> None:
        deliveries = sum(len(s) for s in self.starts.values())
        print(f"seed={seed}: {deliveries} deliveries, at most {self.max_holders} held at once")
        assert not self.errors, f"seed={seed}: thread errors {self.errors!r}"
        assert not self.violations, f"seed={seed}: {self.violations[:5]}"
        for key, last in self.last_add.items():
            starts = self.starts.get(key, [])
            assert starts and max(starts) > last, (
                f"seed={seed}: key {key} last added at #{last}, processing starts {starts[-3:]}"
            )
            assert len(starts) <= self.add_count[key], (
                f"seed={seed}: key {key} handed out {len(starts)} times "
                f"for {self.add_count[key]} adds"
            )


def _guarded(ledger: Ledger, fn: Callable[[int], None], index: int) -> Callable[[], None]:
    def run() -> None:
        try:
            fn(index)
        except BaseException as exc:
            with ledger.lock:
                ledger.errors.append(exc)

    return run


def _run_stress(q: Any, kind: str, workers: int, seed: int, eventually: Eventually) -> Ledger:
    """Producers add random keys; workers get / (maybe re-add) / done until shutdown."""
    print(f"stress kind={kind} workers={workers} seed={seed}")
    ledger = Ledger()
    readd_allowed = threading.Event()
    readd_allowed.set()

    def producer(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        for n in range(ADDS_PER_PRODUCER):
            key = rng.randrange(KEYS)
            ledger.before_add(key)
            if kind == "delaying" and rng.random() < 0.3:
                q.add_after(key, rng.choice([0.0, 0.0005, 0.002]))
            else:
                q.add(key)
            if n % 64 == 0:
                time.sleep(0)

    def worker(index: int) -> None:
        rng = random.Random(seed * 1000 + 100 + index)
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            ledger.got(key, index)
            try:
                if rng.random() < 0.3:
                    time.sleep(0)  # let others run while we hold the key
                if readd_allowed.is_set() and rng.random() < 0.1:
                    ledger.before_add(key)
                    if kind == "rate_limiting":
                        q.add_rate_limited(key)
                    else:
                        q.add(key)
                elif kind == "rate_limiting":
                    q.forget(key)
            finally:
                ledger.releasing(key)
                q.done(key)

    producer_threads = [
        threading.Thread(target=_guarded(ledger, producer, i), daemon=True)
        for i in range(PRODUCERS)
    ]
    worker_threads = [
        threading.Thread(target=_guarded(ledger, worker, i), daemon=True) for i in range(workers)
    ]
    for t in worker_threads + producer_threads:
        t.start()
    _join(producer_threads, seed)
    readd_allowed.clear()

    def quiescent() -> bool:
        queue, dirty, processing = (q.queue if kind != "plain" else q).snapshot()
        waiting = q.waiting() if kind != "plain" else {}
        return not queue and not dirty and not processing and not waiting

    eventually(quiescent, f"seed={seed}: the queue to empty", BOUND)
    q.shut_down()
    _join(worker_threads, seed)
    return ledger


@pytest.mark.parametrize("workers", [1, 2, 4, 8])
def test_stress_plain_queue(workers: int, eventually: Eventually) -> None:
    seed = SEED + workers
    q: Queue[int] = Queue()
    ledger = _run_stress(q, "plain", workers, seed, eventually)
    ledger.check(seed)
    assert q.get() == (None, True)


@pytest.mark.parametrize("workers", [2, 8])
def test_stress_delaying_queue(workers: int, eventually: Eventually) -> None:
    seed = SEED + 10 + workers
    # Real clock on purpose: tiny real delays exercise the timer thread under load.
    q = RateLimitingQueue[int](ItemExponentialFailureRateLimiter[int](0.0001, 0.002))
    ledger = _run_stress(q, "delaying", workers, seed, eventually)
    ledger.check(seed)


@pytest.mark.parametrize("workers", [4])
def test_stress_rate_limiting_queue(workers: int, eventually: Eventually) -> None:
    seed = SEED + 20 + workers
    q = RateLimitingQueue[int](ItemExponentialFailureRateLimiter[int](0.0001, 0.002))
    ledger = _run_stress(q, "rate_limiting", workers, seed, eventually)
    ledger.check(seed)


@pytest.mark.parametrize("workers", [1, 2, 4, 8])
def test_drain_waits_for_workers_holding_items(workers: int, eventually: Eventually) -> None:
    """Workers hold items while shut_down_with_drain is called; it must not return
    before each of them has called done, even when those done() calls re-queue their
    item. Workers keep processing queued items after the shutdown (they are still
    handed out), so everything ends processed."""
    seed = SEED + 30 + workers
    print(f"drain workers={workers} seed={seed}")
    rng = random.Random(seed)
    q: Queue[int] = Queue()
    seq = itertools.count(1)
    lock = threading.Lock()
    hold = threading.Event()
    held: dict[int, int] = {}  # worker -> key it holds
    releases = [threading.Event() for _ in range(workers)]
    done_called: dict[int, int] = {}  # worker -> sequence number just before done()
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            while True:
                key, shutdown = q.get()
                if shutdown or key is None:
                    return
                with lock:
                    holding = hold.is_set() and index not in held
                    if holding:
                        held[index] = key
                if holding:
                    assert releases[index].wait(BOUND), "never released"
                    with lock:
                        done_called[index] = next(seq)
                q.done(key)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=worker, args=(i,), daemon=True, name=f"w{i}")
        for i in range(workers)
    ]
    for t in threads:
        t.start()
    for _ in range(200):
        q.add(rng.randrange(1000))
    hold.set()
    for k in range(1000, 1000 + 4 * workers):
        q.add(k)
    eventually(lambda: len(held) == workers, f"seed={seed}: every worker to hold an item", BOUND)
    for k in range(2000, 2020):
        q.add(k)  # queued, not started: not waited for by the drain
    order = list(range(workers))
    rng.shuffle(order)
    # Re-add some held keys, always including the one released last: those done()
    # calls re-queue their item, and the drain must still return after the last one.
    readd = {order[-1]} | {i for i in order if rng.random() < 0.5}
    for index in sorted(readd):
        q.add(held[index])

    returned: list[int] = []

    def drain() -> None:
        q.shut_down_with_drain()
        with lock:
            returned.append(next(seq))

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    for n, index in enumerate(order):
        time.sleep(0.02)  # real time for a wrongly returning drain to show itself
        with lock:
            assert not returned, f"seed={seed}: drain returned while {workers - n} held items"
        releases[index].set()
    drainer.join(BOUND)
    assert not drainer.is_alive(), f"seed={seed}: drain did not return"
    assert returned[0] > max(done_called.values()), f"seed={seed}: drain returned before done"
    _join(threads, seed)
    assert not errors, f"seed={seed}: {errors!r}"
    assert q.snapshot() == ([], frozenset(), frozenset())
