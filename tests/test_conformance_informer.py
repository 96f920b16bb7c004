"""The ``informer`` component of protocol 2: the harness plays the API server.

The reference adapter passes in every client-go generation; an adapter that speaks only
protocol 1 still works; malformed, hanging or inventing adapters get a clear verdict
(exit 2, or 1 with the invariant's ID), never a hang. Each informer mutant of
adapters/broken is caught by tests/test_conformance_broken.py; the pinned traces here
show what each invariant reports, on fixed request sequences that need no search.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conform_helpers import fake, run_conform

from refimpl.conformance.reference.dispatch import ReferenceDriver
from refimpl.conformance.search.compare import agree
from refimpl.conformance.search.config import EXIT_ADAPTER, EXIT_DISAGREE, EXIT_PASS
from refimpl.conformance.search.informer_invariants import InformerChecker, observation_problem

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]


#: The harness settings of these runs (a test's own settings override them).
SETTINGS = {
    "components": ["informer"],
    "budget": 4.0,
    "shrink_budget": 4.0,
    "seed": 1,
    "timeout": 1.0,
}


def conform(command: list[str], **overrides: Any) -> tuple[int, str]:
    return run_conform(command, **(SETTINGS | overrides))


def obj(name: str, rv: int, namespace: str = "") -> dict[str, Any]:
    return {"namespace": namespace, "name": name, "rv": str(rv), "labels": {}}


def call(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "i", "method": method, "args": args}


def drive(
    requests: list[dict[str, Any]], options: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Run ``requests`` on a fresh reference informer created with ``options`` (default:
    the DeltaFIFO generation); every response, in order."""
    driver = ReferenceDriver()
    driver.handle({"id": 0, "op": "hello", "protocol": 2})
    create = {"op": "create", "instance": "i", "component": "informer"}
    driver.handle({"id": 1, **create, "options": options or {"fifo": "delta"}})
    return [driver.handle({"id": n + 2, **r}) for n, r in enumerate(requests)]


def fed(requests: list[dict[str, Any]], answers: list[dict[str, Any]]) -> InformerChecker:
    """A checker that has seen ``requests`` and their ``answers``, which broke nothing."""
    checker = InformerChecker()
    for request, answer in zip(requests, answers, strict=True):
        assert checker.check(request, answer) == [], (request, answer)
    return checker


# A relist that drops an object: a, b listed; the watch breaks with 410; b is gone.
RELIST_DROPS_B = [
    call("add_handler", name="h0", raises=False, resync=None),
    call("start"),
    call("list_reply", objects=[obj("a", 2), obj("b", 3)], rv="3"),
    call("watch_open"),
    call("watch_end", how="expired"),
    {"op": "advance", "seconds": 2.0},
    call("state"),
    call("list_reply", objects=[obj("a", 2)], rv="5"),
]


@pytest.mark.parametrize("mode", ["real-atomic", "real", "delta"])
def test_reference_turns_a_vanished_object_into_a_delete(mode: str) -> None:
    answers = drive(RELIST_DROPS_B, {"fifo": mode})
    last = answers[-1]["result"]
    assert last["cache"] == [obj("a", 2)]
    deletes = [c for c in last["calls"] if c["kind"] == "delete"]
    assert deletes == [
        {"handler": "h0", "kind": "delete", "key": "b", "rv": "3", "tombstone": True, "cache": None}
    ]
    assert last["waiting"] == {"op": "watch", "rv": "5"}
    fed(RELIST_DROPS_B, answers)


