"""A FIFO finding names what its wrong pops do to the store they feed (issue 25): all
of a DeltaFIFO's wrong pops fail at ``pop_nowait``, so without it a ghost (kubernetes
#115620) and a lost re-add (#83911) would be one signature, and once one is found the
other is set aside. ``Failure.signature`` names the worst fault (ghost, lacks, stale);
a difference without one may shrink into one, and once one is found at a method, such
differences there are set aside."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conform_helpers import run_conform

from refimpl.conformance.search.config import EXIT_DISAGREE, Failure, Step
from refimpl.conformance.search.invariants import PoppedStore
from refimpl.conformance.search.minimize import _same_finding

BROKEN = str(Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py")
HEADER = re.compile(r"^finding \d+ of \d+: (\S+)", re.MULTILINE)


def _difference(kinds: tuple[str, ...], method: str = "pop_nowait") -> Failure:
    steps = [Step({"method": "add"}, None, None), Step({"method": method}, None, None)]
    return Failure("disagreement", "delta_fifo", steps, "differs", 1, 0.0, consequence_kinds=kinds)


@pytest.mark.parametrize(
    ("kinds", "what"),
    [
        ((), "differs"),
        (("lacks",), "differs:lacks"),
        (("stale",), "differs:stale"),
        (("ghost", "stale"), "differs:ghost"),
        (("lacks", "stale"), "differs:lacks"),
    ],
)
def test_signature_names_the_worst_fault(kinds: tuple[str, ...], what: str) -> None:
    assert _difference(kinds).signature == f"delta_fifo/{what}/pop_nowait"


def _call(method: str, **args: object) -> dict[str, object]:
    return {"op": "call", "instance": "x", "method": method, "args": args}


def _obj(name: str, rv: str) -> dict[str, object]:
    return {"namespace": "", "name": name, "rv": rv, "labels": {}}


def _pop(*deltas: tuple[str, dict[str, object]]) -> dict[str, object]:
    return {"kind": "item", "deltas": [{"type": t, "object": o} for t, o in deltas]}


def test_the_popped_store_names_each_fault() -> None:
    """a@1 popped but its relist tombstone lost: a ghost; b@2 never popped: lacking."""
    store = PoppedStore("delta_fifo", {"known_objects": True})
    store.feed(1, _call("add", obj=_obj("a", "1")), None)
    store.feed(2, _call("replace", objs=[_obj("b", "2")], rv="2"), None)
    store.feed(3, _call("pop_nowait"), _pop(("Added", _obj("a", "1"))))
    verdict = store.feed(4, _call("pop_nowait"), {"kind": "empty"})
    assert verdict is not None and "a ghost" in verdict and "lacks b@2" in verdict, verdict
    assert store.fault_kinds() == ("ghost", "lacks")


def test_a_plain_difference_may_shrink_into_one_with_a_consequence() -> None:
    plain, ghost, lacks = _difference(()), _difference(("ghost",)), _difference(("lacks",))
    assert _same_finding(ghost, plain)
    assert not _same_finding(plain, ghost)  # a consequence is part of how it fails
    assert not _same_finding(lacks, ghost)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [1, 2])
def test_a_ghost_is_told_once(seed: int) -> None:
    """The broken adapter without #115620's queued tombstones: its wrong pops leave a
    ghost, or nothing to see in the store (a later re-add hides it; or the FIFO has no
    known objects, where no store comparison is fair). The ghost is a finding of its
    own, and a difference without a consequence at ``pop_nowait`` is a finding only
    if it came first: once the ghost is found, such examples are set aside (with seed
    2 one shows up while the ghost is being shrunk). Counted in examples, not seconds,
    so the run is the same on any machine."""
    command = [sys.executable, BROKEN, "--bug", "replace-no-queued-tombstones"]
    status, text = run_conform(
        command,
        components=["delta_fifo"],
        budget=600.0,
        max_examples=600,
        shrink_budget=20.0,
        seed=seed,
    )
    assert status == EXIT_DISAGREE, text
    found = HEADER.findall(text)
    ghost = "delta_fifo/differs:ghost/pop_nowait"
    assert ghost in found, text
    assert found[found.index(ghost) + 1 :] == [], text  # nothing told after it
