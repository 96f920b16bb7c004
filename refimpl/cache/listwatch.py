"""How a reflector reaches the server: ListerWatcher, Watch, and the list pager.

Owns no state beyond a pager's page size; never sleeps, reads a clock or starts a
thread (a watch's ``next_event`` may block, as the server that made it decides). Ports
``tools/cache/listwatch.go`` (``Lister``, ``Watcher``, ``ListerWatcher``, ``ListWatch``)
and ``tools/pager/pager.go`` (``ListPager.List``: pages of 500, full-list fallback on an
expired continue token). Below the TLA+ abstraction: ``spec/Informer.tla`` models a
list (all its pages) as one atomic action ``List`` returning the server's current state.
The request and answer types (``ListOptions``, ``ListResult``) live in
``refimpl/meta.py``, watch events in ``refimpl/watch.py``; the lister-watcher over the
in-memory API server is ``refimpl.apiserver.ApiServerListerWatcher``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import attrs

from refimpl.apierrors import Expired
from refimpl.meta import ListOptions, ListResult, Object
from refimpl.watch import WatchEvent

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "ListPager",
    "ListWatch",
    "Lister",
    "ListerWatcher",
    "Watch",
    "Watcher",
]

#: client-go ``pager.defaultPageSize``.
DEFAULT_PAGE_SIZE = 500


@runtime_checkable
class Watch(Protocol):
    """client-go ``watch.Interface``, pull-style.

    ``next_event(timeout)`` returns the next event, or ``None`` once the stream has
    ended (Go: the result channel is closed); it raises
    :class:`~refimpl.watch.WatchTimeout` if nothing arrived within ``timeout`` seconds
    (``0``: do not wait; ``None``: wait forever).
    ``stop()`` ends the watch from the client side: a blocked ``next_event`` returns
    ``None``. Both must be safe to call from different threads.
    """

    def next_event(self, timeout: float | None = None) -> WatchEvent | None: ...
    def stop(self) -> None: ...


class Lister(Protocol):
    def list(self, options: ListOptions) -> ListResult: ...


class Watcher(Protocol):
    def watch(self, options: ListOptions) -> Watch: ...


class ListerWatcher(Lister, Watcher, Protocol):
    """What a reflector needs: ``list`` (errors are exceptions, e.g. ApiError) and
    ``watch`` (start errors are exceptions; errors on an open watch are ERROR events)."""


@attrs.frozen
class ListWatch:
    """A ListerWatcher made of two functions (client-go ``ListWatch``)."""

    list_func: Callable[[ListOptions], ListResult]
    watch_func: Callable[[ListOptions], Watch]

    def list(self, options: ListOptions) -> ListResult:
        return self.list_func(options)

    def watch(self, options: ListOptions) -> Watch:
        return self.watch_func(options)


class ListPager:
    """Lists in pages and joins them (client-go ``pager.ListPager.List``).

    ``page_size`` fills in ``options.limit`` when that is 0; 0 means one unpaginated
    request. Pages after the first are requested with the continue token and no
    resource_version, as the server requires. If a continuation answers 410 with
    reason Expired (exactly ``Expired``, as Go's ``IsResourceExpired``; a plain
    ``Gone`` is not retried) and ``full_list_if_expired`` is set, the pager makes one
    unpaginated request at the originally requested resource_version and returns that.
    Any other error propagates. The joined list carries the first page's
    resource_version.
    """

    def __init__(
        self,
        lister: Lister,
        page_size: int = DEFAULT_PAGE_SIZE,
        *,
        full_list_if_expired: bool = True,
    ) -> None:
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 0:
            raise ValueError(f"page_size must be a non-negative int, got {page_size!r}")
        self.lister = lister
        self.page_size = page_size
        self.full_list_if_expired = full_list_if_expired

    def list(self, options: ListOptions) -> tuple[ListResult, bool]:
        """Returns ``(result, paginated)``: ``paginated`` is true when a continue token
        was followed (client-go's ``paginatedResult``)."""
        opts = options if options.limit else attrs.evolve(options, limit=self.page_size)
        requested_rv = options.resource_version
        items: list[Object] | None = None
        list_rv = ""
        paginated = False
        while True:
            try:
                page = self.lister.list(opts)
            except Expired:
                if not self.full_list_if_expired or not opts.continue_token:
                    raise
                full = attrs.evolve(opts, limit=0, continue_token="", resource_version=requested_rv)
                return self.lister.list(full), paginated
            if not page.continue_token and items is None:
                return page, paginated
            if items is None:
                items = []
                list_rv = page.resource_version
            items.extend(page.items)
            if not page.continue_token:
                return ListResult(tuple(items), list_rv, ""), paginated
            opts = attrs.evolve(opts, continue_token=page.continue_token, resource_version="")
            paginated = True
