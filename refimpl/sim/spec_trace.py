"""Trace fields for spec/Informer.tla and InformerAtomic.tla (variables ``history``,
``reflector``, ``view``, ``lastRV``): a recording handler and the reflector's phase. Owns
only the recorder's two maps; never writes to the server, the informer or the chooser,
so asking for the fields (``Simulator(spec_trace=True)``) never changes a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.reflector import WaitForEvent, WaitUntil
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key
from refimpl.sim.informer import SimInformer
from refimpl.sim.trace_schema import Answer, SpecRecord

__all__ = ["SPEC_LISTENER", "SpecRecorder", "spec_fields", "spec_phase"]

#: The listener whose pending notifications and handler the fields describe.
SPEC_LISTENER = "h0"


def _rv(obj: object) -> int:
    """The object's resourceVersion; a tombstone's is its last known object's (0: none)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    return int(obj.resource_version) if isinstance(obj, Object) else 0


class SpecRecorder:
    """A handler that records Informer.tla's ``view`` (key -> rv of the object it
    believes exists; absent after a delete) and ``lastRV`` (key -> rv of the last
    notification handled, a delete's too), then forwards to ``inner`` (may be None)."""

    def __init__(self, inner: ResourceEventHandler[Any] | None = None) -> None:
        self.inner = inner
        self.view: dict[str, int] = {}
        self.last_rv: dict[str, int] = {}

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        key = object_key(obj)
        self.view[key] = self.last_rv[key] = _rv(obj)
        if self.inner is not None:
            self.inner.on_add(obj, is_in_initial_list)

    def on_update(self, old: object, new: object) -> None:
        key = object_key(new)
        self.view[key] = self.last_rv[key] = _rv(new)
        if self.inner is not None:
            self.inner.on_update(old, new)

    def on_delete(self, obj: object) -> None:
        key = object_key(obj)
        self.view.pop(key, None)
        self.last_rv[key] = _rv(obj)
        if self.inner is not None:
            self.inner.on_delete(obj)


def spec_phase(informer: SimInformer, refused: Mapping[int, bool]) -> str:
    """Informer.tla's ``reflector``: "list" before the first step and in the backoff
    before a relist; "connect" while a watch request is unanswered -- backing off after
    a failed watch request (watch-retry), or holding a watch the server opened with a
    410 (``refused[watch id]``) that the reflector has not read yet; "watch" while it
    reads an open watch. Any other park point is returned as its own name (no spec
    models it: "stopped", "watch-list-retry")."""
    r = informer.reflector
    if r is None or (r.waiting is None and not r.done):
        return "list"  # not started: its first step lists
    if r.done:
        return "stopped"
    wait = r.waiting
    if isinstance(wait, WaitUntil):
        return {"backoff": "list", "watch-retry": "connect"}.get(wait.reason, wait.reason)
    assert isinstance(wait, WaitForEvent)
    watch = informer.current_watch()
    if watch is None:
        return "unknown watch"
    return "connect" if refused.get(watch.id, False) else "watch"


def spec_fields(
    writes: Sequence[tuple[str, str, int]],
    phase: str,
    recorder: SpecRecorder,
    *,
    fifo_synced: bool,
    answers: Sequence[Answer] = (),
) -> SpecRecord:
    """The trace line's ``spec`` object (resourceVersions as the server numbers them):
    also the FIFO's own ``has_synced`` (the specs' ``synced``: a DeltaFIFO's turns true
    at the pop, before the informer re-checks it after processing) and ``answers``,
    what the reflector got from the server in this step ("listed", "opened", "gone",
    "ended"; see ``Simulator._reflector``)."""
    return {
        "history": list(writes),
        "phase": phase,
        "listener": SPEC_LISTENER,
        "view": dict(sorted(recorder.view.items())),
        "lastRV": dict(sorted(recorder.last_rv.items())),
        "fifoSynced": fifo_synced,
        "answers": list(answers),
    }
