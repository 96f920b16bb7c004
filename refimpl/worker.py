"""The worker loop: take a key, reconcile it, report how it went.

Ports the pattern of client-go's ``examples/workqueue`` and ``sample-controller``
(``processNextWorkItem`` / ``handleErr``); client-go itself ships no such helper. Holds no
state of its own: all state is the queue's. Refines the ``Worker`` actions of
``spec/Controller.tla`` (``WorkerGet``, ``Reconcile``, ``WorkerDone``).

Correct use is the easy use here: :func:`process_next_work_item` always calls
``done`` (in a ``finally``), calls ``forget`` only on success or when giving up, and
re-queues with backoff on failure. The two classic mistakes it rules out::

    # 1. forget is not delete (and not done): the key stays "in flight" forever.
    key, _ = queue.get()
    reconcile(key)
    queue.forget(key)          # clears the backoff counter only
    # ... no queue.done(key): every later queue.add(key) just marks it dirty;
    #     no worker ever sees it again, and shut_down_with_drain never returns.

    # 2. an early return that skips done() has the same effect, silently:
    key, _ = queue.get()
    if not ready(key):
        return                 # key is now stuck for the life of the queue
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import Protocol, TypeVar, cast

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "RetryingQueue",
    "process_next_work_item",
    "run_worker",
    "start_workers",
]

T = TypeVar("T", bound=Hashable)

log = logging.getLogger("refimpl.worker")

#: Retries before a key is dropped (client-go's example uses 5).
DEFAULT_MAX_RETRIES = 5


class RetryingQueue(Protocol[T]):
    """What the worker loop needs: a rate-limiting queue's consumer side."""

    def get(self) -> tuple[T | None, bool]: ...
    def done(self, item: T) -> None: ...
    def forget(self, item: T) -> None: ...
    def add_rate_limited(self, item: T) -> None: ...
    def num_requeues(self, item: T) -> int: ...


def process_next_work_item(
    queue: RetryingQueue[T],
    reconcile: Callable[[T], None],
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    on_drop: Callable[[T, Exception], None] | None = None,
) -> bool:
    """Process one key. Returns False once the queue is shut down and empty.

    * success: ``forget(key)`` so the next failure starts from the base delay;
    * failure with fewer than ``max_retries`` requeues: ``add_rate_limited(key)``;
    * failure after that: ``forget(key)`` and drop it (``on_drop`` is told; the key is
      processed again only when something adds it anew).

    ``done(key)`` is called in every case, last. An exception from ``reconcile`` never
    escapes (it is the failure); a ``BaseException`` such as ``KeyboardInterrupt`` still
    calls ``done`` and then propagates.
    """
    item, shutdown = queue.get()
    if shutdown:
        return False
    key = cast(T, item)  # not shut down => an item was handed out
    try:
        reconcile(key)
    except Exception as err:
        if queue.num_requeues(key) < max_retries:
            log.debug("reconcile %r failed, retrying with backoff: %s", key, err)
            queue.add_rate_limited(key)
        else:
            log.warning("dropping %r after %d retries: %s", key, max_retries, err)
            queue.forget(key)
            if on_drop is not None:
                on_drop(key, err)
    else:
        queue.forget(key)
    finally:
        queue.done(key)
    return True


def run_worker(
    queue: RetryingQueue[T],
    reconcile: Callable[[T], None],
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    on_drop: Callable[[T, Exception], None] | None = None,
) -> None:
    """Process keys until the queue is shut down and empty."""
    while process_next_work_item(queue, reconcile, max_retries=max_retries, on_drop=on_drop):
        pass


def start_workers(
    queue: RetryingQueue[T],
    reconcile: Callable[[T], None],
    workers: int,
    *,
    name: str = "worker",
    max_retries: int = DEFAULT_MAX_RETRIES,
    on_drop: Callable[[T, Exception], None] | None = None,
) -> list[threading.Thread]:
    """Start ``workers`` daemon threads running :func:`run_worker`; stop them by shutting
    the queue down (then join the returned threads)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    threads = [
        threading.Thread(
            target=run_worker,
            args=(queue, reconcile),
            kwargs={"max_retries": max_retries, "on_drop": on_drop},
            name=f"{name}-{i}",
            daemon=True,
        )
        for i in range(workers)
    ]
    for thread in threads:
        thread.start()
    return threads
