"""What every core answers when its shell would have to wait.

The cores (``refimpl/workqueue/core.py``, ``refimpl/cache/delta_fifo.py``,
``refimpl/cache/real_fifo.py``) never block: where client-go's code would wait on a
condition variable (``Get`` on an empty queue, ``Pop`` on an empty FIFO), the core
raises :class:`WouldBlock` and its shell waits until the core's ``can_*`` predicate
holds. A neutral module, so the informer stack does not import the work queue for it.
In the TLA+ specs such a call is an action whose enabling condition is false.
"""

from __future__ import annotations

__all__ = ["WouldBlock"]


class WouldBlock(Exception):
    """A core was asked for an item it does not have yet (an empty queue or FIFO that
    is not shutting down or closed).

    The core never blocks; its shell waits until the core's ``can_get()`` / ``can_pop()``
    is true instead.
    """
