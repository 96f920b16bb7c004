"""The peers' verdicts, pinned: a change on either side (the peer, or the harness) fails.

Each peer adapter is built by ``make peers`` from its own pinned manifest. For every
trace committed under ``adapters/PEER/traces/`` (its header names the adapter flags it
needs and the verdict it ``expect``s): replaying it against the peer fails with that
invariant ID (or a difference), and replaying it against the reference adapter passes,
so the trace is behaviour client-go has and the peer lacks. Seeded searches pin the
first finding of each peer's informer and the components that pass.

Locally a peer that was not built is skipped (run ``make peers``); in CI (``CI`` set)
it is a failure, so a broken peer build cannot pass unnoticed.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.runner import EXIT_DISAGREE, EXIT_PASS, Config, run

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = ROOT / "adapters"
REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference_adapter"]

#: peer -> the command that runs its adapter (built by ``make peers``).
PEERS: dict[str, list[str]] = {
    "kubernetes-python": [
        str(ADAPTERS / "kubernetes-python" / ".venv" / "bin" / "python"),
        str(ADAPTERS / "kubernetes-python" / "adapter.py"),
    ],
    "aiok8s": [
        str(ADAPTERS / "aiok8s" / ".venv" / "bin" / "python"),
        str(ADAPTERS / "aiok8s" / "adapter.py"),
    ],
    "client-node": [str(ADAPTERS / "client-node" / "run")],
}
BUILT = {
    "kubernetes-python": ADAPTERS / "kubernetes-python" / ".venv" / ".installed",
    "aiok8s": ADAPTERS / "aiok8s" / ".venv" / ".installed",
    "client-node": ADAPTERS / "client-node" / "node_modules" / ".installed",
}


def peer_command(peer: str, extra: list[str] | None = None) -> list[str]:
    if not BUILT[peer].exists():
        message = f"{peer} is not built: run `make peers`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return [*PEERS[peer], *(extra or [])]


def traces() -> list[tuple[str, Path]]:
    return [
        (peer, path)
        for peer in PEERS
        for path in sorted((ADAPTERS / peer / "traces").glob("*.jsonl"))
    ]


def header(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        found = json.loads(fh.readline())
    assert isinstance(found, dict) and "conform_trace" in found, path
    return found


def conform(command: list[str], **settings: Any) -> tuple[int, str]:
    out = io.StringIO()
    config = Config(command=command, progress=False, timeout=10.0, **settings)
    return run(config, out=out, err=io.StringIO()), out.getvalue()


def test_every_peer_has_pinned_traces() -> None:
    assert {peer for peer, _ in traces()} == set(PEERS)
    for _, path in traces():
        head = header(path)
        assert isinstance(head.get("expect"), str) and head["expect"], path
        assert isinstance(head.get("adapter_args"), list), path


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("peer", "path"), traces(), ids=lambda v: getattr(v, "name", v))
def test_trace_still_fails_against_the_peer(peer: str, path: Path) -> None:
    head = header(path)
    command = peer_command(peer, head["adapter_args"])
    status, text = conform(command, replay=str(path))
    assert status == EXIT_DISAGREE, text
    assert head["expect"] in text, text


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("peer", "path"), traces(), ids=lambda v: getattr(v, "name", v))
def test_trace_is_client_go_behaviour(peer: str, path: Path) -> None:
    status, text = conform(REFERENCE, replay=str(path))
    assert status == EXIT_PASS, text


#: (peer, adapter flags, component, seed, skipped methods, expected exit, expected text)
SEARCHES = [
    ("kubernetes-python", [], "informer", 1, [], EXIT_DISAGREE, "INF-3"),
    ("kubernetes-python", [], "informer", 1, ["add_handler"], EXIT_DISAGREE, "REF-3"),
    ("kubernetes-python", [], "store", 1, [], EXIT_PASS, "store                PASS"),
    ("aiok8s", [], "informer", 1, [], EXIT_DISAGREE, "INF-3"),
    ("aiok8s", [], "informer", 2, [], EXIT_DISAGREE, "REF-1"),
    ("aiok8s", [], "store", 1, [], EXIT_PASS, "store                PASS"),
    ("aiok8s", [], "queue", 1, [], EXIT_PASS, "queue                PASS"),
    ("client-node", [], "informer", 1, [], EXIT_DISAGREE, "FIFO-7"),
    ("client-node", ["--raises=record"], "informer", 1, [], EXIT_DISAGREE, "INF-3"),
    (
        "client-node",
        ["--raises=record"],
        "informer",
        1,
        ["add_handler"],
        EXIT_PASS,
        "informer             PASS",
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("peer", "flags", "component", "seed", "skip", "status", "text"),
    SEARCHES,
    ids=[f"{s[0]}-{s[2]}-seed{s[3]}-{'-'.join(s[1] + s[4]) or 'plain'}" for s in SEARCHES],
)
def test_seeded_search_verdict(
    peer: str,
    flags: list[str],
    component: str,
    seed: int,
    skip: list[str],
    status: int,
    text: str,
) -> None:
    command = peer_command(peer, flags)
    found, report = conform(
        command,
        components=[component],
        seed=seed,
        skip=skip,
        budget=15.0,
        shrink_budget=6.0,
        max_examples=300,
    )
    assert found == status, report
    assert text in report, report
