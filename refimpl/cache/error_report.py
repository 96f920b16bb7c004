"""Errors a user must see: a raising handler or transform, reported the way klog would.

client-go reports these through ``utilruntime.HandleError`` (``apimachinery/pkg/util/
runtime/runtime.go``), which logs with klog -- to stderr unless the program configured
otherwise -- and rate-limits the reports (``rudimentaryErrorBackoff``, 1 ms there); a
handler panic even crashes the process by default (``HandleCrash``). refimpl does not
crash (see ``processor.py``), so it must at least be loud: the first occurrence of each
distinct error (informer, place, exception type and message) is logged at ERROR with its
traceback on the ``refimpl.errors`` logger; repeats are counted and summarised at most
once per :data:`REPEAT_INTERVAL` seconds, so a handler failing on every event does not
flood the terminal.

Where it goes: the ``refimpl`` logger has a NullHandler (a library does not choose its
output), but ``refimpl.errors`` also has :class:`StderrUnlessConfigured`, which writes
to stderr only while the root logger has no handler -- exactly when nothing else would
show the record. An application that configures logging gets the records through its
own handlers instead, once.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["REPEAT_INTERVAL", "ErrorReporter", "StderrUnlessConfigured", "errors_log"]

#: Seconds between two summaries of the same repeating error.
REPEAT_INTERVAL = 10.0

errors_log = logging.getLogger("refimpl.errors")


class StderrUnlessConfigured(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the *current* ``sys.stderr``, and only while logging is unconfigured
    (the root logger has no handler): klog's default, without doubling the output of
    an application that set up its own logging."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("refimpl: %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return
        self.stream = sys.stderr  # pytest and users may swap it after import
        super().emit(record)


if not any(isinstance(h, StderrUnlessConfigured) for h in errors_log.handlers):
    errors_log.addHandler(StderrUnlessConfigured())


class ErrorReporter:
    """Reports errors for one informer: once per distinct error, then summaries.

    ``now`` is real monotonic time by default: the rate limit is about what a person can
    read, not about the informer's (possibly virtual) clock.
    """

    def __init__(
        self,
        owner: str,
        *,
        interval: float = REPEAT_INTERVAL,
        now: Callable[[], float] | None = None,
    ) -> None:
        self.owner = owner
        self.interval = interval
        self._now = now if now is not None else time.monotonic
        self._lock = threading.Lock()
        #: distinct error -> (times seen, times already reported, when last reported)
        self._seen: dict[tuple[str, str, str], tuple[int, int, float]] = {}

    def report(self, where: str, err: BaseException) -> None:
        """Report ``err``, raised in ``where`` (e.g. ``"handler h1 on_add"``)."""
        key = (where, type(err).__name__, str(err))
        now = self._now()
        with self._lock:
            seen, reported, last = self._seen.get(key, (0, 0, -float("inf")))
            seen += 1
            since = seen - reported
            due = seen == 1 or now - last >= self.interval
            if due:
                self._seen[key] = (seen, seen, now)
            else:
                self._seen[key] = (seen, reported, last)
        if not due:
            return
        if seen == 1:
            errors_log.error("informer %s: %s raised %r", self.owner, where, err, exc_info=err)
        else:
            errors_log.error(
                "informer %s: %s raised %r again (%d times since the last report)",
                self.owner,
                where,
                err,
                since,
            )

    def count(self, where: str, err: BaseException) -> int:
        """How many times this distinct error was reported to :meth:`report`."""
        with self._lock:
            return self._seen.get((where, type(err).__name__, str(err)), (0, 0, 0.0))[0]
