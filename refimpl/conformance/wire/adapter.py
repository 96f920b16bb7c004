"""The reference's wire adapter: ``python -m refimpl.conformance.wire.adapter``.

A protocol-2 adapter (docs/protocol.md, "Wire mode") whose informer is refimpl's own
:class:`~refimpl.cache.shared_informer.SharedIndexInformer`, threads and all, over
:class:`~refimpl.wire.client.HttpListerWatcher`: on ``start`` it reads the kubeconfig
the harness names and lists and watches the harness's server over HTTP. Its handlers
record each call with what the cache held at that moment; ``state`` answers at once
with the calls since the last one, ``has_synced`` and the whole cache (the harness polls:
in wire mode there is no quiescence to wait for).

``--break MODE`` makes a broken adapter for the harness's own tests: ``notify-first``
runs each handler before its store write, ``ignore-deleted`` drops DELETED watch events
(a ghost until a relist), ``relist-at-0`` asks every list and watch-list stream for
resourceVersion "0" (a relist may go back in time: REF-1), ``hang`` never answers
after ``start``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import attrs

from refimpl import __version__
from refimpl.cache.deltas import Delta
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.shared_informer import SharedIndexInformer
from refimpl.conformance.protocol import PROTOCOL_VERSION, error_response, ok_response
from refimpl.conformance.reference.adapter import serve
from refimpl.conformance.reference.cache import to_json
from refimpl.conformance.reference.informer import RecordingHandler
from refimpl.meta import ListOptions, ListResult
from refimpl.watch import DELETED, WatchEvent
from refimpl.wire.client import HttpListerWatcher, HttpWatch, load_kubeconfig

__all__ = ["BREAKS", "WireAdapter", "main"]

BREAKS = ("notify-first", "ignore-deleted", "relist-at-0", "hang")
METHODS = ("add_handler", "start", "state")
#: Seconds ``notify-first`` holds a delta's store write after notifying.
NOTIFY_FIRST_LAG = 0.05


class _LateStore:
    """A store whose writes land one step late: each is applied before the next read or
    write, or at the end, so the handler notified after a write runs before it."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._pending: list[Callable[[], None]] = []

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        for write in pending:
            write()

    def __getattr__(self, name: str) -> Any:
        self.flush()
        attr = getattr(self._store, name)
        if name not in ("add", "update", "delete", "replace"):
            return attr
        return lambda *args: self._pending.append(lambda: attr(*args))


class _NotifyFirstInformer(SharedIndexInformer[Any]):
    def handle_deltas(self, deltas: Sequence[Delta], is_in_initial_list: bool) -> None:
        with self.block_deltas:
            late = _LateStore(self.indexer)
            process_deltas(self, cast(Any, late), deltas, is_in_initial_list)
            time.sleep(NOTIFY_FIRST_LAG)  # the listener runs before the write lands
            late.flush()


class _NoDeletes:
    """A watch that drops DELETED events."""

    def __init__(self, watch: HttpWatch) -> None:
        self._watch = watch

    def next_event(self, timeout: float | None = None) -> WatchEvent | None:
        while True:
            event = self._watch.next_event(timeout)
            if event is None or event.type != DELETED:
                return event

    def stop(self) -> None:
        self._watch.stop()


class _IgnoreDeleted(HttpListerWatcher):
    def watch(self, options: ListOptions) -> HttpWatch:
        return cast(HttpWatch, _NoDeletes(super().watch(options)))


class _RelistAtZero(HttpListerWatcher):
    """Every list and watch-list stream at resourceVersion "0"."""

    def list(self, options: ListOptions) -> ListResult:
        return super().list(attrs.evolve(options, resource_version="0"))

    def watch(self, options: ListOptions) -> HttpWatch:
        if options.send_initial_events:
            options = attrs.evolve(options, resource_version="0")
        return super().watch(options)


_LISTER_WATCHERS = {"ignore-deleted": _IgnoreDeleted, "relist-at-0": _RelistAtZero}


