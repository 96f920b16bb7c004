"""The refinement mapping from the informer code to spec/InformerResync.tla.

spec/Informer.tla's mapping (:class:`~refimpl.tla.refine_informer.InformerMapping`,
DeltaFIFO) with what InformerResync.tla adds: a second listener, h2, registered after
start; each listener's syncing flag; the reflector's resync timer. The code is the
same as Informer.tla's replay plus client-go's ``sharedProcessor`` resync bookkeeping
(:meth:`~refimpl.cache.processor.SharedProcessor.should_resync` and ``distribute``'s
sync rule), ``AddEventHandlerWithResyncPeriod`` after start
(``InformerCore._register``: the listener is handed an add per cached object) and the
reflector loop's resync wake-up (``Wake.RESYNC``: the loop asks
``should_resync``, and resyncs the FIFO if any listener is due).

The variables Informer.tla's mapping does not cover map as::

    added2, notes2     h2's listener exists; its pending notifications
    view2, lastRV2     h2's recording handler (0 everywhere before it is added)
    syncing            the processor's per-listener syncing flag (h2's is TRUE
                       until it is added, as in the spec)
    resyncNote         the recorded handler call is an update whose old object has
                       the new one's resourceVersion (what makes the informer's
                       on_update a resync)
    resyncs            the replay's count of resync checks (the model's bound)

and the actions::

    AddHandler     InformerCore._register(h2) on a started informer, for every
                   order of the indexer's keys (Go's map order)
    ResyncCheck    the loop, parked on its watch or watch request, is woken at its
                   resync time; for each set of listeners, those in the set have
                   their next resync time at that moment, the others later
    Handle2        h2's listener.dispatch_one()

The clock is the spec's abstraction: when a listener is next due is hidden state (as
the watch's age is for Informer.tla's replay), so a rebuilt listener's next resync
time is placed by the move, not carried from state to state. Both listeners ask for
the same period; the spec has no periods, only "due" or not.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import ClassVar, cast

import attrs

from refimpl.cache.informer_core import FifoMode
from refimpl.cache.processor import ProcessorListener, is_resync_update
from refimpl.cache.reflector import WaitForEvent, Wake
from refimpl.tla.refine_informer import InformerMapping
from refimpl.tla.refine_informer_parts import (
    BuiltInformer,
    HandlerCall,
    HiddenState,
    ViewHandler,
    shift_rvs,
    spec_note_of,
    spec_rv_map,
    to_notification,
)
from refimpl.tla.replay import Move
from refimpl.tla.values import Fn, Value

__all__ = ["RESYNC_PERIOD", "InformerResyncMapping"]

#: Every listener's resync period and the reflector's check period (seconds). Any
#: positive value: the moves place the listeners' next resync times themselves.
RESYNC_PERIOD = 30.0

_LISTENERS = ("h1", "h2")


@attrs.frozen
class InformerResyncMapping(InformerMapping):
    """Callable for :func:`refimpl.tla.replay.replay` over the InformerResync graph.
    ``max_resyncs`` is the model's bound on resync checks."""

    max_resyncs: int = 1
    resync_period: ClassVar[float] = RESYNC_PERIOD

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.mode is not FifoMode.DELTA or self.faults:
            raise ValueError("InformerResync.tla is over the DeltaFIFO informer, no faults")

    # -- building -------------------------------------------------------------------

    def build(
        self,
        state: Mapping[str, Value],
        store_order: tuple[str, ...] | None = None,
        list_order: tuple[str, ...] = (),
        *,
        load: bool = True,
        short: bool = False,
        refuse_watch: bool = False,
    ) -> BuiltInformer:
        built = super().build(
            state, store_order, list_order, load=load, short=short, refuse_watch=refuse_watch
        )
        built.informer.started = True  # h2 is registered after start
        processor = built.informer.processor
        syncing = cast(Fn, state["syncing"])
        listeners = cast(dict[ProcessorListener, bool], processor.listeners)
        listeners[built.listener] = bool(syncing["h1"])
        if state["added2"]:
            built.listener2 = self._listener2(state)
            processor.add_listener(built.listener2)
            listeners[built.listener2] = bool(syncing["h2"])
        else:
            assert syncing["h2"] is True, state  # the spec's h2 starts syncing
        built.resyncs = cast(int, state["resyncs"])
        if state["resyncNote"]:
            # A resync update: its old object has the new one's resourceVersion.
            call = built.outbox[0]
            built.outbox[0] = HandlerCall(call.kind, call.obj, call.obj)
        return built

    @staticmethod
    def _listener2(state: Mapping[str, Value]) -> ProcessorListener:
        handler = ViewHandler(spec_rv_map(state["view2"], 0), spec_rv_map(state["lastRV2"], 0))
        listener = ProcessorListener(handler, RESYNC_PERIOD, RESYNC_PERIOD, 0.0, name="h2")
        notes = shift_rvs(state["notes2"], 1)
        assert isinstance(notes, tuple)
        listener.pending.extend(to_notification(n) for n in notes)
        return listener

    # -- reading back ---------------------------------------------------------------

    def spec_state(self, built: BuiltInformer) -> dict[str, Value]:
        state = super().spec_state(built)
        h2 = built.listener2
        handler2 = cast(ViewHandler, h2.handler) if h2 is not None else ViewHandler({}, {})
        flags = built.informer.processor.listeners or {}
        outbox = built.outbox
        state.update(
            {
                "added2": h2 is not None,
                "notes2": tuple(spec_note_of(n) for n in h2.pending) if h2 is not None else (),
                "view2": Fn({k: handler2.view.get(k, 0) for k in self.keys}),
                "lastRV2": Fn({k: handler2.last_rv.get(k, 0) for k in self.keys}),
                "syncing": Fn(
                    {
                        "h1": flags.get(built.listener, False),
                        "h2": flags.get(h2, False) if h2 is not None else True,
                    }
                ),
                "resyncNote": bool(outbox)
                and outbox[0].kind == "update"
                and is_resync_update(outbox[0].old, outbox[0].obj),
                "resyncs": built.resyncs,
            }
        )
        return state

    # -- the moves ------------------------------------------------------------------

    def __call__(self, state: Mapping[str, Value]) -> Iterable[Move]:
        moves = list(super().__call__(state))

        def move(action: str, built: BuiltInformer) -> None:
            moves.append(Move(action, (), self.spec_state(built), HiddenState.of(built)))

        # Registration and the resync check both wait for processDeltas' lock (the
        # DeltaFIFO shell's lock, held while a popped key is processed).
        unlocked = not state["popped"] and not state["outbox"]
        if unlocked and not state["added2"]:
            for store_order in self._orders(state, "store"):
                built = self.build(state, store_order)
                handler = ViewHandler(dict.fromkeys(self.keys, 0), dict.fromkeys(self.keys, 0))
                built.listener2 = built.informer._register(handler, RESYNC_PERIOD, "h2")
                move("AddHandler", built)
        watching = state["reflector"] in ("connect", "watch")
        if unlocked and watching and cast(int, state["resyncs"]) < self.max_resyncs:
            for due in self._due_sets(bool(state["added2"])):
                move("ResyncCheck", self._resync_check(state, due))
        built = self.build(state)
        if built.listener2 is not None and built.listener2.dispatch_one():
            move("Handle2", built)
        return moves

    @staticmethod
    def _due_sets(added2: bool) -> list[frozenset[str]]:
        added = _LISTENERS if added2 else _LISTENERS[:1]
        return [
            frozenset(due)
            for n in range(len(added) + 1)
            for due in itertools.combinations(added, n)
        ]

    def _resync_check(self, state: Mapping[str, Value], due: frozenset[str]) -> BuiltInformer:
        """The loop woken at its resync time with exactly the listeners in ``due`` due."""
        built = self.build(state)
        park = built.park
        assert isinstance(park, WaitForEvent) and park.resync_at is not None, park
        built.clock.set_time(max(built.clock.now(), park.resync_at))
        now = built.clock.now()
        for name, listener in zip(_LISTENERS, (built.listener, built.listener2), strict=True):
            if listener is not None:
                listener.next_resync = now if name in due else now + listener.resync_period
        built.resume(Wake.RESYNC)
        built.resyncs += 1
        return built
