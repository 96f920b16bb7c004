"""The reference adapter passes ``refimpl conform``, and the reference driver's own rules.

End to end: the harness, the protocol and the reference adapter process agree on every
component (a short budget each; CI proves the whole chain with it). Unit level: the
steering that lets an implementation order simultaneous deadlines its own way, replay of
saved traces, and the driver's answers to malformed requests.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from refimpl.conformance.driver import ReferenceDriver
from refimpl.conformance.protocol import COMPONENTS
from refimpl.conformance.runner import EXIT_DISAGREE, EXIT_PASS, Config, run

REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference_adapter"]
BROKEN = str(Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py")


def conform(command: list[str], **overrides: object) -> tuple[int, str]:
    settings: dict[str, object] = {
        "command": command,
        "budget": 6.0,
        "seed": 11,
        "progress": False,
    }
    settings.update(overrides)
    out = io.StringIO()
    status = run(Config(**settings), out=out, err=io.StringIO())  # type: ignore[arg-type]
    return status, out.getvalue()


@pytest.mark.timeout(60)
def test_reference_adapter_passes_every_component() -> None:
    status, text = conform(REFERENCE, misuse=True)
    assert status == EXIT_PASS, text
    for component in COMPONENTS:
        assert f"  {component}" in text and "PASS" in text, text
    assert "FAIL" not in text


def call(driver: ReferenceDriver, rid: int, method: str, **args: object) -> object:
    response = driver.handle(
        {"id": rid, "op": "call", "instance": "q", "method": method, "args": args}
    )
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
    from refimpl.conformance.runner import Config, RunContext

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
    from refimpl.conformance.runner import RunContext

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
