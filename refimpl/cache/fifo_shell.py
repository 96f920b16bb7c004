"""What the two FIFO shells share: one lock around a core, and waiting for entries.

No logic of its own: every producer call runs the core's method under the lock and then
wakes every waiting popper, as client-go broadcasts on each enqueue (DeltaFIFO and
RealFIFO alike, ``tools/cache/delta_fifo.go`` and ``the_real_fifo.go``). The lock is
re-entrant, so processing may call back into the FIFO without deadlocking. The cores
refine ``spec/DeltaFIFO.tla`` and ``spec/RealFIFO.tla``; this shell only adds waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

from refimpl.cache.deltas import TransformFunc

__all__ = ["FIFOCore", "FIFOShell"]


class FIFOCore(Protocol):
    """The producer side and the state every FIFO core exposes."""

    closed: bool
    transformer: TransformFunc | None

    def add(self, obj: object) -> None: ...
    def update(self, obj: object) -> None: ...
    def delete(self, obj: object) -> None: ...
    def replace(self, objects: Sequence[object], resource_version: str = "") -> None: ...
    def resync(self) -> None: ...
    def close(self) -> None: ...
    def can_pop(self) -> bool: ...
    def has_synced(self) -> bool: ...
    def key_of(self, obj: object) -> str: ...


C = TypeVar("C", bound=FIFOCore)


class FIFOShell(Generic[C]):
    """The thread-safe half of a FIFO; subclasses add ``pop``."""

    def __init__(self, core: C, name: str) -> None:
        self.name = name
        self._core = core
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0

    @property
    def core(self) -> C:
        """The state machine inside (hold no reference across calls: not locked)."""
        return self._core

    # Every producer call wakes all poppers, even when the core raised: client-go
    # broadcasts unconditionally, and a woken popper simply waits again.

    def add(self, obj: object) -> None:
        with self._lock:
            try:
                self._core.add(obj)
            finally:
                self._cond.notify_all()

    def update(self, obj: object) -> None:
        with self._lock:
            try:
                self._core.update(obj)
            finally:
                self._cond.notify_all()

    def delete(self, obj: object) -> None:
        with self._lock:
            try:
                self._core.delete(obj)
            finally:
                self._cond.notify_all()

    def replace(self, objects: Sequence[object], resource_version: str = "") -> None:
        with self._lock:
            try:
                self._core.replace(objects, resource_version)
            finally:
                self._cond.notify_all()

    def resync(self) -> None:
        with self._lock:
            try:
                self._core.resync()
            finally:
                self._cond.notify_all()

    def close(self) -> None:
        """Refuse nothing, wake every popper: they drain what is left, then get
        :class:`~refimpl.cache.deltas.FIFOClosedError`."""
        with self._lock:
            self._core.close()
            self._cond.notify_all()

    def _wait_for_items(self) -> None:
        """Wait (lock held) until an entry is queued or the FIFO is closed."""
        while not self._core.can_pop():
            self._waiting += 1
            try:
                self._cond.wait()
            finally:
                self._waiting -= 1

    def has_synced(self) -> bool:
        with self._lock:
            return self._core.has_synced()

    def is_closed(self) -> bool:
        with self._lock:
            return self._core.closed

    @property
    def transformer(self) -> TransformFunc | None:
        return self._core.transformer

    def key_of(self, obj: object) -> str:
        return self._core.key_of(obj)

    def waiting_poppers(self) -> int:
        """How many pops are parked waiting for an entry."""
        with self._lock:
            return self._waiting