def test_checker_names_the_ghost_and_the_lost_delete() -> None:
    answers = drive(RELIST_DROPS_B)
    # The same answers, but the adapter kept b and never told h0.
    ghost = json.loads(json.dumps(answers[-1]))
    ghost["result"]["cache"].append(obj("b", 3))
    ghost["result"]["calls"] = [c for c in ghost["result"]["calls"] if c["kind"] != "delete"]
    found = fed(RELIST_DROPS_B[:-1], answers[:-1]).check(RELIST_DROPS_B[-1], ghost)
    assert found == ["INF-3 the cache is what it was given: b@3 is a ghost (gone from the server)"]
    # Cache right, but the handler missed the delete.
    lost = json.loads(json.dumps(answers[-1]))
    lost["result"]["calls"] = [c for c in lost["result"]["calls"] if c["kind"] != "delete"]
    found = fed(RELIST_DROPS_B[:-1], answers[:-1]).check(RELIST_DROPS_B[-1], lost)
    assert found == ["INF-3 no lost notification: h0 saw b@3 is a ghost (gone from the server)"]


def test_compare_ignores_cross_key_order_and_the_cache_each_call_saw() -> None:
    request = call("state")
    calls = [
        {"handler": "h0", "kind": "add", "key": "a", "rv": "2", "initial": True, "cache": "2"},
        {"handler": "h0", "kind": "add", "key": "b", "rv": "3", "initial": True, "cache": "3"},
    ]
    base = {"waiting": {"op": "sleeping"}, "has_synced": True, "cache": [], "calls": calls}
    swapped = {**base, "calls": [{**calls[1], "cache": "4"}, calls[0]]}
    assert agree(request, {"result": base}, {"result": swapped})
    retyped = {**base, "calls": [{**calls[0], "kind": "update", "old_rv": "1"}, calls[1]]}
    assert not agree(request, {"result": base}, {"result": retyped})
    bare = [{k: v for k, v in c.items() if k != "initial"} for c in calls]
    without_initial = {**base, "calls": bare}
    assert agree(request, {"result": base}, {"result": without_initial})


def test_observation_shape_is_checked() -> None:
    assert observation_problem({"waiting": {"op": "list"}}) is not None
    good = drive([call("state")])[0]["result"]
    assert observation_problem(good) is None
    assert observation_problem({**good, "calls": [{"kind": "add"}]}) is not None


@pytest.mark.timeout(120)
def test_reference_adapter_passes_the_informer_component() -> None:
    status, text = conform(REFERENCE, budget=8.0)
    assert status == EXIT_PASS, text
    assert "informer             PASS" in text


@pytest.mark.timeout(60)
def test_a_protocol_1_adapter_still_works_without_the_informer() -> None:
    status, text = conform(fake("v1-only:hello"), components=["queue"], budget=2.0)
    assert status == EXIT_PASS, text
    assert "protocol 1" in text
    status, text = conform(fake("v1-only:hello"), components=["informer"], budget=2.0)
    assert "informer             skipped: the adapter does not offer it" in text, text


@pytest.mark.timeout(60)
def test_malformed_observation_is_an_adapter_failure() -> None:
    status, text = conform(fake("bad-observation:start"))
    assert status == EXIT_ADAPTER, text
    assert "malformed informer answer: 'waiting' must be an object" in text


@pytest.mark.timeout(60)
def test_a_call_for_a_key_never_given_is_reported_as_invented() -> None:
    status, text = conform(fake("invent:start"))
    assert status == EXIT_DISAGREE, text
    assert "INF-8 nothing invented: h0.on_add(zz@99)" in text


@pytest.mark.timeout(60)
def test_an_adapter_that_hangs_while_quiescing_exits_2_promptly() -> None:
    status, text = conform(fake("hang:watch_open"), timeout=0.5)
    assert status == EXIT_ADAPTER, text
    assert "hung" in text


WATCH_LIST = [
    call("add_handler", name="h0", raises=False, resync=None),
    call("start"),
    call("watch_open"),
    call("watch_event", type="ADDED", object=obj("a", 2)),
    call("watch_event", type="BOOKMARK", object=obj("", 3), initial_events_end=True),
    call("watch_event", type="DELETED", object=obj("a", 4)),
]