class _Calls:
    """The handler calls recorded (from the listeners' threads) since the last read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[dict[str, Any]] = []

    def append(self, call: dict[str, Any]) -> None:
        with self._lock:
            self._calls.append(call)

    def take(self) -> list[dict[str, Any]]:
        with self._lock:
            calls, self._calls = self._calls, []
        return calls


class WireAdapter:
    """Answers protocol requests for one wire-mode informer (``instance`` any name)."""

    def __init__(
        self, broken: str | None = None, quiescence: float | None = None, tls: bool = False
    ) -> None:
        self.broken = broken
        self.quiescence = quiescence
        self.tls = tls
        self._reset()

    def _reset(self) -> None:
        self.calls = _Calls()  # RecordingHandler appends here
        self.informer: SharedIndexInformer[Any] | None = None
        self._handlers: list[tuple[str, bool]] = []
        self._resync = 0.0
        self._stop = threading.Event()

    def handle(self, request: Any) -> dict[str, Any]:
        rid = request.get("id") if isinstance(request, dict) else None
        try:
            return ok_response(rid, self._dispatch(request))
        except (KeyError, TypeError, ValueError, OSError) as exc:
            return error_response(rid, "bad_request", f"{type(exc).__name__}: {exc}")

    def _dispatch(self, request: dict[str, Any]) -> Any:
        op = request["op"]
        if op == "hello":
            return self._hello()
        if op == "reset":
            self.close()
            self._reset()
            return None
        if op == "create":
            if request["component"] != "informer":
                raise ValueError(f"no component {request['component']!r} here")
            self._resync = float((request.get("options") or {}).get("resync", 0))
            return None
        if op != "call":
            raise ValueError(f"unknown op {op!r}")
        args = request.get("args") or {}
        method = request["method"]
        if method == "add_handler":
            self._handlers.append((str(args["name"]), bool(args.get("raises"))))
        elif method == "start":
            self._start(str(args["kubeconfig"]))
        elif method != "state":
            raise ValueError(f"unsupported method {method!r}")
        return self._observation()

    def _hello(self) -> dict[str, Any]:
        informer: dict[str, Any] = {"methods": list(METHODS), "behaves_like": None, "wire": True}
        if self.quiescence is not None:
            informer["quiescence_seconds"] = self.quiescence
        if self.tls:
            informer["tls"] = True
        return {
            "protocol": PROTOCOL_VERSION,
            "name": "refimpl-wire",
            "version": __version__,
            "implementation": f"refimpl {__version__} informer over refimpl.wire.client",
            "components": {"informer": informer},
        }

    def _start(self, kubeconfig: str) -> None:
        config = load_kubeconfig(kubeconfig)
        lw = _LISTER_WATCHERS.get(self.broken or "", HttpListerWatcher)(config)
        cls = _NotifyFirstInformer if self.broken == "notify-first" else SharedIndexInformer
        # The "late" store is per-delta: batch processing would bypass handle_deltas.
        informer = cls(lw, resync_period=self._resync, batch=self.broken != "notify-first")
        for name, raises in self._handlers:
            informer.add_event_handler(RecordingHandler(name, raises, cast(Any, self)))
        self.informer = informer
        informer.start(self._stop)

    def _observation(self) -> dict[str, Any]:
        if self.broken == "hang" and self.informer is not None:
            time.sleep(3600)
        informer = self.informer
        calls = self.calls.take()
        objects = informer.indexer.list() if informer is not None else []
        cache = sorted(objects, key=lambda o: (o.namespace, o.name))
        return {
            "waiting": {"op": "wire"},
            "has_synced": informer.has_synced() if informer else False,
            "cache": [to_json(o) for o in cache],
            "calls": calls,
        }

    def close(self) -> None:
        self._stop.set()


USAGE = (
    "usage: python -m refimpl.conformance.wire.adapter [--wire] [--tls] [--break MODE] "
    "[--quiescence SECONDS]\n"
    "  --wire                accepted and ignored (always wire: the peers' adapters take it)\n"
    "  --tls                 ask the harness for HTTPS (its kubeconfig then holds a CA)\n"
    f"  --break MODE          a broken adapter: {', '.join(BREAKS)}\n"
    "  --quiescence SECONDS  the convergence bound declared (default: the harness's)"
)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    broken: str | None = None
    quiescence: float | None = None
    tls = False
    try:
        while args:
            if args[0] in ("--wire", "--tls"):  # --wire: what --client-go's wire run appends
                tls = tls or args.pop(0) == "--tls"
                continue
            flag, value = args.pop(0), args.pop(0)
            if flag == "--break" and value in BREAKS:
                broken = value
            elif flag == "--quiescence":
                quiescence = float(value)
            else:
                raise ValueError(flag)
    except (IndexError, ValueError):
        print(USAGE, file=sys.stderr)
        return 2
    adapter = WireAdapter(broken, quiescence, tls)
    try:
        return serve(cast(Any, adapter), sys.stdin.buffer, sys.stdout.buffer)
    finally:
        adapter.close()


if __name__ == "__main__":
    sys.exit(main())
