"""Shared fixtures for the test suite.

``fake_clock`` gives a fresh :class:`~refimpl.clock.FakeClock`; ``eventually`` waits (in
*real* time, bounded) for a condition that another thread must make true -- it never
lets virtual time pass, it only gives a woken thread the moment it needs to run;
``in_thread`` runs a blocking call in a daemon thread so a test can bound it;
``shut_down_later`` shuts queues down at teardown so no timer thread outlives its test;
``dq`` is a DelayingQueue on ``fake_clock`` that is shut down so. Under pytest-xdist
the workers share results through worker_share.py (a folder set up here), and the tests
known to take long are handed out first (``pytest_collection_modifyitems``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest
import worker_share

from refimpl.clock import FakeClock
from refimpl.workqueue import DelayingQueue

#: Real-time bound for anything a test waits for another thread to do.
WAIT_BOUND = 5.0


class _ShutDownable(Protocol):
    def shut_down(self) -> None: ...


class Eventually(Protocol):
    def __call__(
        self, cond: Callable[[], bool], what: str | Callable[[], str], timeout: float = WAIT_BOUND
    ) -> None: ...


class BackgroundCall:
    """A call running in a daemon thread; ``result()`` waits for it, bounded."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        self._fn = fn
        self._value: Any = None
        self._error: BaseException | None = None
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as exc:  # re-raised in the test thread by result()
            self._error = exc
        finally:
            self.finished.set()

    def done(self) -> bool:
        return self.finished.is_set()

    def result(self, timeout: float = WAIT_BOUND) -> Any:
        if not self.finished.wait(timeout):
            raise AssertionError(f"{self.thread.name} did not return within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._value


def _eventually(
    cond: Callable[[], bool], what: str | Callable[[], str], timeout: float = WAIT_BOUND
) -> None:
    """Poll ``cond`` until it holds; after ``timeout`` s fail, saying ``what`` was awaited
    (a callable ``what`` is asked only then, so it can describe the state at that time)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout} s waiting for: {said}")
        time.sleep(0.001)


@pytest.fixture(scope="session", autouse=True)
def _share_across_workers(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Under pytest-xdist, the folder worker_share.once shares results through: in the
    run's temporary folder, which holds one folder per worker."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / "shared"
        folder.mkdir(exist_ok=True)
        worker_share.FOLDER = folder


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.fixture
def eventually() -> Eventually:
    return _eventually


@pytest.fixture
def in_thread() -> Callable[[Callable[[], Any], str], BackgroundCall]:
    def start(fn: Callable[[], Any], name: str = "background-call") -> BackgroundCall:
        return BackgroundCall(fn, name)

    return start


@pytest.fixture
def no_thread_left() -> Iterator[None]:
    """Fails the test when a thread it started is still running a few seconds after it
    ended. The grace is for threads that are ending, not leaking: an adapter's stderr
    reader returns once the killed child's pipe reaches EOF, a moment after close."""
    before = set(threading.enumerate())
    yield
    left = set(threading.enumerate()) - before
    for thread in left:
        thread.join(timeout=5.0)
    alive = [t.name for t in left if t.is_alive()]
    assert alive == [], alive


@pytest.fixture
def shut_down_later() -> Iterator[Callable[[_ShutDownable], None]]:
    queues: list[_ShutDownable] = []
    yield queues.append
    for q in queues:
        q.shut_down()


@pytest.fixture
def dq(
    fake_clock: FakeClock, shut_down_later: Callable[[_ShutDownable], None]
) -> DelayingQueue[str]:
    """A DelayingQueue of strings on ``fake_clock``, shut down at teardown."""
    queue: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(queue)
    return queue


#: The tests that took the most CPU in a serial run (node id prefixes, the longest first):
#: these 21 of the 2,451 tests took 808 of its 1,424 CPU seconds (machine loaded); the
#: resync replay, the 1.17 era and the installed wheel took 15-21 s each in a later
#: parallel run (main 5990621).
#: Under pytest-xdist they are handed out first: ``--dist worksteal`` gives each worker
#: a contiguous share of the collection and the other steals from its end, so a long
#: test collected last would run alone while the other core idles.
SLOW_FIRST = (
    "tests/test_spec_informer_replay.py::test_informer_refines_spec",
    "tests/test_spec_driven.py::test_reference_follows_every_paused_informer_edge",
    "tests/test_spec_informer_faults_replay.py::test_informer_refines_spec_with_faults",
    "tests/test_spec_driven.py::test_write_pins_writes_what_the_tests_read",
    "tests/test_spec_informer_resync_replay.py::test_informer_refines_spec_with_resync",
    "tests/test_spec_driven.py::test_reference_follows_every_drivable_edge",
    "tests/test_spec_driven.py::test_without_observations_the_same_edges_are_covered",
    "tests/test_eras.py::test_a_1_17_adapter_passes_as_1_17_and_differs_from_the_newest",
    "tests/test_packaging.py::test_the_wheel_installed_outside_the_checkout_runs_the_first",
    "tests/test_spec_informer_replay.py::test_mapping_reads_back_every_state",
    "tests/test_spec_driven.py::test_edges_left_untaken_are_inconclusive_not_a_pass",
    "tests/test_peers_known.py::test_pinned_findings_and_known_notes_pass_and_render",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a serial run keeps the files' order

    def rank(item: pytest.Item) -> int:
        return next(
            (i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)),
            len(SLOW_FIRST),
        )

    items.sort(key=rank)  # stable: the rest keep their order
