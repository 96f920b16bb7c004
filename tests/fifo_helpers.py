"""What the DeltaFIFO and RealFIFO tests share beyond cache_helpers' test doubles: the
model state and rules of both state machines, a spying transformer, a failing handler
and the check that a producer waits while process holds the lock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

import pytest
from hypothesis.stateful import rule

from refimpl.cache import Deltas, FIFOClosedError
from refimpl.meta import Object
from refimpl.workqueue import WouldBlock


def fail_handler(deltas: Deltas, initial: bool) -> None:
    """A process function for ``pop`` that always fails, with "handler failed"."""
    raise ValueError("handler failed")


class ClosableCore(Protocol):
    closed: bool

    def close(self) -> None: ...


class FIFOModel:
    """The model state both FIFO state machines keep beside their per-FIFO log: fresh
    objects with rising resourceVersions, and when has_synced must turn true (populated,
    and every entry of the first list processed). Also the rules both machines share."""

    fifo: ClosableCore
    m_populated: bool
    m_remaining: int  # initial entries left to process: the queue right after the first list
    m_synced: bool
    rv: int

    def m_start(self) -> None:
        self.m_populated = False
        self.m_remaining = 0
        self.m_synced = False
        self.rv = 0

    def obj(self, name: str) -> Object:
        self.rv += 1
        return Object(name, resource_version=str(self.rv), data=self.rv)

    def m_populate(self) -> None:
        self.m_populated = True
        self.m_update_synced()

    def m_listed(self, queued: int) -> None:
        """After a replace: the first one sets populated and the initial count."""
        if not self.m_populated:
            self.m_populated = True
            self.m_remaining = queued
            self.m_update_synced()

    def m_processed(self, n: int) -> None:
        if self.m_remaining > 0:
            self.m_remaining -= n
            self.m_update_synced()

    def m_update_synced(self) -> None:
        if self.m_populated and self.m_remaining == 0:
            self.m_synced = True

    def expect_empty(self, take: Callable[[], object]) -> None:
        """Taking from a core with nothing queued: WouldBlock, or FIFOClosedError once
        closed."""
        with pytest.raises(FIFOClosedError if self.fifo.closed else WouldBlock):
            take()

    @rule()
    def close(self) -> None:
        self.fifo.close()


class Recorder:
    """A transformer that records every object it is handed and returns it unchanged."""

    def __init__(self) -> None:
        self.seen: list[object] = []

    def __call__(self, obj: object) -> object:
        self.seen.append(obj)
        return obj


def assert_producer_waits_for_process(
    produce: Callable[[], object], release: threading.Event, consumer: threading.Thread
) -> None:
    """With ``consumer`` parked inside a process function until ``release``: a producer
    started now must still be blocked 0.2 s later (process holds the FIFO lock), and
    both threads must end once process is released."""
    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    producer.join(timeout=0.2)
    assert producer.is_alive(), "producer got the lock while process held it"
    release.set()
    for t in (consumer, producer):
        t.join(timeout=5)
        assert not t.is_alive()
