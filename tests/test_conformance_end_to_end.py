"""INF-3 end to end in the FIFO components: popped deltas applied to a store as an
informer does (refimpl/conformance/search/invariants.py ``PoppedStore``, the generator's wired
mode in machines.py, the consequence in search/session.py).

Unit level, on hand-written answers: a drained FIFO whose pops leave a ghost breaks
INF-3, but only when the comparison is fair (the known objects are the store built from
the pops, or the RealFIFO is atomic). End to end: the broken variant
replace-no-queued-tombstones (kubernetes#115620, the bug of aiok8s' DeltaFIFO) is
reported with the ghost it leaves in the cache.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.cache.deltas import BookmarkInfo, Delta, DeltaType, ReplacedAllInfo, SyncAllInfo
from refimpl.conformance.reference.cache import delta_from_json, delta_json
from refimpl.conformance.search.config import Config
from refimpl.conformance.search.invariants import AnswerChecker
from refimpl.conformance.search.report import format_failure
from refimpl.conformance.search.run import run_component
from refimpl.conformance.search.session import RunContext
from refimpl.meta import DeletedFinalStateUnknown, Object

BROKEN = Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py"
A1 = {"namespace": "", "name": "a", "rv": "1", "labels": {}}
XB2 = {"namespace": "x", "name": "b", "rv": "2", "labels": {"team": "red"}}


def create(component: str, **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    request = {"op": "create", "instance": "x", "component": component, "options": options}
    return request, {"result": None}


def call(method: str, result: Any = None, **args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return {"op": "call", "instance": "x", "method": method, "args": args}, {"result": result}


def item(*deltas: tuple[str, Any]) -> dict[str, Any]:
    return {"kind": "item", "deltas": [{"type": t, "object": o} for t, o in deltas]}


EMPTY = {"kind": "empty"}


def violations(*steps: tuple[dict[str, Any], dict[str, Any]]) -> list[str]:
    checker = AnswerChecker()
    found: list[str] = []
    for request, response in steps:
        found += checker.check(request, response)
    return found


# An adapter whose Replace forgot the tombstone of a key that was only queued: its pops
# agree with nothing here, but the checker sees only its answers.
NO_TOMBSTONE = [
    call("add", obj=A1),
    call("replace", objs=[], rv="10"),
    call("pop_nowait", item(("Added", A1))),
]


def test_a_ghost_after_a_relist_breaks_inf3_when_known_objects_are_the_store() -> None:
    found = violations(
        create("delta_fifo", known_objects=True, emit_delta_type_replaced=True),
        *NO_TOMBSTONE,
        call("known_add", obj=A1),  # what processDeltas did to the informer's indexer
        call("pop_nowait", EMPTY),
    )
    assert found == [
        'after the relist at step 3 (replace [] "10") and draining the FIFO, the store '
        "built from the pops still holds a@1 (a ghost: INF-3)"
    ]


def test_the_correct_pops_leave_no_ghost() -> None:
    tombstone = {"tombstone": {"key": "a", "obj": A1}}
    assert not violations(
        create("delta_fifo", known_objects=True, emit_delta_type_replaced=True),
        call("add", obj=A1),
        call("replace", objs=[XB2], rv="10"),
        call("pop_nowait", item(("Added", A1), ("Deleted", tombstone))),
        call("pop_nowait", item(("Replaced", XB2))),
        call("known_add", obj=XB2),
        call("pop_nowait", EMPTY),
    )


def test_no_verdict_when_the_known_objects_are_not_the_store() -> None:
    # known_add of b at a relist: not how an informer is wired, so not compared.
    assert not violations(
        create("delta_fifo", known_objects=True, emit_delta_type_replaced=True),
        call("known_add", obj=XB2),
        *NO_TOMBSTONE,
        call("pop_nowait", EMPTY),
    )


def test_no_verdict_without_known_objects() -> None:
    # client-go's DeltaFIFO without known objects leaves such ghosts by design.
    assert not violations(
        create("delta_fifo", known_objects=False, emit_delta_type_replaced=True),
        *NO_TOMBSTONE,
        call("pop_nowait", EMPTY),
    )


def test_atomic_real_fifo_is_always_compared() -> None:
    replaced_all = {"replaced_all": {"rv": "10", "objects": []}}
    found = violations(
        create("real_fifo", atomic=True),
        call("add", obj=A1),
        call("replace", objs=[A1, XB2], rv="10"),
        call("pop_nowait", item(("Added", A1))),
        call("pop_nowait", item(("ReplacedAll", replaced_all))),  # lost the list
        call("pop_nowait", EMPTY),
    )
    assert found == [
        'after the relist at step 3 (replace [a@1, x/b@2{team=red}] "10") and draining the '
        "FIFO, the store built from the pops lacks a@1, which the source has (INF-3); lacks "
        "x/b@2{team=red}, which the source has (INF-3)"
    ]


def test_known_fixes_are_what_process_deltas_did_to_the_store() -> None:
    checker = AnswerChecker()
    for request, response in (
        create("real_fifo", atomic=False),
        call("known_add", obj=A1),
        call("add", obj=XB2),
        call("pop_nowait", item(("Added", XB2))),
    ):
        checker.check(request, response)
    assert checker.popped is not None
    assert checker.popped.known_fixes() == [("known_delete", A1), ("known_add", XB2)]


@pytest.mark.parametrize(
    "delta",
    [
        Delta(DeltaType.ADDED, Object("a", namespace="x", resource_version="3")),
        Delta(DeltaType.DELETED, DeletedFinalStateUnknown("x/a", None)),
        Delta(DeltaType.REPLACED_ALL, ReplacedAllInfo("7", (Object("b"),))),
        Delta(DeltaType.SYNC_ALL, SyncAllInfo()),
        Delta(DeltaType.BOOKMARK, BookmarkInfo("9")),
    ],
)
def test_delta_from_json_inverts_delta_json(delta: Delta) -> None:
    assert delta_json(delta_from_json(delta_json(delta))) == delta_json(delta)


@pytest.mark.timeout(120)
def test_replace_without_queued_tombstones_is_reported_as_the_ghost_it_leaves() -> None:
    """Seeds 1, 2, 3 (fixed), known objects on (as an informer's DeltaFIFO has them;
    without, client-go itself leaves such ghosts): each reports the ghost next to the
    missing delta."""
    for seed in (1, 2, 3):
        config = Config(
            command=[sys.executable, str(BROKEN), "--bug", "replace-no-queued-tombstones"],
            budget=6.0,
            shrink_budget=4.0,
            seed=seed,
            quick_shrink=True,
            progress=False,
            options={"known_objects": True},
            max_findings=1,
        )
        ctx = RunContext(config, io.StringIO())
        try:
            ctx.start_adapter()
            failure = run_component(ctx, "delta_fifo", config.budget).failure
        finally:
            ctx.close()
        assert failure is not None, f"seed {seed}: not caught"
        report = format_failure(failure, config)
        text = " ".join(report.split())  # the end-to-end line is wrapped
        assert "the store built from the adapter's pops still holds" in text, report
        assert "(a ghost: INF-3)" in text, report
        assert "the reference's pops leave it equal to the source" in text, report
        assert len(failure.steps) <= 6, report
