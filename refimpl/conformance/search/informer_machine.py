"""The generator for the ``informer`` component: the harness plays an API server.

Owns a small server model (objects, a global resourceVersion, the event log, a
compaction point) that exists only while generating: the protocol requests it produces
carry every object explicitly, so a trace replays without it. Each generated step is one
server write (no request), or one answer to what the adapter's informer waits for —
honest (a list of the current objects; a watch opened from its resourceVersion, or 410
if that is compacted; the next event) or a fault (a list or watch error, a watch ending
cleanly, with a 410 or 500 ERROR event or a broken connection) — or time passing, a late
handler, a pause of processing. At the end every example *settles*: the harness answers
honestly and lets time pass until the informer watches with nothing left to deliver, so
every informer that can converge has converged, and one that stopped trying is caught
(INF-9).

:data:`ACTIONS` declares each action once (weight, the methods it sends, whether swarm
testing may leave it out, what the informer must be waiting for, its request or what
it does); :class:`InformerMachine` reads it, and :func:`make_informer_machine`
subclasses it for one adapter with the create options that adapter allows. With
realistic inputs (the default) an example draws a factor per action for its weight
(swarm testing) and :data:`RARE_ACTIONS` join the table, so a 410 on the watch request,
a delete the informer cannot see and a change only a relist after a resync check shows
come up often; each handler gets its own resync period (:data:`HANDLER_RESYNCS`) and
the informer resyncs in two examples of three. ``--inputs any`` generates what it did
before (coins leaving optional actions out, every handler at the informer's period).
The table's order, weights and strategies are what a seed generates. Ports nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from hypothesis import strategies as st
from hypothesis.internal.conjecture.data import ConjectureData

from refimpl.conformance.search.generation import Generator
from refimpl.conformance.search.history import History

if TYPE_CHECKING:
    from refimpl.conformance.search.session import Example, RunContext

__all__ = ["ACTIONS", "Action", "InformerMachine", "ServerModel", "make_informer_machine"]

#: Keys the server writes, skewed: most examples touch one or two.
NAMES = ["a", "b", "x/c", "x/d"]
LABELS = [{}, {"team": "red"}]
#: Realistic inputs: each handler's own resync period (``add_handler``'s ``resync``):
#: the informer's default (null), none, longer or shorter than the default. Handlers
#: that resync at different times are what kubernetes PR #86015 needed: a relist's
#: changes were delivered only to the handlers due for a resync.
HANDLER_RESYNCS: list[float | None] = [None, 0, 30.0, 5.0]
#: The most handlers an example adds (two at create, late ones up to this).
MAX_HANDLERS = 3
FAULT_REASONS = ["expired", "internal", "too_many_requests"]
WATCH_ENDS = ["clean", "expired", "internal", "reset"]
#: Clock steps: to the reference's next deadline, or fixed amounts around client-go's
#: backoff (0.8 s doubling to 30 s, jittered) and the very-short-watch second.
ADVANCES: list[str | float] = ["next", 1.0, "next", 2.0, 31.0, 65.0]
SETTLE_ROUNDS = 60
#: The stream entry for a watch-list's initial-events-end bookmark.
INITIAL_END = "BOOKMARK/initial-events-end"

#: What every example sends besides its drawn :data:`ACTIONS`: the handlers, ``start``
#: (both in ``create``), and the ``state`` read after each clock step.
FRAME_METHODS = frozenset({"add_handler", "start", "state"})


class ServerModel:
    """The harness's API server while generating: honest answers for the informer. Its
    objects and resourceVersions are a :class:`~refimpl.conformance.search.history.History`
    (one rv counter for every write, a DELETED event at a new rv)."""

    def __init__(self) -> None:
        self.history = History()
        #: (rv, type, object) of every write, oldest first.
        self.log: list[tuple[int, str, dict[str, Any]]] = []
        self.compacted = 0
        #: Events not yet delivered on the open watch (None: no watch open).
        self.stream: deque[tuple[str, dict[str, Any]]] | None = None

    @property
    def rv(self) -> int:
        return self.history.rv

    @property
    def objects(self) -> dict[str, dict[str, Any]]:
        return self.history.objects

    def write(self, key: str, labels: dict[str, str], delete: bool) -> None:
        gone = self.history.delete_at_new_rv(key) if delete else None
        if gone is not None:
            obj, kind = gone, "DELETED"
        else:
            kind = "MODIFIED" if key in self.objects else "ADDED"
            obj = self.history.write(key, labels)
        self.log.append((self.rv, kind, obj))
        if self.stream is not None:
            self.stream.append((kind, obj))

    def list_reply(self) -> dict[str, Any]:
        objects = [self.objects[k] for k in sorted(self.objects)]
        return {"objects": objects, "rv": str(self.rv)}

    def open_watch(self, rv: str, initial_events: bool = False) -> bool:
        """Open a watch from ``rv``; False if it is compacted away (410). A watch-list
        (``initial_events``) streams the current objects as ADDED, then the end bookmark
        (``INITIAL_END``), then what follows; it is never too old (NotOlderThan)."""
        if initial_events:
            snapshot = [("ADDED", self.objects[k]) for k in sorted(self.objects)]
            end = {"namespace": "", "name": "", "rv": str(self.rv), "labels": {}}
            self.stream = deque([*snapshot, (INITIAL_END, end)])
            return True
        start = int(rv) if rv.isdigit() else self.rv
        if start < self.compacted:
            return False
        self.stream = deque((kind, obj) for at, kind, obj in self.log if at > start)
        return True

    def compact(self) -> None:
        self.compacted = self.rv


@dataclass(frozen=True)
class Action:
    """One kind of generated informer step: its weight, the informer methods it sends
    (besides ``state``), and what it does. ``waiting``: it acts only while the informer
    waits for that (``list``, ``watch``, ``watching``), else the step does nothing. An
    action with a ``method`` calls it with ``args`` drawn in the order listed; one with
    ``does`` runs that (a write to the server model, an honest answer, ...)."""

    name: str
    weight: int
    sends: frozenset[str] = frozenset()
    #: It may be left out of an example (swarm testing); the core ones always stay.
    optional: bool = False
    waiting: str | None = None
    method: str = ""
    args: tuple[tuple[str, st.SearchStrategy[Any] | list[Any]], ...] = ()
    does: Callable[[InformerMachine], None] | None = None


@dataclass(frozen=True)
class InformerPlan:
    """What the informer of one adapter generates (built by :func:`make_informer_machine`)."""

    ctx: RunContext
    #: The usable actions, by name.
    actions: dict[str, Action]
    #: Action names, each repeated by its weight, in table order.
    weighted: list[str]
    #: Actions an example may leave out (one swarm coin each), sorted.
    optional: list[str]
    #: A handler may throw (not ``--skip raises``).
    may_raise: bool
    #: Realistic inputs: per-example weights (``create``'s ``weights``, one factor per
    #: usable action in table order) instead of ``optional``'s coins.
    swarm_weights: bool = False


class InformerMachine(Generator):
    """The generator of the ``informer`` component, read from its :class:`InformerPlan`
    and :data:`ACTIONS`. :func:`make_informer_machine` subclasses it with the plan and
    the strategies of ``create``'s arguments, which depend on the adapter."""

    plan: ClassVar[InformerPlan]

    def __init__(self, data: ConjectureData) -> None:
        super().__init__(data)
        self.ex: Example = self.plan.ctx.begin_example("informer", ahead=True)
        self.server = ServerModel()
        self.waiting: dict[str, Any] = {"op": "idle"}
        self.handlers = 0
        #: Each handler's ``resync`` (realistic inputs; else every handler's is null).
        self.periods: list[float | None] = []
        self.paused = False
        #: ``create`` ran (Hypothesis may give up on an example before it).
        self.created = False
        self.keys: list[str] = NAMES[:1]
        self.kinds: list[str] = self.plan.weighted

    def call(self, method: str, **args: Any) -> None:
        answer = self.ex.exchange({"op": "call", "instance": "i", "method": method, "args": args})
        result = answer.get("result")
        if isinstance(result, dict) and isinstance(result.get("waiting"), dict):
            self.waiting = result["waiting"]
        if self.waiting.get("op") != "watching":
            self.server.stream = None

    def add_handler(self, raises: bool) -> None:
        n = self.handlers
        resync = self.periods[n] if n < len(self.periods) else None
        self.call("add_handler", name=f"h{n}", raises=raises, resync=resync)
        self.handlers += 1

    def create(
        self,
        options: dict[str, Any],
        handlers: int,
        raises: bool,
        names: int,
        coins: list[bool],
        paused: bool,
        weights: list[int] | None = None,
        periods: list[float | None] | None = None,
    ) -> None:
        """The ``create`` step, the handlers, then ``start``."""
        plan = self.plan
        self.created = True
        self.periods = list(periods or [])
        # Skew to few keys: one key half the time, all four rarely.
        self.keys = NAMES[: max(1, names - 1)]
        if plan.swarm_weights and weights is not None:
            # Each action's table weight times the example's factor for it.
            table = list(plan.actions.values())
            kinds = [
                a.name for a, f in zip(table, weights, strict=True) for _ in range(a.weight * f)
            ]
        else:
            off = {kind for kind, out in zip(plan.optional, coins, strict=True) if out}
            kinds = [k for k in plan.weighted if k not in off]
        self.kinds = kinds
        self.ex.exchange(
            {"op": "create", "instance": "i", "component": "informer", "options": options}
        )
        for n in range(handlers):
            self.add_handler(plan.may_raise and raises and n == handlers - 1)
        if paused:
            # One example in four starts with processing paused: the first list then
            # sits in the queue, where a relist must still tombstone what vanished.
            self.paused = True
            self.call("pause")
        self.call("start")

    def step(self) -> None:
        """One action: at most one request, except advance + state."""
        action = self.plan.actions[self.choose(self.kinds)]
        if action.waiting is not None and self.waiting.get("op") != action.waiting:
            return
        if action.does is not None:
            action.does(self)
        else:
            self.call(action.method, **{name: self.draw(arg) for name, arg in action.args})

    def answer_honestly(self) -> bool:
        """Answer what the informer waits for as the server model would (False:
        nothing to answer)."""
        op = self.waiting.get("op")
        if op == "list":
            self.call("list_reply", **self.server.list_reply())
        elif op == "watch":
            initial = self.waiting.get("send_initial_events") is True
            if self.server.open_watch(str(self.waiting.get("rv")), initial):
                self.call("watch_open")
            else:
                self.call("watch_error", reason="expired")
        elif op == "watching" and self.server.stream:
            kind, obj = self.server.stream.popleft()
            if kind == INITIAL_END:
                self.call("watch_event", type="BOOKMARK", object=obj, initial_events_end=True)
            else:
                self.call("watch_event", type=kind, object=obj)
        else:
            return False
        return True

    def advance(self, step: str | float) -> None:
        seconds = self.ex.next_deadline() if step == "next" else step
        self.ex.exchange({"op": "advance", "seconds": seconds or 2.0})
        self.call("state")

    # -- what the actions of ACTIONS do (one request at most, except advance + state)
    def write(self) -> None:
        key = self.choose(self.keys)
        labels = self.choose(LABELS)
        self.server.write(key, labels, delete=self.coin())

    def answer(self) -> None:
        op = self.waiting.get("op")
        if op == "sleeping":
            # Nothing to answer: let the backoff run out (model-guided, so relists
            # are common, not a lucky draw of the right clock step).
            self.advance("next")
        elif op != "watching":
            self.answer_honestly()

    def deliver(self) -> None:
        self.answer_honestly()

    def bookmark(self) -> None:
        if not self.server.stream:
            obj = {"namespace": "", "name": "", "rv": str(self.server.rv), "labels": {}}
            self.call("watch_event", type="BOOKMARK", object=obj)

    def compact(self) -> None:
        self.server.compact()

    def drawn_advance(self) -> None:
        self.advance(self.choose(ADVANCES))

    def late_handler(self) -> None:
        if self.handlers < MAX_HANDLERS:
            self.add_handler(self.plan.may_raise and self.coin())

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self.call("pause" if self.paused else "resume")

    def expire(self) -> None:
        # The server compacted past the rv the informer asks for: 410 on the watch
        # request, the informer must relist.
        self.server.compact()
        self.call("watch_error", reason="expired")

    def offline_delete(self) -> None:
        # A delete the informer cannot see as an event (no watch open, and the log
        # compacted past it): only its next list shows the object gone.
        live = sorted(self.server.objects)
        if self.waiting.get("op") != "watching" and live:
            self.server.write(self.choose(live), {}, delete=True)
            self.server.compact()

    def missed_write(self) -> None:
        # A resync check falls due (if one is ahead), the watch ends with 410 and an
        # object changes (or, one time in three, goes) before the relist: the handlers
        # hear of it from the relist alone (kubernetes PR #86015 delivered such an update
        # only to the handlers due for a resync at the last check; with processing
        # paused, PR #115620's tombstone for a key still queued).
        live = sorted(self.server.objects)
        if live:
            if self.ex.next_deadline() is not None:
                self.advance("next")
            if self.waiting.get("op") != "watching":
                return
            self.call("watch_end", how="expired")
            key, labels = self.choose(live), self.choose(LABELS)
            self.server.write(key, labels, delete=self.choose(MISSED_DELETES))
            self.server.compact()

    def teardown(self) -> None:
        """Settle: answer honestly, let time pass, until the informer watches with
        nothing left to deliver (or INF-9 says it stopped trying). No choice is drawn
        here, so the answers the reference predicts are judged at the end."""
        if self.ex.failed:
            return
        self.ex.close_steps()  # a failure owed so far ends the example there
        if self.created:  # else Hypothesis gave up on the example early
            self.settle_rounds()
        self.ex.settle()  # judge the answers still owed

    def settle_rounds(self) -> None:
        if self.paused:
            self.paused = False
            self.call("resume")
        for _ in range(SETTLE_ROUNDS):
            if self.answer_honestly():
                continue
            if self.waiting.get("op") == "watching":
                break
            self.advance("next" if self.ex.next_deadline() else 65.0)


