"""The replay-based shrinker, ``minimize()`` in refimpl/conformance/search/minimize.py.

Two levels. The algorithm alone, with the replay replaced by a pure function of the
request list (so each case is exact and fast): pairs of steps that are only needed by
each other go together, which contiguous chunks cannot do. And end to end against a
broken adapter from adapters/broken: the shrunk trace keeps the usage contract (no
``done`` of an item the adapter did not hand out) unless ``--misuse`` was asked for.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.search import minimize as minimizer
from refimpl.conformance.search.config import Config, Failure, Step
from refimpl.conformance.search.minimize import Shorten, minimize
from refimpl.conformance.search.replay import try_trace
from refimpl.conformance.search.session import RunContext

BROKEN = Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py"


def call(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "x", "method": method, "args": args}


CREATE = {"op": "create", "instance": "x", "component": "queue", "options": {}}


def failure_of(requests: Sequence[dict[str, Any]]) -> Failure:
    steps = [Step(r, {"result": None}, {"result": None}) for r in requests]
    return Failure("disagreement", "queue", steps, "differs", example=1, found_after=0.0)


def with_oracle(
    monkeypatch: pytest.MonkeyPatch, fails: Callable[[list[dict[str, Any]]], bool]
) -> RunContext:
    """A context whose replays answer ``fails(requests)`` without any adapter."""

    def replay(
        ctx: RunContext, component: str, requests: Sequence[dict[str, Any]]
    ) -> Failure | None:
        return failure_of(requests) if fails(list(requests)) else None

    monkeypatch.setattr(minimizer, "try_trace", replay)
    return RunContext(Config(command=["unused"], shrink_budget=10.0), io.StringIO())


def without_pass(monkeypatch: pytest.MonkeyPatch, left_out: Shorten) -> None:
    """``minimize()`` with one pass of its rounds left out."""
    kept = tuple(p for p in minimizer.ROUND if p is not left_out)
    assert len(kept) == len(minimizer.ROUND) - 1
    monkeypatch.setattr(minimizer, "ROUND", kept)


def balanced_and_ends_in_len(requests: list[dict[str, Any]]) -> bool:
    """Fails iff ``add a`` and ``shut_down`` are there, every add has a get (as many of
    each) and the last step is ``len``: an extra ``add``/``get_nowait`` pair can only go
    together."""
    methods = [r.get("method") for r in requests]
    adds = [r for r in requests if r.get("method") == "add"]
    return (
        methods[-1] == "len"
        and call("add", item="a") in adds
        and "shut_down" in methods
        and len(adds) == methods.count("get_nowait")
    )


PADDED = [
    CREATE,
    call("add", item="b"),  # only its get needs it, and it needs its get
    call("add", item="a"),
    call("shut_down"),
    call("get_nowait"),
    call("get_nowait"),
    call("len"),
]


def test_a_step_and_the_step_that_consumes_it_go_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = with_oracle(monkeypatch, balanced_and_ends_in_len)
    assert balanced_and_ends_in_len(PADDED)
    shrunk = [s.request for s in minimize(ctx, failure_of(PADDED)).steps]
    assert shrunk == [
        CREATE,
        call("add", item="a"),
        call("shut_down"),
        call("get_nowait"),
        call("len"),
    ]


def test_chunks_alone_cannot_remove_that_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """The case above needs pair removal: no contiguous run of PADDED can go."""
    ctx = with_oracle(monkeypatch, balanced_and_ends_in_len)
    without_pass(monkeypatch, minimizer.drop_pair)
    assert len(minimize(ctx, failure_of(PADDED)).steps) == len(PADDED)


def test_pairs_are_tried_after_chunks_and_chunks_again_after_a_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two independent padding pairs plus removable noise: everything extra goes."""
    ctx = with_oracle(monkeypatch, balanced_and_ends_in_len)
    padded = [
        CREATE,
        call("add", item="c"),
        call("len"),
        call("add", item="b"),
        call("add", item="a"),
        call("shut_down"),
        call("shutting_down"),
        call("get_nowait"),
        call("get_nowait"),
        call("get_nowait"),
        call("len"),
    ]
    assert balanced_and_ends_in_len(padded)
    assert len(minimize(ctx, failure_of(padded)).steps) == 5


