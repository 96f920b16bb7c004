"""Reports a maintainer can file (issue 25, item 7): at the failing step, what the
reference answered and what the adapter answered; for a FIFO pop, the extra or missing
delta by name; what client-go does when triage asked it; INF-9 says the watch loop
ended."""

from __future__ import annotations

from typing import Any

from refimpl.conformance.search.config import Config, Failure, FailureKind, Step
from refimpl.conformance.search.informer_invariants import InformerChecker
from refimpl.conformance.search.report import delta_difference, failing_step, format_failure


def obj(name: str, rv: int) -> dict[str, Any]:
    return {"namespace": "", "name": name, "rv": str(rv), "labels": {}}


def tombstone(name: str, rv: int) -> dict[str, Any]:
    return {"tombstone": {"key": name, "obj": obj(name, rv)}}


def pop(*deltas: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    items = [{"type": kind, "object": o} for kind, o in deltas]
    return {"result": {"kind": "item", "deltas": items, "initial": False}}


POP = {"op": "call", "instance": "x", "method": "pop_nowait", "args": {}}
CREATE = {"op": "create", "instance": "x", "component": "delta_fifo", "options": {}}


def fifo_failure(reference: dict[str, Any], adapter: dict[str, Any]) -> Failure:
    steps = [Step(CREATE, {"result": None}, {"result": None}), Step(POP, reference, adapter)]
    return Failure("disagreement", "delta_fifo", steps, "differs", example=1, found_after=0.0)


def test_an_extra_delta_is_named() -> None:
    reference = pop(("Replaced", obj("a", 2)))
    adapter = pop(("Replaced", obj("a", 2)), ("Sync", obj("a", 2)))
    assert delta_difference(reference, adapter) == "the adapter's pop has an extra Sync a@2"


def test_a_missing_delta_is_named_and_both_together() -> None:
    reference = pop(("Added", obj("b", 1)), ("Deleted", tombstone("b", 1)))
    assert (
        delta_difference(reference, pop(("Added", obj("b", 1))))
        == "the adapter's pop is missing Deleted DFSU(b, b@1)"
    )
    swapped = pop(("Added", obj("b", 1)), ("Deleted", obj("b", 1)))
    assert delta_difference(reference, swapped) == (
        "the adapter's pop has an extra Deleted b@1 and is missing Deleted DFSU(b, b@1)"
    )


def test_an_empty_pop_misses_every_delta_and_order_is_named() -> None:
    empty = {"result": {"kind": "empty"}}
    assert delta_difference(pop(("Added", obj("a", 1))), empty) == (
        "the adapter's pop is missing Added a@1"
    )
    one = pop(("Added", obj("a", 1)), ("Updated", obj("a", 2)))
    other = pop(("Updated", obj("a", 2)), ("Added", obj("a", 1)))
    assert delta_difference(one, other) == (
        "the adapter's pop has the same deltas in another order"
    )
    assert delta_difference(one, one) == ""
    assert delta_difference({"result": 3}, {"result": 4}) == ""  # not a pop


def test_the_report_says_both_answers_and_the_delta_at_the_failing_step() -> None:
    failure = fifo_failure(
        pop(("Added", obj("a", 1))), pop(("Added", obj("a", 1)), ("Sync", obj("a", 1)))
    )
    report = " ".join(format_failure(failure, Config(command=["x"], seed=1)).split())
    assert (
        "at step 2 (pop_nowait): the reference answered [Added a@1]; the adapter answered "
        "[Added a@1, Sync a@1]" in report
    ), report
    assert "the adapter's pop has an extra Sync a@1" in report, report
    assert "client-go:" not in report  # triage did not run


def test_client_go_line_when_triage_labelled_it() -> None:
    failure = fifo_failure(pop(("Added", obj("a", 1))), {"result": {"kind": "empty"}})
    failure.client_go = "client-go does the same"
    # once, under the signature (two lines came from two places before)
    report = format_failure(failure, Config(command=["x"], seed=1))
    assert report.count("client-go: client-go does the same") == 1, report


def test_long_answers_show_only_the_fields_that_differ() -> None:
    calls = [{"handler": "h0", "kind": "add", "key": "a", "rv": "2"}]
    cache = [obj(f"k{n}", n) for n in range(2, 12)]  # long, and the same on both sides
    reference = {"result": {"waiting": {"op": "watching"}, "cache": cache, "calls": calls}}
    adapter = {"result": {"waiting": {"op": "watching"}, "cache": cache, "calls": []}}
    request = {"op": "call", "instance": "i", "method": "watch_event", "args": {}}
    kind: FailureKind = "invariant"
    steps = [Step(request, reference, adapter)]
    failure = Failure(kind, "informer", steps, "INF-3 x", example=1, found_after=0.0)
    line = failing_step(failure)[0]
    assert line.startswith("at step 1 (watch_event): the reference answered {calls: [{handler:")
    assert line.endswith("the adapter answered {calls: []}"), line
    assert "k11" not in line


def test_an_adapter_failure_gets_no_answers_line() -> None:
    steps = [Step(POP, {"result": None}, None)]
    failure = Failure("adapter", "delta_fifo", steps, "it exited", example=1, found_after=0.0)
    assert failing_step(failure) == []


def test_inf_9_says_the_watch_loop_ended() -> None:
    checker = InformerChecker()

    def call(method: str, **args: Any) -> dict[str, Any]:
        return {"op": "call", "instance": "i", "method": method, "args": args}

    def answer(op: str) -> dict[str, Any]:
        waiting = {"op": op, "rv": "0"} if op == "list" else {"op": op}
        return {"result": {"waiting": waiting, "has_synced": False, "cache": [], "calls": []}}

    assert checker.check(call("start"), answer("list")) == []
    assert checker.check(call("list_error", reason="internal"), answer("sleeping")) == []
    assert checker.check({"op": "advance", "seconds": 301.0}, {"result": None}) == []
    problems = checker.check(call("state"), answer("sleeping"))
    assert len(problems) == 1 and problems[0].startswith(
        "INF-9 it keeps trying: the watch loop ended"
    )
    assert "301 s of fake time" in problems[0] and "sleep" not in problems[0]