MISSED_DELETES = [False, False, True]

#: The informer's actions, in the order they are offered to Hypothesis. An action is
#: generated only if the methods it sends are offered and not skipped (--skip), so a
#: known difference can be looked past.
ACTIONS: tuple[Action, ...] = (
    Action("write", 6, does=InformerMachine.write),
    Action(
        "answer",
        6,
        sends=frozenset({"list_reply", "watch_open", "watch_error"}),
        does=InformerMachine.answer,
    ),
    Action(
        "deliver",
        6,
        sends=frozenset({"watch_event"}),
        waiting="watching",
        does=InformerMachine.deliver,
    ),
    Action(
        "drop",
        2,
        sends=frozenset({"watch_end"}),
        optional=True,
        waiting="watching",
        method="watch_end",
        args=(("how", WATCH_ENDS),),
    ),
    Action(
        "list_error",
        1,
        sends=frozenset({"list_error"}),
        optional=True,
        waiting="list",
        method="list_error",
        args=(("reason", FAULT_REASONS),),
    ),
    Action(
        "watch_error",
        1,
        sends=frozenset({"watch_error"}),
        optional=True,
        waiting="watch",
        method="watch_error",
        args=(("reason", FAULT_REASONS),),
    ),
    Action("compact", 1, optional=True, does=InformerMachine.compact),
    Action("advance", 2, does=InformerMachine.drawn_advance),
    Action(
        "bookmark",
        1,
        sends=frozenset({"watch_event"}),
        optional=True,
        waiting="watching",
        does=InformerMachine.bookmark,
    ),
    Action(
        "late_handler",
        1,
        sends=frozenset({"add_handler"}),
        optional=True,
        does=InformerMachine.late_handler,
    ),
    Action(
        "pause",
        2,
        sends=frozenset({"pause", "resume"}),
        optional=True,
        does=InformerMachine.toggle_pause,
    ),
)


