"""Triage against client-go (refimpl/conformance/search/triage.py): every label.

The broken adapter (adapters/broken) is the peer; the reference adapter stands in for
client-go where client-go's own behaviour is not the point (it passes what client-go
passes), the same broken adapter for a client-go that shares the bug, and small adapters
written here for the rest: one that does not offer the component, and peers that behave
differently once restarted (the "did not reproduce" cases). One test uses the real
client-go adapter when it is built (``make -C adapters/client-go``).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.cli import main as conform_main
from refimpl.conformance.search.config import Config, Failure, Step
from refimpl.conformance.search.replay import try_trace
from refimpl.conformance.search.run import run
from refimpl.conformance.search.session import RunContext
from refimpl.conformance.search.triage import (
    CLIENT_GO_ADAPTER,
    DIFFERS,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    SAME,
    default_client_go,
    label_of,
    same_label,
    triage,
)

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
BROKEN = [sys.executable, str(ROOT / "adapters" / "broken" / "adapter.py"), "--bug"]
FAKE = [sys.executable, str(ROOT / "tests" / "conformance_fake_adapter.py")]
BUG = "done-forgets-requeue"


def call(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "x", "method": method, "args": args}


#: done-forgets-requeue's shrunk trace: the re-added item is never queued again.
TRACE = [
    {"op": "create", "instance": "x", "component": "queue", "options": {}},
    call("add", item="a"),
    call("get_nowait"),
    call("add", item="a"),
    call("done", item="a"),
    call("get_nowait"),
]

#: An adapter that answers as the reference but does not offer the queue.
NO_QUEUE = """
import json, sys
from refimpl.conformance.protocol import encode
from refimpl.conformance.reference.dispatch import ReferenceDriver
driver = ReferenceDriver()
for line in sys.stdin.buffer:
    request = json.loads(line)
    response = driver.handle(request)
    if request.get("op") == "hello" and "result" in response:
        response["result"]["components"].pop("queue", None)
    sys.stdout.buffer.write(encode(response))
    sys.stdout.buffer.flush()
