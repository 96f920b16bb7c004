"""A result computed once per test run, shared by the pytest-xdist workers.

Each xdist worker is a process with its own caches, and ``--dist worksteal`` may hand
two tests that need the same minute-long walk to different workers: each would drive
it. :func:`once` computes a value in the first worker that asks, pickles it into a
folder the run's workers share (conftest.py names it), and the others read it, waiting
on a lock while it is being computed. In a run without xdist it computes in place.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: The run's shared folder (set by conftest.py in xdist workers only); None: no sharing.
FOLDER: Path | None = None


def once(key: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per test run for ``key`` (a text naming exactly what is
    computed: equal keys must mean equal results)."""
    if FOLDER is None:
        return compute()
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    path = FOLDER / f"{name}.pickle"
    with open(FOLDER / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a worker computing it holds the lock
        if path.exists():
            value: T = pickle.loads(path.read_bytes())
            return value
        value = compute()
        written = path.with_suffix(f".{os.getpid()}")
        written.write_bytes(pickle.dumps(value))
        written.replace(path)
        return value
