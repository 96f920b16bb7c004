"""The driver protocol's framing and the harness's defences against a bad adapter.

A fake adapter (tests/conformance_fake_adapter.py) answers like the reference until a
trigger, then hangs, crashes, prints garbage, a huge or partial line, a wrong id, and so
on. Each case must end in a clear AdapterFailure (or exit status 2 from the CLI) within
a bounded time -- never a hang of the harness.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from conform_helpers import fake, run_conform

from refimpl.conformance.cli import main as conform_main
from refimpl.conformance.process import (
    AdapterCrashed,
    AdapterFailure,
    AdapterHung,
    AdapterProcess,
    ProtocolViolation,
)
from refimpl.conformance.protocol import (
    ProtocolError,
    check_response,
    encode,
    seconds_to_ns,
)
from refimpl.conformance.search.config import (
    EXIT_ADAPTER,
    EXIT_DISAGREE,
    EXIT_PASS,
    EXIT_USAGE,
)

HELLO = {"op": "hello", "protocol": 1}
CREATE = {"op": "create", "instance": "q", "component": "queue", "options": {}}
LEN = {"op": "call", "instance": "q", "method": "len", "args": {}}


def started(*modes: str, timeout: float = 2.0, max_line: int = 1 << 20) -> AdapterProcess:
    adapter = AdapterProcess(fake(*modes), timeout=timeout, max_line=max_line)
    adapter.start()
    # The start-up (a Python interpreter) gets the harness's startup allowance, so a
    # busy machine does not turn a short per-request timeout into a false hang.
    assert adapter.request(HELLO, timeout=20.0)["result"]["protocol"] == 1
    adapter.request(CREATE, timeout=20.0)
    return adapter


# ------------------------------------------------------------------ pure message checks


def test_encode_is_one_compact_line_and_refuses_nan() -> None:
    assert encode({"id": 1, "result": [1, "a"]}) == b'{"id":1,"result":[1,"a"]}\n'
    with pytest.raises(ValueError):
        encode({"id": 1, "result": float("nan")})


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ([], "JSON object"),
        ({"result": 1}, "no 'id'"),
        ({"id": 2, "result": 1}, "does not match"),
        ({"id": True, "result": 1}, "does not match"),
        ({"id": 1}, "exactly one"),
        ({"id": 1, "result": 1, "error": {"kind": "internal", "message": ""}}, "exactly one"),
        ({"id": 1, "error": "boom"}, "must be an object"),
        ({"id": 1, "error": {"kind": "boom", "message": ""}}, "not one of"),
        ({"id": 1, "error": {"kind": "internal"}}, "message"),
    ],
)
def test_check_response_names_the_problem(message: object, problem: str) -> None:
    found = check_response(message, 1)
    assert found is not None and problem in found, found


def test_check_response_accepts_valid_answers() -> None:
    assert check_response({"id": 1, "result": None}, 1) is None
    assert check_response({"id": 1, "error": {"kind": "exception", "message": "x"}}, 1) is None


def test_durations_round_to_nanoseconds() -> None:
    assert seconds_to_ns(0.005, "d") == 5_000_000
    assert seconds_to_ns(655.36, "d") == 655_360_000_000
    for bad in (float("nan"), float("inf"), "1", True):
        with pytest.raises(ProtocolError):
            seconds_to_ns(bad, "d")


# ------------------------------------------------------------------ the child process


def test_well_behaved_adapter_round_trip() -> None:
    with AdapterProcess(fake()) as adapter:
        hello = adapter.request(HELLO)
        assert hello["id"] == 0 and "queue" in hello["result"]["components"]
        adapter.request(CREATE)
        assert adapter.request(LEN)["result"] == 0
        bad = adapter.request({"op": "call", "instance": "nope", "method": "len"})
        assert bad["error"]["kind"] == "no_instance"


def test_hang_is_reported_after_the_timeout() -> None:
    adapter = started("hang:len", timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(AdapterHung, match=r"no response to request id 2 \(call\) within 0.3 s"):
        adapter.request(LEN)
    assert time.monotonic() - t0 < 2.0
    adapter.close()
    assert not adapter.running


def test_crash_reports_exit_status_and_stderr() -> None:
    adapter = started("crash:len")
    with pytest.raises(AdapterCrashed) as info:
        adapter.request(LEN)
    text = info.value.describe()
    assert "exit status 3" in text and "simulated crash" in text
    adapter.close()


#: A bad answer to ``len``: the fake adapter's mode, options to ``started``, the error
#: and what its message must match (None: any).
BAD_ANSWERS: dict[str, tuple[str, dict[str, Any], type[Exception], str | None]] = {
    "silent-exit-is-a-crash": ("exit:len", {}, AdapterCrashed, "stdout closed"),
    "partial-line-then-exit": ("partial:len", {}, AdapterCrashed, "partial line"),
    "partial-line-then-hang-times-out": ("partial-hang:len", {"timeout": 0.3}, AdapterHung, None),
    "garbage-is-a-protocol-violation": (
        "garbage:len",
        {},
        ProtocolViolation,
        "not a JSON line: b'this is not json'",
    ),
    "non-object-is-a-protocol-violation": ("not-object:len", {}, ProtocolViolation, "JSON object"),
    "complete-but-huge-line-is-refused": (
        "huge-line:len",
        {"max_line": 100_000},
        ProtocolViolation,
        "longer than",
    ),
}


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
def test_a_bad_answer_is_reported(case: str) -> None:
    mode, options, error, match = BAD_ANSWERS[case]
    adapter = started(mode, **options)
    with pytest.raises(error, match=match):
        adapter.request(LEN)
    adapter.close()


def test_endless_line_is_cut_off_without_waiting_for_its_end() -> None:
    adapter = started("huge:len", timeout=5.0, max_line=100_000)
    t0 = time.monotonic()
    with pytest.raises(ProtocolViolation, match="longer than 100000 bytes"):
        adapter.request(LEN)
    assert time.monotonic() - t0 < 3.0
    adapter.close()


@pytest.mark.parametrize(
    ("mode", "problem"),
    [("wrong-id", "does not match"), ("both", "exactly one"), ("bad-kind", "not one of")],
)
def test_out_of_protocol_answers(mode: str, problem: str) -> None:
    adapter = started(f"{mode}:len")
    with pytest.raises(ProtocolViolation, match=problem):
        adapter.request(LEN)
    adapter.close()


def test_extra_line_shows_up_as_an_id_mismatch_on_the_next_request() -> None:
    adapter = started("extra-line:len")
    adapter.request(LEN)
    with pytest.raises(ProtocolViolation, match="does not match"):
        adapter.request(LEN)
    adapter.close()


def test_close_ends_an_adapter_that_ignores_eof_and_sigterm() -> None:
    adapter = started("ignore-term")
    t0 = time.monotonic()
    adapter.close()
    assert time.monotonic() - t0 < 8.0
    assert not adapter.running


def test_missing_program_is_a_clear_crash() -> None:
    adapter = AdapterProcess(["/nonexistent/adapter-binary"])
    with pytest.raises(AdapterCrashed, match="cannot start"):
        adapter.start()


def test_request_to_a_closed_adapter() -> None:
    adapter = started()
    adapter.close()
    with pytest.raises(AdapterFailure, match="not running"):
        adapter.request(LEN)


# ------------------------------------------------------------------ the whole run


#: The harness settings of these runs (a test's own settings override them).
SETTINGS = {"components": ["queue"], "budget": 3.0, "shrink_budget": 5.0, "seed": 5, "timeout": 0.5}


def conform(*modes: str, **overrides: object) -> tuple[int, str]:
    return run_conform(fake(*modes), **(SETTINGS | overrides))


@pytest.mark.timeout(60)
def test_run_against_a_hanging_adapter_is_bounded_and_exits_2() -> None:
    t0 = time.monotonic()
    status, text = conform("hang:shut_down")
    assert status == EXIT_ADAPTER, text
    assert "adapter hung" in text and "shut_down" in text
    assert time.monotonic() - t0 < 20


@pytest.mark.timeout(60)
def test_crash_on_one_method_is_shrunk_to_a_short_trace() -> None:
    # Every replay of a crashing adapter restarts it: give shrinking room for that.
    status, text = conform("crash:shut_down", shrink_budget=15.0, timeout=5.0)
    assert status == EXIT_ADAPTER, text
    assert "adapter crashed" in text and "simulated crash" in text
    # create, then the crashing call: nothing else is needed.
    assert "shrunk to 2 operations" in text, text


@pytest.mark.timeout(60)
def test_garbage_mid_run_exits_2() -> None:
    status, text = conform("garbage:shutting_down")
    assert status == EXIT_ADAPTER, text
    assert "protocol violation" in text


@pytest.mark.timeout(60)
def test_refusing_a_declared_method_is_an_adapter_failure() -> None:
    status, text = conform("refuse:len")
    assert status == EXIT_ADAPTER, text
    assert "answered error 'unsupported'" in text


@pytest.mark.timeout(60)
def test_wrong_answer_is_a_disagreement() -> None:
    status, text = conform("wrong-answer:len")
    assert status == EXIT_DISAGREE, text
    assert '"something else"   <== differs' in text
    assert "replay on a fresh adapter: reproduces" in text


@pytest.mark.timeout(30)
def test_bad_handshake_exits_2() -> None:
    status, text = conform("bad-hello:hello")
    assert status == EXIT_ADAPTER and "answered protocol 3 to a hello for protocol 2" in text, text
    status, text = conform("crash:hello")
    assert status == EXIT_ADAPTER and "failed to start" in text, text


@pytest.mark.timeout(30)
def test_reset_refused_exits_2() -> None:
    status, text = conform("refuse:reset")
    assert status == EXIT_ADAPTER, text
    assert "could not reset" in text


def test_usage_errors_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert conform_main(["--budget", "1"]) == EXIT_USAGE
    assert "no adapter command" in capsys.readouterr().err
    assert conform_main(["--component", "bogus", "--", "true"]) == EXIT_USAGE
    assert conform_main(["--budget", "0", "--", "true"]) == EXIT_USAGE
    status, _ = conform(components=["store_that_does_not_exist"])
    assert status == EXIT_USAGE


@pytest.mark.timeout(30)
def test_cli_passes_against_the_fake_adapter_in_ok_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--component", "queue", "--budget", "1", "--seed", "3", "--", *fake()]
    assert conform_main(argv) == EXIT_PASS
    assert "queue" in capsys.readouterr().out