def test_watch_list_caches_nothing_before_the_end_bookmark() -> None:
    answers = drive(WATCH_LIST, {"watch_list": True})
    results = [a["result"] for a in answers]
    assert results[1]["waiting"] == {"op": "watch", "rv": "", "send_initial_events": True}
    assert results[3]["cache"] == [] and not results[3]["has_synced"]
    assert results[4]["cache"] == [obj("a", 2)] and results[4]["has_synced"]
    assert results[5]["cache"] == []
    fed(WATCH_LIST, answers)
    # An informer that caches each initial event at once is caught before the bookmark.
    early = json.loads(json.dumps(answers[3]))
    early["result"]["cache"] = [obj("a", 2)]
    found = fed(WATCH_LIST[:3], answers[:3]).check(WATCH_LIST[3], early)
    assert found == ["INF-3 the cache is what it was given: a@2 is a ghost (gone from the server)"]


def test_a_failed_watch_list_falls_back_to_a_list_at_once() -> None:
    answers = drive([*WATCH_LIST[:2], call("watch_error", reason="internal")], {"watch_list": True})
    assert answers[-1]["result"]["waiting"] == {"op": "list", "rv": "0"}


def test_minimize_merges_a_watch_that_opens_and_ends_into_one_failed_request() -> None:
    from refimpl.conformance.search.config import Failure, Step
    from refimpl.conformance.search.minimize import merge_adjacent

    steps = [
        Step(r, None, None)
        for r in (
            {"op": "create", "instance": "i", "component": "informer", "options": {}},
            call("start"),
            call("watch_open"),
            call("watch_end", how="clean"),
            call("state"),
        )
    ]
    failure = Failure("invariant", "informer", steps, "x", 1, 0.0)
    tried: list[list[dict[str, Any]]] = []

    def still_fails(requests: list[dict[str, Any]]) -> Failure | None:
        tried.append(requests)
        return Failure("invariant", "informer", [Step(r, None, None) for r in requests], "x", 1, 0)

    merged = merge_adjacent(failure, still_fails)
    assert merged is not None and len(merged.steps) == 4
    assert merged.steps[2].request["method"] == "watch_error"
    assert tried[0][2]["args"] == {"reason": "expired"}


@pytest.mark.parametrize("mode", ["real-atomic", "real", "delta"])
def test_an_advance_fires_every_resync_that_falls_due_inside_it(mode: str) -> None:
    # client-go re-arms the reflector's resync timer when it fires (startResync), so
    # 31 s at a 10 s period resync at 10, 20 and 30 s: three updates, not one at 31 s.
    requests = [
        call("add_handler", name="h0", raises=False, resync=None),
        call("start"),
        call("list_reply", objects=[obj("a", 2)], rv="2"),
        {"op": "advance", "seconds": 31.0},
        call("state"),
        {"op": "advance", "seconds": 9.0},
        call("state"),
    ]
    answers = drive(requests, {"fifo": mode, "resync": 10.0})
    update = {"handler": "h0", "kind": "update", "key": "a", "rv": "2", "old_rv": "2", "cache": "2"}
    assert answers[4]["result"]["calls"] == [update] * 3
    assert answers[6]["result"]["calls"] == [update]  # the next one is due at 40 s


@pytest.mark.parametrize("mode", ["real-atomic", "real", "delta"])
def test_resyncs_fire_while_a_429_on_the_watch_is_waited_out(mode: str) -> None:
    # Found by the client-go peer (adapters/client-go/findings/resync-during-watch-backoff
    # .jsonl): startResync runs for the whole watch phase, backoffs in Reflector.watch
    # included, so 65 s at a 10 s period resync six times whenever the backoff ended.
    requests = [
        call("add_handler", name="h0", raises=False, resync=None),
        call("start"),
        call("list_reply", objects=[obj("a", 3)], rv="3"),
        call("watch_error", reason="too_many_requests"),
        {"op": "advance", "seconds": 65.0},
        call("state"),
    ]
    answers = drive(requests, {"fifo": mode, "resync": 10.0})
    assert answers[3]["result"]["waiting"] == {"op": "sleeping"}
    update = {"handler": "h0", "kind": "update", "key": "a", "rv": "3", "old_rv": "3", "cache": "3"}
    state = answers[5]["result"]
    assert state["calls"] == [update] * 6
    assert state["waiting"] == {"op": "watch", "rv": "3"}  # the backoff ended at the step's end