#: Realistic inputs add these to :data:`ACTIONS` (#25's rare paths, made common).
RARE_ACTIONS: tuple[Action, ...] = (
    Action(
        "expire",
        2,
        sends=frozenset({"watch_error"}),
        waiting="watch",
        does=InformerMachine.expire,
    ),
    Action("offline_delete", 3, does=InformerMachine.offline_delete),
    Action(
        "missed_write",
        3,
        sends=frozenset({"watch_end"}),
        waiting="watching",
        does=InformerMachine.missed_write,
    ),
)
#: Realistic inputs: an example's factor for each action's weight, drawn per example
#: (swarm testing); shrinks to the first (the table's weight). An optional action may
#: be left out (0); the late handler and watch drops are sometimes tripled.
FACTORS = st.sampled_from([1, 0, 3])
CORE_FACTORS = st.sampled_from([1, 3])


def _create_options(caps: dict[str, Any], realistic: bool) -> dict[str, st.SearchStrategy[Any]]:
    """The create options an example draws: resync (if the adapter offers it; with
    realistic inputs two examples in three, so handlers' own periods matter), the FIFO
    generation (among those it behaves like), watch-list (if it offers it)."""
    modes = [m for m in caps.get("behaves_like") or [] if isinstance(m, str)]
    narrowed = caps.get("option_values", {}).get("fifo")
    if isinstance(narrowed, list):
        modes = [m for m in modes if m in narrowed]
    resync_ok = bool(caps.get("resync"))
    options: dict[str, st.SearchStrategy[Any]] = {
        "resync": st.sampled_from([0, 10.0, 10.0] if realistic else [0, 0, 10.0])
        if resync_ok
        else st.just(0)
    }
    if modes:
        options["fifo"] = st.sampled_from(modes)
    if caps.get("watch_list"):
        # One example in four streams its lists: enough to exercise watch-list, and a
        # failure found first with plain lists shrinks shorter.
        options["watch_list"] = st.sampled_from([False, False, False, True])
    return options