# done-forgets-requeue: Done drops an item re-added while it was in flight. Without the
# get_nowait, "done b" is a stray Done of a queued item, which client-go answers by
# queueing b a second time (len 2) and the broken queue does not (len 1): a shorter
# failure, but one that shows a misuse the run never asked for.
DONE_TRACE = [
    CREATE,
    call("add", item="b"),
    call("get_nowait"),
    call("add", item="b"),
    call("done", item="b"),
    call("len"),
]


def shrink_on_broken(bug: str, requests: list[dict[str, Any]], *, misuse: bool) -> list[Any]:
    """``requests`` replayed on the broken adapter ``bug``, then minimised."""
    config = Config(
        command=[sys.executable, str(BROKEN), "--bug", bug],
        shrink_budget=10.0,
        seed=1,
        misuse=misuse,
        progress=False,
    )
    ctx = RunContext(config, io.StringIO())
    try:
        ctx.start_adapter()
        found = try_trace(ctx, "queue", requests)
        assert found is not None
        return [s.request for s in minimize(ctx, found).steps]
    finally:
        ctx.close()


@pytest.mark.timeout(60)
def test_shrinking_keeps_the_usage_contract() -> None:
    shrunk = shrink_on_broken("done-forgets-requeue", DONE_TRACE, misuse=False)
    assert shrunk == DONE_TRACE


@pytest.mark.timeout(60)
def test_with_misuse_the_stray_done_is_allowed() -> None:
    shrunk = shrink_on_broken("done-forgets-requeue", DONE_TRACE, misuse=True)
    assert call("get_nowait") not in shrunk
    assert len(shrunk) < len(DONE_TRACE)


# ring-grows-out-of-order, seed 1 of tests/test_conformance_broken.py before get/done
# units: 14 steps, and no one or two of them can go without a stray done (removing
# "get_nowait -> b" makes "done b" a misuse). With each get and its done one unit,
# the shrinker reaches the 8-step form (a wrapped ring of b, c grows when a is pushed).
RING_TRACE = [
    CREATE,
    call("add", item="a"),
    call("add", item="b"),
    call("get_nowait"),
    call("add", item="c"),
    call("get_nowait"),
    call("done", item="b"),
    call("get_nowait"),
    call("done", item="a"),
    call("add", item="c"),
    call("add", item="b"),
    call("done", item="c"),
    call("add", item="a"),
    call("get_nowait"),
]


@pytest.mark.timeout(60)
def test_a_get_and_its_done_go_together() -> None:
    shrunk = shrink_on_broken("ring-grows-out-of-order", RING_TRACE, misuse=False)
    assert len(shrunk) == 8, shrunk


@pytest.mark.timeout(60)
def test_without_get_done_units_the_ring_trace_stays_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(minimizer, "_consumers", lambda steps: {})
    shrunk = shrink_on_broken("ring-grows-out-of-order", RING_TRACE, misuse=False)
    assert len(shrunk) > 8, shrunk


def test_an_advance_and_the_state_after_it_are_dropped_together() -> None:
    """A steered reference learns from the ``state`` after an ``advance`` what the adapter
    woke up to do; dropping either one alone would leave the reference guessing."""
    advance = {"op": "advance", "seconds": 1.0}
    requests = [CREATE, call("start"), advance, call("state"), call("state")]
    best = failure_of(requests)
    assert minimizer._without(best, {3}) == [CREATE, call("start"), call("state")]
    assert minimizer._without(best, {2}) == [CREATE, call("start"), call("state")]
    # A state that does not follow an advance goes alone.
    assert minimizer._without(best, {4}) == requests[:4]


# -- informer traces (shrunk from tests/test_conformance_broken.py-style runs) ----------


def inf(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "i", "method": method, "args": args}


def obj(name: str, rv: int) -> dict[str, Any]:
    return {"namespace": "", "name": name, "rv": str(rv), "labels": {}}


def informer_create(**options: Any) -> dict[str, Any]:
    return {
        "op": "create",
        "instance": "i",
        "component": "informer",
        "options": {"resync": 0, "fifo": "delta", **options},
    }


def end_bookmark(rv: int) -> dict[str, Any]:
    return inf("watch_event", type="BOOKMARK", object=obj("", rv), initial_events_end=True)