def test_the_steered_reference_agrees_on_resyncs_during_a_watch_backoff(tmp_path: Path) -> None:
    # The in-process reference is steered by the adapter's answers (its backoff ends when
    # the adapter asks again, seen after the advance); the reference adapter process is
    # not. Resyncs inside the advance must not end the process's backoff early: a watch
    # that then opens and ends at once is "very short" (a relist) on both sides only if
    # both made the request at the end of the step.
    trace = ROOT / "adapters" / "client-go" / "findings" / "resync-during-watch-backoff.jsonl"
    lines = trace.read_text(encoding="utf-8").splitlines()
    tail = [call("watch_open"), call("watch_end", how="clean"), call("state")]
    tail = [{**r, "instance": "i"} for r in tail]
    extended = tmp_path / "extended.jsonl"
    extended.write_text("\n".join(lines + [json.dumps(r) for r in tail]) + "\n")
    for path in (trace, extended):
        status, out = conform(REFERENCE, replay=str(path))
        assert status == EXIT_PASS, out
    last = out.strip().splitlines()[-1]
    assert "watch_end" in out and 'waiting: {op: "sleeping"}' in last  # very short: relist


def _steered_very_short_watch(adapter_after_end: str) -> dict[str, Any]:
    """client-go check 9's sequence (watch-list on): the stream ends at once, the
    backoff runs, and the adapter is seen asleep at 1.4 s but asking again at 3.4 s;
    the reference, steered, asks at 3.4 s. The re-requested stream then opens and ends
    cleanly at 3.4 s: very short if the adapter asked after 2.4 s, not if before. The
    adapter's answer to that end is ``adapter_after_end``; the reference's is returned."""
    driver = ReferenceDriver(steered=True)
    driver.handle({"id": 0, "op": "hello", "protocol": 2})
    options = {"resync": 0, "fifo": "real-atomic", "watch_list": True}
    driver.handle(
        {"id": 1, "op": "create", "instance": "i", "component": "informer", "options": options}
    )
    bookmark = {"namespace": "", "name": "", "rv": "1", "labels": {}}
    stream = {"op": "watch", "rv": "1", "send_initial_events": True}
    steps: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
        (call("start"), None),
        (call("watch_open"), None),
        (call("watch_event", type="BOOKMARK", object=bookmark, initial_events_end=True), None),
        (call("watch_end", how="clean"), None),
        ({"op": "advance", "seconds": 1.4}, None),
        (call("state"), {"op": "sleeping"}),
        ({"op": "advance", "seconds": 2.0}, None),
        (call("state"), stream),  # the adapter woke inside the advance
        (call("watch_open"), {**stream, "op": "watching"}),
        (
            call("watch_end", how="clean"),
            {"op": "list", "rv": "1"} if adapter_after_end == "list" else stream,
        ),
    ]
    answer: dict[str, Any] = {}
    for n, (request, waiting) in enumerate(steps, start=2):
        actual = None if waiting is None else {"id": n, "result": {"waiting": waiting}}
        answer = driver.handle({"id": n, **request}, actual)
    reference: dict[str, Any] = answer["result"]["waiting"]
    return reference


def test_an_undetermined_very_short_watch_follows_the_adapter() -> None:
    # Where the protocol leaves open when the adapter asked (its jittered backoff ended
    # inside an advance), client-go's 1 s rule has no single answer: the reference takes
    # the adapter's, either way (found by the client-go peer: adapters/client-go/findings/
    # informer-very-short-watch.jsonl).
    assert _steered_very_short_watch("watch") == {
        "op": "watch",
        "rv": "1",
        "send_initial_events": True,
    }
    # very short: the stream failed, so the reflector falls back to a list at once
    assert _steered_very_short_watch("list") == {"op": "list", "rv": "1"}
