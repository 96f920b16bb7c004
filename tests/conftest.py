"""Shared fixtures for the test suite.

``fake_clock`` gives a fresh :class:`~refimpl.clock.FakeClock`; ``eventually`` waits (in
*real* time, bounded) for a condition that another thread must make true -- it never
lets virtual time pass, it only gives a woken thread the moment it needs to run;
``in_thread`` runs a blocking call in a daemon thread so a test can bound it;
``shut_down_later`` shuts queues down at teardown so no timer thread outlives its test;
``dq`` is a DelayingQueue on ``fake_clock`` that is shut down so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest

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