def shrink_broken(
    bug: str, component: str, kind: str, requests: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``requests`` replayed on the broken adapter ``bug`` (failing as ``kind``), then
    minimised."""
    config = Config(
        command=[sys.executable, str(BROKEN), "--bug", bug],
        shrink_budget=40.0,
        seed=1,
        progress=False,
    )
    ctx = RunContext(config, io.StringIO())
    try:
        ctx.start_adapter()
        found = try_trace(ctx, component, requests)
        assert found is not None and found.kind == kind
        return [s.request for s in minimize(ctx, found).steps]
    finally:
        ctx.close()


def shrink_informer(bug: str, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``requests`` replayed on the broken informer ``bug``, then minimised."""
    return shrink_broken(bug, "informer", "invariant", requests)


# informer-tombstones-only-known, seed 1 of benchmarks/conformance.py: a relist while the
# first list is still queued (processing paused). Nine steps, and none of them can go.
# The state after the advance is one only as an observation: without it the next
# list_reply's answer tells the steered reference that the adapter woke up.
TOMBSTONE_TRACE = [
    informer_create(watch_list=False),
    inf("pause"),
    inf("start"),
    inf("list_reply", objects=[obj("a", 3)], rv="3"),
    inf("watch_error", reason="expired"),
    {"op": "advance", "seconds": 2.0},
    inf("state"),
    inf("list_reply", objects=[], rv="4"),
    inf("resume"),
]


@pytest.mark.timeout(120)
def test_a_state_that_only_observes_goes_alone() -> None:
    shrunk = shrink_informer("informer-tombstones-only-known", TOMBSTONE_TRACE)
    assert shrunk == [r for r in TOMBSTONE_TRACE if r != inf("state")]


@pytest.mark.timeout(120)
def test_without_the_observation_rule_the_state_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    without_pass(monkeypatch, minimizer.drop_unneeded_state)
    shrunk = shrink_informer("informer-tombstones-only-known", TOMBSTONE_TRACE)
    assert shrunk == TOMBSTONE_TRACE


def test_a_state_the_reference_needs_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the state the reference answers a later step differently (it did not learn
    that the adapter woke up): the failure is not the same one, so the state stays."""
    advance = {"op": "advance", "seconds": 2.0}
    requests = [CREATE, call("start"), advance, call("state"), call("list_error"), call("len")]

    def replay(
        ctx: RunContext, component: str, replayed: Sequence[dict[str, Any]]
    ) -> Failure | None:
        failure = failure_of(replayed)
        if call("state") not in replayed:
            step = failure.steps[replayed.index(call("list_error"))]
            step.reference = {"error": {"kind": "bad_request", "message": "asleep"}}
        return failure

    ctx = RunContext(Config(command=["unused"], shrink_budget=10.0), io.StringIO())
    best = failure_of(requests)
    assert minimizer.drop_unneeded_state(best, lambda r: replay(ctx, "queue", r)) is None
    # The same replay, but answering alike with or without it: the state goes.
    dropped = minimizer.drop_unneeded_state(best, failure_of)
    assert dropped is not None and call("state") not in [s.request for s in dropped.steps]


# informer-relist-keeps-vanished, seed 6: found with a watch-list informer, whose
# shortest trace is 10 steps (each relist is a stream: watch_open, ADDED..., the end
# bookmark). The same story told with plain lists is 6.
WATCH_LIST_TRACE = [
    informer_create(watch_list=True),
    inf("start"),
    inf("watch_open"),
    inf("watch_event", type="ADDED", object=obj("a", 2)),
    end_bookmark(2),
    inf("watch_end", how="clean"),
    {"op": "advance", "seconds": 2.0},
    inf("state"),
    inf("watch_open"),
    end_bookmark(3),
]


def test_a_watch_list_stream_becomes_the_list_it_stands_for() -> None:
    steps = [Step(r, None, None) for r in WATCH_LIST_TRACE]
    waiting = {"waiting": {"op": "watch", "rv": "", "send_initial_events": True}}
    steps[1].adapter = {"result": waiting}
    steps[7].adapter = {"result": {"waiting": {**waiting["waiting"], "rv": "2"}}}
    assert minimizer._plain_lists(steps) == [
        informer_create(watch_list=False),
        inf("start"),
        inf("list_reply", objects=[obj("a", 2)], rv="2"),
        {"op": "call", "instance": "i", "method": "watch_open", "args": {}},
        inf("watch_end", how="clean"),
        {"op": "advance", "seconds": 2.0},
        inf("state"),
        inf("list_reply", objects=[], rv="3"),
        {"op": "call", "instance": "i", "method": "watch_open", "args": {}},
    ]
    # A trace without watch_list has nothing to rewrite.
    assert minimizer._plain_lists([Step(informer_create(watch_list=False), None, None)]) is None


@pytest.mark.timeout(120)
def test_a_watch_list_trace_shrinks_as_plain_lists() -> None:
    shrunk = shrink_informer("informer-relist-keeps-vanished", WATCH_LIST_TRACE)
    assert len(shrunk) <= 6, shrunk
    assert shrunk[0] == informer_create(watch_list=False)


@pytest.mark.timeout(120)
def test_without_the_rewrite_the_watch_list_trace_stays_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_pass(monkeypatch, minimizer.as_plain_lists)
    shrunk = shrink_informer("informer-relist-keeps-vanished", WATCH_LIST_TRACE)
    assert len(shrunk) > 8, shrunk


# informer-relist-keeps-vanished, a seed that reached the ghost through a watch event: the
# watch ends cleanly, the re-watch fails with 410, then the relist. One watch_end with
# the 410 does the same.
REWATCH_TRACE = [
    informer_create(watch_list=False),
    inf("start"),
    inf("list_reply", objects=[], rv="1"),
    inf("watch_open"),
    inf("watch_event", type="ADDED", object=obj("a", 2)),
    inf("watch_end", how="clean"),
    inf("watch_error", reason="expired"),
    {"op": "advance", "seconds": 2.0},
    inf("state"),
    inf("list_reply", objects=[], rv="3"),
]


def test_a_watch_end_and_a_failed_rewatch_merge() -> None:
    merged = minimizer._merged(inf("watch_end", how="clean"), inf("watch_error", reason="expired"))
    assert merged == [inf("watch_end", how="expired")]
    too_many = inf("watch_error", reason="too_many_requests")  # retried, no relist
    assert minimizer._merged(inf("watch_end", how="clean"), too_many) == []


@pytest.mark.timeout(120)
def test_a_rewatch_trace_shrinks_to_one_watch_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # (Folding the watch into the list, below, would go further: this is the merge alone.)
    without_pass(monkeypatch, minimizer.fold_watch_events)
    shrunk = shrink_informer("informer-relist-keeps-vanished", REWATCH_TRACE)
    assert inf("watch_end", how="expired") in shrunk
    assert len(shrunk) <= 8, shrunk


@pytest.mark.timeout(120)
def test_without_that_merge_the_rewatch_trace_stays_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    merged = minimizer._merged
    without_pass(monkeypatch, minimizer.fold_watch_events)
    monkeypatch.setattr(
        minimizer,
        "_merged",
        lambda first, second: [] if first.get("method") == "watch_end" else merged(first, second),
    )
    shrunk = shrink_informer("informer-relist-keeps-vanished", REWATCH_TRACE)
    assert len(shrunk) > 8, shrunk


# informer-relist-keeps-vanished, seed 10: a watch that aged 2 s before it ended cleanly,
# so the re-watch came at once; then a 410 and an advance to the reference's next
# deadline (the jittered backoff the steps before it drew). With that advance rounded up
# to 2 s, the detour goes.
ADVANCE_TRACE = [
    informer_create(watch_list=False),
    inf("start"),
    inf("list_reply", objects=[obj("a", 6)], rv="6"),
    {"op": "advance", "seconds": 2.0},
    inf("state"),
    inf("watch_open"),
    inf("watch_end", how="clean"),
    inf("watch_error", reason="expired"),
    {"op": "advance", "seconds": 1.136457265},
    inf("state"),
    inf("list_reply", objects=[], rv="8"),
]


@pytest.mark.timeout(120)
def test_an_advance_to_a_jittered_deadline_is_rounded_up() -> None:
    shrunk = shrink_informer("informer-relist-keeps-vanished", ADVANCE_TRACE)
    assert {"op": "advance", "seconds": 2.0} in shrunk
    assert len(shrunk) <= 6, shrunk


@pytest.mark.timeout(120)
def test_without_rounding_the_detour_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minimizer, "OPENING", (minimizer.drop_chunks,))
    shrunk = shrink_informer("informer-relist-keeps-vanished", ADVANCE_TRACE)
    assert len(shrunk) > 8, shrunk


# informer-tombstones-only-known, seed 7: the key reached the paused queue by a watch
# event, not a list. Folded into the list before it, the same ghost takes 8 steps.
WATCH_EVENT_TRACE = [
    informer_create(watch_list=False),
    inf("start"),
    inf("pause"),
    inf("list_reply", objects=[], rv="1"),
    inf("watch_open"),
    inf("watch_event", type="ADDED", object=obj("a", 2)),
    inf("watch_end", how="expired"),
    {"op": "advance", "seconds": 2.0},
    inf("list_reply", objects=[], rv="3"),
    inf("resume"),
]


def test_a_watch_folds_into_the_list_before_it() -> None:
    requests = [
        *WATCH_EVENT_TRACE[:6],
        inf("watch_event", type="ADDED", object=obj("b", 3)),
        inf("watch_event", type="DELETED", object=obj("a", 4)),
        *WATCH_EVENT_TRACE[6:],
    ]
    assert minimizer._folded(requests, 3) == [
        *WATCH_EVENT_TRACE[:3],
        inf("list_reply", objects=[obj("b", 3)], rv="4"),
        inf("watch_error", reason="expired"),
        *WATCH_EVENT_TRACE[7:],
    ]
    # A watch that ends cleanly stays open after the list; nothing to fold: None.
    clean = [*WATCH_EVENT_TRACE[:6], inf("watch_end", how="clean")]
    assert minimizer._folded(clean, 3) == [
        *WATCH_EVENT_TRACE[:3],
        inf("list_reply", objects=[obj("a", 2)], rv="2"),
        inf("watch_open"),
        inf("watch_end", how="clean"),
    ]
    assert minimizer._folded(WATCH_EVENT_TRACE, 8) is None


@pytest.mark.timeout(120)
def test_a_watch_event_trace_shrinks_to_the_list_form() -> None:
    shrunk = shrink_informer("informer-tombstones-only-known", WATCH_EVENT_TRACE)
    assert len(shrunk) <= 8, shrunk


@pytest.mark.timeout(120)
def test_without_folding_the_watch_event_trace_stays_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_pass(monkeypatch, minimizer.fold_watch_events)
    shrunk = shrink_informer("informer-tombstones-only-known", WATCH_EVENT_TRACE)
    assert len(shrunk) > 8, shrunk


def test_a_rewrite_that_changes_the_finding_is_not_kept() -> None:
    """A rewrite that still fails, but with another invariant (REF-3 where the original
    broke INF-3), would change what a pinned verdict (refimpl peers) reads: not kept."""
    steps = [Step(r, None, None) for r in WATCH_EVENT_TRACE]
    best = Failure("invariant", "informer", steps, "INF-3 a ghost", example=1, found_after=0.0)

    def fails_with(message: str) -> Callable[[list[dict[str, Any]]], Failure]:
        def replay(requests: list[dict[str, Any]]) -> Failure:
            again = [Step(r, None, None) for r in requests]
            return Failure("invariant", "informer", again, message, example=1, found_after=0.0)

        return replay

    assert minimizer.fold_watch_events(best, fails_with("REF-3 went back")) is None
    folded = minimizer.fold_watch_events(best, fails_with("INF-3 another ghost"))
    assert folded is not None and len(folded.steps) == len(steps) - 2


# resync-over-queued (delta_fifo), seed 2 of benchmarks/conformance.py: two objects that
# only pad the relist, each with its pop and its known_add. No single or pair removal
# takes a list entry and the steps that consume it; forgetting the object does.
def fifo(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "x", "method": method, "args": args}


def fobj(namespace: str, name: str, rv: int) -> dict[str, Any]:
    return {"namespace": namespace, "name": name, "rv": str(rv), "labels": {}}


PADDED_RELIST = [
    {
        "op": "create",
        "instance": "x",
        "component": "delta_fifo",
        "options": {"known_objects": True, "emit_delta_type_replaced": True},
    },
    fifo("add", obj=fobj("", "a", 1)),
    fifo("known_add", obj=fobj("", "a", 1)),
    fifo("pop_nowait"),
    fifo("replace", objs=[fobj("x", "a", 1), fobj("x", "b", 1)], rv="10"),
    fifo("pop_nowait"),
    fifo("pop_nowait"),
    fifo("known_add", obj=fobj("x", "a", 1)),
    fifo("known_add", obj=fobj("x", "b", 1)),
    fifo("add", obj=fobj("", "a", 3)),
    fifo("resync"),
    fifo("pop_nowait"),
]


def shrink_fifo(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return shrink_broken("resync-over-queued", "delta_fifo", "disagreement", requests)


def test_forgetting_an_object_drops_it_from_lists_with_its_steps() -> None:
    steps = [Step(r, None, {"result": None}) for r in PADDED_RELIST]
    steps[6].adapter = {"result": {"kind": "item", "deltas": [["Replaced", fobj("x", "b", 1)]]}}
    assert minimizer._forgotten(steps, "x/b") == [
        *PADDED_RELIST[:4],
        fifo("replace", objs=[fobj("x", "a", 1)], rv="10"),
        PADDED_RELIST[5],
        PADDED_RELIST[7],
        *PADDED_RELIST[9:],
    ]


@pytest.mark.timeout(120)
def test_an_object_that_only_pads_a_relist_is_forgotten() -> None:
    shrunk = shrink_fifo(PADDED_RELIST)
    assert len(shrunk) <= 8, shrunk
    keys = set().union(*(minimizer._keys_in(r.get("args")) for r in shrunk))
    assert keys == {"a"}, shrunk


@pytest.mark.timeout(120)
def test_without_forgetting_the_padded_relist_stays_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_pass(monkeypatch, minimizer.drop_object)
    shrunk = shrink_fifo(PADDED_RELIST)
    assert len(shrunk) > 8, shrunk


# -- each pass alone, on a small crafted failure (the replay a pure function of the
# requests), and the order minimize() runs them in.


def oracle(
    fails: Callable[[list[dict[str, Any]]], bool], component: str = "queue"
) -> minimizer.Replay:
    """A replay test answering ``fails(requests)`` without any adapter: a failure of
    ``component`` (a rewrite keeps only the same finding, component included)."""

    def replay(requests: list[dict[str, Any]]) -> Failure | None:
        if not fails(requests):
            return None
        failure = failure_of(requests)
        failure.component = component
        return failure

    return replay


def requests_of(failure: Failure | None) -> list[dict[str, Any]]:
    assert failure is not None
    return [s.request for s in failure.steps]


def test_the_passes_run_in_the_documented_order() -> None:
    assert (minimizer.drop_chunks, minimizer.round_advances) == minimizer.OPENING
    assert (
        minimizer.as_plain_lists,
        minimizer.fold_watch_events,
        minimizer.drop_object,
        minimizer.drop_pair,
        minimizer.merge_adjacent,
        minimizer.drop_unneeded_state,
    ) == minimizer.ROUND
    assert minimizer.AFTER_ROUND is minimizer.drop_chunks
    assert (minimizer.simplify_arguments,) == minimizer.CLOSING


def test_drop_chunks_removes_a_run_of_noise_and_keeps_create() -> None:
    """Only ``add a`` then ``len`` matter; the runs around them go, later runs first."""
    noise = [call("shutting_down"), call("len"), call("shutting_down")]
    requests = [CREATE, *noise, call("add", item="a"), *noise, call("len")]

    def fails(r: list[dict[str, Any]]) -> bool:
        methods = [x.get("method") for x in r]
        return call("add", item="a") in r and methods[-1] == "len"

    shrunk = minimizer.drop_chunks(failure_of(requests), oracle(fails))
    assert requests_of(shrunk) == [CREATE, call("add", item="a"), call("len")]


def test_drop_chunks_keeps_a_get_with_its_done() -> None:
    """A run that holds a get but not its done takes the done along (_without)."""
    requests = [CREATE, call("add", item="a"), call("get_nowait"), call("done", item="a")]
    best = Failure(
        "disagreement",
        "queue",
        [
            Step(requests[0], {"result": None}, {"result": None}),
            Step(requests[1], {"result": None}, {"result": None}),
            Step(requests[2], None, {"result": {"kind": "item", "item": "a"}}),
            Step(requests[3], {"result": None}, {"result": None}),
        ],
        "differs",
        example=1,
        found_after=0.0,
    )
    tried: list[list[dict[str, Any]]] = []

    def fails(r: list[dict[str, Any]]) -> bool:
        tried.append(r)
        return False

    assert minimizer.drop_chunks(best, oracle(fails)) is best
    assert all(call("done", item="a") not in r for r in tried if call("get_nowait") not in r)


def test_drop_pair_removes_two_steps_needed_only_by_each_other() -> None:
    shrunk = minimizer.drop_pair(failure_of(PADDED), oracle(balanced_and_ends_in_len))
    assert requests_of(shrunk) == [r for n, r in enumerate(PADDED) if n not in (1, 4)]


def test_merge_adjacent_turns_watch_open_and_watch_end_into_one_failed_watch() -> None:
    requests = [informer_create(), inf("start"), inf("watch_open"), inf("watch_end", how="clean")]

    def fails(r: list[dict[str, Any]]) -> bool:
        return r[-1] == inf("watch_error", reason="internal")

    merged = minimizer.merge_adjacent(failure_of(requests), oracle(fails))
    assert requests_of(merged) == [*requests[:2], inf("watch_error", reason="internal")]


def test_simplify_arguments_plainer_items_and_objects() -> None:
    obj = {"namespace": "x", "name": "b", "rv": "2", "labels": {"team": "red"}}
    requests = [CREATE, call("add", item="c"), call("add", obj=obj), call("len")]

    def fails(r: list[dict[str, Any]]) -> bool:
        return len(r) == 4 and r[-1] == call("len")

    shrunk = minimizer.simplify_arguments(failure_of(requests), oracle(fails))
    # Each variant makes one field of the step's object plain (name, namespace, labels,
    # rv, in turn): the last that still fails is the one kept.
    plainer = {**obj, "rv": "1"}
    assert requests_of(shrunk) == [
        CREATE,
        call("add", item="a"),
        call("add", obj=plainer),
        call("len"),
    ]


def test_simplify_arguments_keeps_what_the_failure_needs() -> None:
    requests = [CREATE, call("add", item="c"), call("len")]

    def fails(r: list[dict[str, Any]]) -> bool:
        return call("add", item="c") in r

    best = failure_of(requests)
    assert minimizer.simplify_arguments(best, oracle(fails)) is best


def informer_failure(requests: Sequence[dict[str, Any]]) -> Failure:
    failure = failure_of(requests)
    failure.component = "informer"
    return failure


def test_round_advances_rounds_a_clock_step_up_where_it_still_fails() -> None:
    requests = [
        informer_create(),
        inf("start"),
        {"op": "advance", "seconds": 1.234},
        inf("state"),
        {"op": "advance", "seconds": 40.0},
    ]

    def fails(r: list[dict[str, Any]]) -> bool:
        return r[-1] == {"op": "advance", "seconds": 40.0}  # the last one must stay

    rounded = minimizer.round_advances(informer_failure(requests), oracle(fails, "informer"))
    assert requests_of(rounded) == [*requests[:2], {"op": "advance", "seconds": 2.0}, *requests[3:]]


def test_as_plain_lists_rewrites_a_watch_list_stream() -> None:
    best = informer_failure(WATCH_LIST_TRACE)
    waiting = {"waiting": {"op": "watch", "rv": "", "send_initial_events": True}}
    best.steps[1].adapter = {"result": waiting}
    best.steps[7].adapter = {"result": {"waiting": {**waiting["waiting"], "rv": "2"}}}

    def fails(r: list[dict[str, Any]]) -> bool:
        return inf("list_reply", objects=[], rv="3") in r

    plain = minimizer.as_plain_lists(best, oracle(fails, "informer"))
    assert requests_of(plain) == minimizer._plain_lists(best.steps)
    assert len(requests_of(plain)) < len(WATCH_LIST_TRACE)


def test_drop_object_forgets_an_object_with_its_list_entries_and_pops() -> None:
    fifo_create = {"op": "create", "instance": "x", "component": "delta_fifo", "options": {}}
    requests = [
        fifo_create,
        call("replace", objs=[obj("a", 1), obj("b", 1)], rv="10"),
        call("pop_nowait"),
        call("list_keys"),
    ]
    best = failure_of(requests)
    best.steps[2].adapter = {"result": {"kind": "item", "deltas": [["Replaced", obj("b", 1)]]}}

    def fails(r: list[dict[str, Any]]) -> bool:
        return any(obj("a", 1) in (x.get("args") or {}).get("objs", []) for x in r)

    shrunk = minimizer.drop_object(best, oracle(fails))
    assert requests_of(shrunk) == [
        fifo_create,
        call("replace", objs=[obj("a", 1)], rv="10"),
        call("list_keys"),
    ]
