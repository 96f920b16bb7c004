"""Ctrl-C and SIGTERM during ``refimpl conform``: the run ends, the adapter's process group
with it, and no verdict is printed.

Python's own SIGINT handler raises KeyboardInterrupt wherever the main thread happens to
be. In a conformance run that can be inside Hypothesis's garbage-collection callback
(where the exception is printed and dropped, and the run goes on to a verdict) or
between writing a request and reading its answer (the next exchange then reads a stale
answer and blames the adapter). When the whole process group gets the signal (a
terminal's Ctrl-C), the adapter dies with it and the harness reports a crash.

So, inside :func:`interruptible`, a signal only records itself; the adapter process code
(:mod:`refimpl.conformance.process`) calls :func:`check` where a request can stop
cleanly — before sending, while waiting for an answer, and before calling the adapter
dead — and the run loop calls it before printing. :class:`Interrupted` then unwinds to
the code that closes the adapter (EOF, SIGTERM to its group, then SIGKILL), and
``refimpl.cli.main`` exits 130 (SIGINT) or 143 (SIGTERM). Outside :func:`interruptible`
:func:`check` does nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Interrupted", "check", "interruptible"]

#: The signal received since :func:`interruptible` was entered, or None.
_received: int | None = None


class Interrupted(KeyboardInterrupt):
    """The run was interrupted by ``signum``: unwind, end the adapter, print no verdict."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _record(signum: int, _frame: FrameType | None) -> None:
    global _received
    if _received is not None:
        # A second signal: whatever holds the run up, do not wait for it any longer.
        raise Interrupted(signum)
    _received = signum


def check() -> None:
    """Raise :class:`Interrupted` if a signal came since :func:`interruptible` began."""
    if _received is not None:
        raise Interrupted(_received)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Record SIGINT and SIGTERM instead of acting on them at once (main thread only;
    elsewhere signal handlers cannot be set, and the defaults stay)."""
    global _received
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received = None
    previous = {s: signal.signal(s, _record) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
        check()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _received = None