"""

#: A peer that runs FIRST on its first start and SECOND on every later one.
FLIP = """
import json, os, sys
count = sys.argv[1]
started = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(started + 1))
argv = json.loads(sys.argv[2] if started == 0 else sys.argv[3])
os.execv(argv[0], argv)
"""


def script(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return [sys.executable, str(path)]


def flip(tmp_path: Path, first: list[str], then: list[str]) -> list[str]:
    return [
        *script(tmp_path, "flip.py", FLIP),
        str(tmp_path / "starts"),
        json.dumps(first),
        json.dumps(then),
    ]


def finding(peer: list[str], client_go: list[str]) -> tuple[RunContext, Failure]:
    """A context on ``peer`` and the failure TRACE gives on it."""
    ctx = RunContext(Config(command=peer, client_go=client_go, progress=False), io.StringIO())
    ctx.start_adapter()
    ctx.start_component("queue", float("inf"))
    failure = try_trace(ctx, "queue", TRACE)
    assert failure is not None, "the trace must fail on the peer"
    return ctx, failure


def label(peer: list[str], client_go: list[str]) -> str:
    ctx, failure = finding(peer, client_go)
    try:
        return triage(ctx, failure)
    finally:
        ctx.close()


def test_client_go_passing_the_trace_differs() -> None:
    assert label([*BROKEN, BUG], REFERENCE) == DIFFERS


def test_client_go_failing_the_same_way_does_the_same() -> None:
    assert label([*BROKEN, BUG], [*BROKEN, BUG]) == SAME


def test_client_go_failing_differently_is_not_comparable() -> None:
    # The stand-in crashes at the first done: a failure, but another signature.
    assert label([*BROKEN, BUG], [*FAKE, "crash:done"]) == NOT_COMPARABLE


def test_a_component_client_go_does_not_offer_is_not_comparable(tmp_path: Path) -> None:
    assert label([*BROKEN, BUG], script(tmp_path, "no_queue.py", NO_QUEUE)) == NOT_COMPARABLE


def test_a_client_go_that_does_not_start_is_not_comparable(tmp_path: Path) -> None:
    assert label([*BROKEN, BUG], [str(tmp_path / "missing")]) == NOT_COMPARABLE


def test_a_peer_that_passes_its_replay_did_not_reproduce(tmp_path: Path) -> None:
    # Never a pass: client-go would pass too, which would read "client-go differs".
    assert label(flip(tmp_path, [*BROKEN, BUG], REFERENCE), REFERENCE) == NOT_REPRODUCED


def test_a_peer_that_fails_its_replay_differently_did_not_reproduce(tmp_path: Path) -> None:
    peer = flip(tmp_path, [*BROKEN, BUG], [*FAKE, "crash:done"])
    assert label(peer, [*BROKEN, BUG]) == NOT_REPRODUCED


def test_a_difference_at_a_documented_deviation_names_it() -> None:
    when = Step({"op": "call", "instance": "x", "method": "when", "args": {}}, None, None)
    differs = Failure("disagreement", "rate_limiter", [when], "differs", 1, 0.0)
    said = same_label(differs)
    assert label_of(said) == SAME and "RL-4" in said
    assert same_label(Failure("invariant", "queue", [when], "Q-1 broken", 1, 0.0)) == SAME


def test_a_run_labels_marks_known_and_writes_json(tmp_path: Path) -> None:
    out = io.StringIO()
    config = Config(
        command=[*BROKEN, BUG],
        components=["queue"],
        seed=1,
        budget=30,
        progress=False,
        client_go=REFERENCE,
        # What seed 1 finds first (a seed's examples change with the generators).
        known={"queue/differs/len": "acknowledged upstream"},
        json=str(tmp_path / "run.json"),
        max_findings=1,  # the first finding is the one this test labels
    )
    assert run(config, out=out, err=io.StringIO()) == 1
    text = out.getvalue()
    assert "client-go: client-go differs" in text, text
    assert "(known: acknowledged upstream)" in text, text
    written = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    (component,) = written["components"]
    found, *new = component["findings"]
    assert len(new) <= 1 and all(f["known"] is None for f in new), new
    assert component["status"] == "fail"
    assert found["signature"] == "queue/differs/len"
    assert found["known"] == "acknowledged upstream"
    assert found["client_go"] == DIFFERS
    assert found["shrunk"] == len(found["steps"]) > 0


def test_known_must_be_signature_equals_note(capsys: pytest.CaptureFixture[str]) -> None:
    assert conform_main(["--known", "INF-3", "--", *REFERENCE]) == 3
    assert "SIGNATURE=NOTE" in capsys.readouterr().err


def test_client_go_none_asks_no_one(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    argv = ["--component", "queue", "--seed", "1", "--budget", "30", "--no-progress"]
    argv += ["--max-findings", "1", "--client-go", "none", "--json", str(path), "--", *BROKEN, BUG]
    assert conform_main(argv) == 1
    (found,) = json.loads(path.read_text(encoding="utf-8"))["components"][0]["findings"]
    assert found["client_go"] is None and found["known"] is None


def test_the_default_client_go_is_the_built_adapter(tmp_path: Path) -> None:
    assert default_client_go(str(tmp_path)) in (None, str((ROOT / CLIENT_GO_ADAPTER).resolve()))
    fake = tmp_path / CLIENT_GO_ADAPTER
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\n", encoding="utf-8")
    fake.chmod(0o755)
    assert default_client_go(str(tmp_path)) == str(fake.resolve())


def test_real_client_go_passes_a_broken_queue() -> None:
    adapter = ROOT / CLIENT_GO_ADAPTER
    if not adapter.exists():
        pytest.skip("client-go's adapter is not built: make -C adapters/client-go build")
    assert label([*BROKEN, BUG], [str(adapter)]) == DIFFERS