def make_informer_machine(
    ctx: RunContext, methods: frozenset[str], caps: dict[str, Any]
) -> type[InformerMachine]:
    """The generator class for the informer component of one adapter."""
    realistic = ctx.config.inputs == "realistic"
    table = ACTIONS + RARE_ACTIONS if realistic else ACTIONS
    usable = [a for a in table if a.sends <= methods]
    weighted = [a.name for a in usable for _ in range(a.weight)]
    # Swarm testing: each example leaves out a random subset of the optional actions,
    # so some examples are long runs of, say, pauses and relists only. Shrinking turns
    # every coin to False (everything back in).
    optional = sorted(a.name for a in usable if a.optional)
    swarm = st.lists(st.booleans(), min_size=len(optional), max_size=len(optional))
    can_pause = any(a.name == "pause" for a in usable)
    plan = InformerPlan(
        ctx=ctx,
        actions={a.name: a for a in usable},
        weighted=weighted,
        optional=optional,
        may_raise="raises" not in ctx.config.skip,
        swarm_weights=realistic,
    )
    arguments: dict[str, st.SearchStrategy[Any]] = {
        "options": st.fixed_dictionaries(_create_options(caps, realistic)),
        "handlers": st.integers(1, 2),
        "raises": st.booleans(),
        "names": st.integers(1, len(NAMES)),
        "coins": st.just([]) if realistic else swarm,
        "paused": st.sampled_from([False, False, False, True]) if can_pause else st.just(False),
    }
    if realistic:
        # Only then: even an unused argument changes what Hypothesis generates for a
        # seed, and ``any`` must generate what it did before #25.
        factors = (FACTORS if a.optional else CORE_FACTORS for a in usable)
        arguments["weights"] = st.tuples(*factors).map(list)
        if caps.get("resync"):
            resyncs = st.sampled_from(HANDLER_RESYNCS)
            arguments["periods"] = st.lists(resyncs, min_size=MAX_HANDLERS, max_size=MAX_HANDLERS)
    create_args = st.fixed_dictionaries(arguments)
    return type("Conform_informer", (InformerMachine,), {"plan": plan, "create_args": create_args})
