"""The reference adapter passes ``refimpl conform``, and the reference driver's own rules.

End to end: the harness, the protocol and the reference adapter process agree on every
component (a short budget each; CI proves the whole chain with it). Unit level: the
steering that lets an implementation order simultaneous deadlines its own way, replay of
saved traces, and the driver's answers to malformed requests.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conform_helpers import run_conform

from refimpl.conformance.protocol import COMPONENTS, SPEC_METHODS
from refimpl.conformance.reference.dispatch import ReferenceDriver, reference_methods
from refimpl.conformance.search.config import EXIT_DISAGREE, EXIT_PASS, Config

REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
BROKEN = str(Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py")


def conform(command: list[str], **overrides: object) -> tuple[int, str]:
    return run_conform(command, **({"budget": 6.0, "seed": 11} | overrides))


@pytest.mark.timeout(60)
def test_reference_adapter_passes_every_component() -> None:
    status, text = conform(REFERENCE, misuse=True)
    assert status == EXIT_PASS, text
    for component in COMPONENTS:
        assert f"  {component}" in text and "PASS" in text, text
    assert "FAIL" not in text


def call_request(rid: int, method: str, instance: str = "q", **args: object) -> dict[str, Any]:
    return {"id": rid, "op": "call", "instance": instance, "method": method, "args": args}


def call(driver: ReferenceDriver, rid: int, method: str, **args: object) -> object:
    response = driver.handle(call_request(rid, method, "q", **args))
    assert "result" in response, response
    return response["result"]


def delaying_with_tie() -> ReferenceDriver:
    driver = ReferenceDriver()
    driver.handle({"id": 1, "op": "create", "instance": "q", "component": "delaying_queue"})
    call(driver, 2, "add_after", item="a", delay=0.005)
    call(driver, 3, "add_after", item="b", delay=0.005)
    call(driver, 4, "add_after", item="c", delay=0.001)
    driver.handle({"id": 5, "op": "advance", "seconds": 0.005})
    return driver


def test_unsteered_driver_fires_earliest_first_then_in_heap_order() -> None:
    driver = delaying_with_tie()
    got = [call(driver, 10 + i, "get_nowait") for i in range(4)]
    assert got == [
        {"kind": "item", "item": "c"},
        {"kind": "item", "item": "a"},
        {"kind": "item", "item": "b"},
        {"kind": "empty"},
    ]


def test_steering_accepts_any_order_of_simultaneous_deadlines_only() -> None:
    driver = delaying_with_tie()
    request = {"id": 9, "op": "call", "instance": "q", "method": "get_nowait", "args": {}}
    # c was due earlier: handing out b first is a real difference, not a tie.
    wrong = {"id": 9, "result": {"kind": "item", "item": "b"}}
    assert driver.handle(request, wrong)["result"] == {"kind": "item", "item": "c"}
    # a and b were due at the same instant: either may come next.
    chosen = {"id": 9, "result": {"kind": "item", "item": "b"}}
    assert driver.handle(request, chosen)["result"] == {"kind": "item", "item": "b"}
    assert driver.handle(request)["result"] == {"kind": "item", "item": "a"}


def test_reference_declares_heap_order_and_the_client_go_tie_order() -> None:
    hello = ReferenceDriver().handle({"id": 0, "op": "hello", "protocol": 2})["result"]
    assert hello["components"]["delaying_queue"]["heap_order"] is True
    assert hello["components"]["rate_limiting_queue"]["heap_order"] is True
    driver = ReferenceDriver()
    driver.handle({"id": 1, "op": "create", "instance": "q", "component": "delaying_queue"})
    for rid, item in enumerate("abc", start=2):
        call(driver, rid, "add_after", item=item, delay=0.010)
    driver.handle({"id": 5, "op": "advance", "seconds": 0.009})
    driver.handle({"id": 6, "op": "advance", "seconds": 0.001})  # exactly 10 ms in ns
    got = [call(driver, 10 + i, "get_nowait") for i in range(3)]
    assert got == [{"kind": "item", "item": x} for x in "acb"]


def test_declared_heap_order_is_compared_exactly() -> None:
    driver = ReferenceDriver(steered=True)
    driver.heap_order = frozenset({"delaying_queue"})
    driver.handle({"id": 1, "op": "create", "instance": "q", "component": "delaying_queue"})
    call(driver, 2, "add_after", item="a", delay=0.005)
    call(driver, 3, "add_after", item="b", delay=0.005)
    call(driver, 4, "add_after", item="c", delay=0.001)
    driver.handle({"id": 5, "op": "advance", "seconds": 0.005})
    request = {"id": 9, "op": "call", "instance": "q", "method": "get_nowait", "args": {}}
    assert driver.handle(request)["result"] == {"kind": "item", "item": "c"}
    # a and b fell due together, but the adapter promised client-go's heap: b is wrong.
    chosen = {"id": 9, "result": {"kind": "item", "item": "b"}}
    assert driver.handle(request, chosen)["result"] == {"kind": "item", "item": "a"}


def test_harness_reads_heap_order_from_hello() -> None:
    from refimpl.conformance.search.session import RunContext

    ctx = RunContext.__new__(RunContext)
    ctx.config = Config(command=[])
    ctx.hello = {
        "components": {
            "queue": {"heap_order": True},
            "delaying_queue": {"heap_order": True},
            "rate_limiting_queue": {"heap_order": "yes"},
        }
    }
    assert ctx.heap_order() == frozenset({"delaying_queue"})
    ctx.hello = {"components": {}}
    assert ctx.heap_order() == frozenset()


def test_exact_compares_heap_order_even_if_not_declared() -> None:
    import argparse

    from refimpl.conformance.cli import add_arguments, config_from_args
    from refimpl.conformance.search.session import RunContext

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    ctx = RunContext.__new__(RunContext)
    ctx.hello = {"components": {"delaying_queue": {}, "rate_limiting_queue": {}}}
    config = config_from_args(parser.parse_args(["--exact", "--", "adapter"]))
    assert not isinstance(config, str) and config.exact
    ctx.config = config
    assert ctx.heap_order() == frozenset({"delaying_queue", "rate_limiting_queue"})


def test_driver_answers_malformed_requests_in_protocol() -> None:
    driver = ReferenceDriver()
    assert driver.handle({"id": 1, "op": "bogus"})["error"]["kind"] == "bad_request"
    assert driver.handle({"id": 2, "op": "hello", "protocol": 9})["error"]["kind"] == "unsupported"
    assert driver.handle({"id": 3, "op": "call", "instance": "x"})["error"]["kind"] == "no_instance"
    bad_limiter = {
        "id": 4,
        "op": "create",
        "instance": "r",
        "component": "rate_limiter",
        "options": {"limiter": {"name": "exponential", "base": -1, "max": 1}},
    }
    assert driver.handle(bad_limiter)["error"]["kind"] == "invalid_argument"
    driver.handle({"id": 5, "op": "create", "instance": "s", "component": "store"})
    unknown_index = {
        "id": 6,
        "op": "call",
        "instance": "s",
        "method": "index_keys",
        "args": {"index": "bogus", "value": "x"},
    }
    assert driver.handle(unknown_index)["error"]["kind"] == "invalid_argument"
    backwards = driver.handle({"id": 7, "op": "advance", "seconds": -1})
    assert backwards["error"]["kind"] == "bad_request"


def test_every_protocol_method_has_a_reference_handler() -> None:
    """Each component's handler table carries out exactly the methods the protocol
    names for it (and the spec walks' methods it declares), no more, no fewer."""
    for component, methods in COMPONENTS.items():
        declared = frozenset(methods + SPEC_METHODS.get(component, ()))
        assert reference_methods(component) == declared, component


def test_unknown_ops_components_and_methods_are_refused_by_kind() -> None:
    driver = ReferenceDriver()
    assert driver.handle({"id": 1, "op": ["call"]})["error"]["kind"] == "bad_request"
    for component in ("bogus", ["queue"], None):
        create = {"id": 2, "op": "create", "instance": "x", "component": component}
        assert driver.handle(create)["error"]["kind"] == "unsupported", component
    old = ReferenceDriver()
    assert old.handle({"id": 3, "op": "hello", "protocol": 1})["result"]["protocol"] == 1
    create = {"id": 4, "op": "create", "instance": "i", "component": "informer"}
    assert old.handle(create)["error"]["kind"] == "unsupported"
    for rid, component in enumerate(("store", "rate_limiter", "delta_fifo", "queue"), 5):
        driver.handle({"id": rid, "op": "create", "instance": component, "component": component})
        bogus = call_request(10 + rid, "bogus", component, item="a")
        assert driver.handle(bogus)["error"]["kind"] == "unsupported", component
    no_item = call_request(20, "bogus", "rate_limiter")
    assert driver.handle(no_item)["error"]["kind"] == "bad_request"


def test_rate_limiter_durations_are_exact_nanoseconds() -> None:
    driver = ReferenceDriver()
    spec = {"name": "exponential", "base": 0.005, "max": 1000}
    driver.handle(
        {
            "id": 1,
            "op": "create",
            "instance": "q",
            "component": "rate_limiter",
            "options": {"limiter": spec},
        }
    )
    delays = [call(driver, 2 + n, "when", item="a") for n in range(20)]
    assert delays[17] == 655.36 and delays[18] == 1000.0, delays


@pytest.mark.timeout(60)
def test_saved_trace_replays(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    command = [sys.executable, BROKEN, "--bug", "add-while-processing-pushes"]
    status, text = conform(
        command, components=["queue"], budget=10.0, save=str(trace), quick_shrink=True
    )
    assert status == EXIT_DISAGREE, text
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert lines[0]["conform_trace"] == 1 and lines[0]["component"] == "queue"
    # The same trace fails against the broken adapter and passes against the reference.
    status, text = conform(command, replay=str(trace))
    assert status == EXIT_DISAGREE and "<== differs" in text, text
    status, text = conform(REFERENCE, replay=str(trace))
    assert status == EXIT_PASS and "agree with the reference" in text, text


@pytest.mark.timeout(60)
def test_skip_looks_past_a_known_difference() -> None:
    command = [sys.executable, BROKEN, "--bug", "shutdown-discards-queue"]
    status, text = conform(command, components=["queue"], budget=3.0, quick_shrink=True)
    assert status == EXIT_DISAGREE and "shut_down" in text, text
    # Without shut_down the bug cannot show, so the same adapter passes.
    status, text = conform(command, components=["queue"], budget=2.0, skip=["shut_down"])
    assert status == EXIT_PASS, text


def test_option_must_be_json(capsys: pytest.CaptureFixture[str]) -> None:
    from refimpl.conformance.cli import main

    assert main(["--option", "known_objects=nope", "--", "true"]) == 3
    assert "must be JSON" in capsys.readouterr().err


# -- the optional parts the spec-driven walks use (docs/protocol.md) ----------------------


def _obj(name: str, rv: str) -> dict[str, object]:
    return {"namespace": "", "name": name, "rv": rv, "labels": {}}


def test_a_call_carries_observations_taken_after_it() -> None:
    driver = ReferenceDriver()
    assert driver.capabilities()["components"]["delaying_queue"]["observe"] == [
        "len",
        "shutting_down",
        "drain_returned",
    ]
    driver.handle({"id": 1, "op": "create", "instance": "q", "component": "delaying_queue"})
    request = call_request(2, "add", item="a")
    response = driver.handle({**request, "observe": ["len", "shutting_down"]})
    assert response == {"id": 2, "result": None, "observed": {"len": 1, "shutting_down": False}}
    # The same as the reads sent as requests of their own right after.
    assert call(driver, 3, "len") == 1
    # Each read once, in the order asked; "a" was already queued.
    response = driver.handle({**request, "id": 4, "observe": ["drain_returned", "len"]})
    assert list(response["observed"].items()) == [("drain_returned", False), ("len", 1)]
    # An empty list observes nothing, and says so.
    assert driver.handle({**request, "id": 6, "observe": []})["observed"] == {}


def test_a_bad_observation_refuses_the_call_unrun() -> None:
    driver = ReferenceDriver()
    driver.handle({"id": 1, "op": "create", "instance": "q", "component": "delaying_queue"})
    request = call_request(2, "add", item="a")
    for observe in (["has_synced"], ["add"], "len", [1]):
        response = driver.handle({**request, "observe": observe})
        assert response["error"]["kind"] == "bad_request", (observe, response)
    assert call(driver, 3, "len") == 0
    response = driver.handle({**request, "instance": "nope", "observe": ["len"]})
    assert response["error"]["kind"] == "no_instance"
    # A call that fails answers its error alone.
    response = driver.handle({**call_request(4, "done"), "observe": ["len"]})
    assert "error" in response and "observed" not in response
    # Without the declaration, a call may observe nothing.
    plain = ReferenceDriver(observe=False)
    assert "observe" not in plain.capabilities()["components"]["delaying_queue"]
    plain.handle({"id": 1, "op": "create", "instance": "q", "component": "delaying_queue"})
    assert plain.handle({**request, "observe": ["len"]})["error"]["kind"] == "bad_request"


def test_pop_batch_nowait_takes_a_batch_or_one_entry() -> None:
    driver = ReferenceDriver()
    driver.handle({"id": 1, "op": "create", "instance": "q", "component": "real_fifo"})
    for i, name in enumerate(("a", "b", "a")):
        call(driver, 2 + i, "add", obj=_obj(name, str(i + 1)))
    # Distinct keys from the head: a, b (the second a closes the batch).
    batch = call(driver, 10, "pop_batch_nowait")
    assert batch == {
        "kind": "batch",
        "deltas": [
            {"type": "Added", "object": _obj("a", "1")},
            {"type": "Added", "object": _obj("b", "2")},
        ],
        "initial": False,
    }
    single = call(driver, 11, "pop_batch_nowait")
    assert single == {
        "kind": "item",
        "deltas": [{"type": "Added", "object": _obj("a", "3")}],
        "initial": False,
    }
    assert call(driver, 12, "pop_batch_nowait") == {"kind": "empty"}
    call(driver, 13, "close")
    assert call(driver, 14, "pop_batch_nowait") == {"kind": "closed"}
    # Not while a pop_begin's process function runs.
    driver.handle({"id": 15, "op": "create", "instance": "r", "component": "real_fifo"})
    driver.handle(call_request(16, "add", "r", obj=_obj("a", "1")))
    driver.handle(call_request(17, "pop_begin", "r"))
    response = driver.handle(call_request(18, "pop_batch_nowait", "r"))
    assert response["error"]["kind"] == "bad_request"


def test_reference_adapter_rejects_unknown_arguments() -> None:
    import subprocess

    done = subprocess.run(
        [*REFERENCE, "--bogus"], input=b"", capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 2 and b"--no-observe" in done.stderr


def _resynced(*known: dict[str, object]) -> ReferenceDriver:
    """A real_fifo "q" whose known objects are ``known``, after a resync (the Sync
    entries' order is open: Go map order)."""
    driver = ReferenceDriver()
    driver.handle({"id": 1, "op": "create", "instance": "q", "component": "real_fifo"})
    for i, obj in enumerate(known):
        call(driver, 2 + i, "known_add", obj=obj)
    call(driver, 2 + len(known), "resync")
    return driver


def _steered_sync_pop(
    driver: ReferenceDriver, rid: int, obj: dict[str, object], initial: bool = False
) -> object:
    """A pop_nowait steered by an adapter that popped ``Sync obj``; the popped object."""
    sync = {"kind": "item", "deltas": [{"type": "Sync", "object": obj}], "initial": initial}
    answer = driver.handle(call_request(rid, "pop_nowait"), actual={"result": sync})
    return answer["result"]["deltas"][0]["object"]


def test_a_replace_tombstones_queued_keys_in_the_order_the_adapter_queued_them() -> None:
    """client-go's RealFIFO.Replace (reconcileReplacement) tombstones queued keys in
    the order they were first queued; when that order was a resync's open (Go map)
    order, the tombstones follow the order the adapter took there."""
    b, xa = _obj("b", "2"), {**_obj("a", "3"), "namespace": "x"}
    for first, second in ((xa, b), (b, xa)):
        driver = _resynced(b, xa)
        call(driver, 5, "replace", objs=[_obj("a", "1")], rv="10")
        popped = [_steered_sync_pop(driver, 6 + i, obj) for i, obj in enumerate((first, second))]
        assert popped == [first, second]
        tombstones = [call(driver, 8 + i, "pop_nowait") for i in range(2)]
        keys = [t["deltas"][0]["object"]["tombstone"]["key"] for t in tombstones]  # type: ignore[index]
        assert keys == ["x/a" if first is xa else "b", "b" if first is xa else "x/a"]


def test_a_key_first_queued_by_a_resync_leads_the_tombstones_of_every_replace() -> None:
    """Two replaces after a resync: each one's tombstones follow the adapter's order of
    the Sync entries (only the first replace has two queued keys led by them)."""
    b, xa = _obj("b", "1"), {**_obj("a", "1"), "namespace": "x"}
    driver = _resynced(b, xa)
    call(driver, 5, "replace", objs=[], rv="10")
    call(driver, 6, "add", obj=_obj("a", "1"))
    call(driver, 7, "add", obj=b)
    call(driver, 8, "replace", objs=[], rv="10")
    for i, obj in enumerate((b, xa)):  # the insertion order, as the reference has it
        _steered_sync_pop(driver, 9 + i, obj, initial=True)
    tombstone = call(driver, 11, "pop_nowait")
    assert tombstone["deltas"][0]["object"]["tombstone"]["key"] == "b"  # type: ignore[index]
