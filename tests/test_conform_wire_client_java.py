"""``refimpl conform --wire`` against client-java's wire adapter (``run --wire``).

client-java's own informer, from a ``SharedInformerFactory`` over an ``ApiClient`` that
``ClientBuilder.kubeconfig`` built from the harness's kubeconfig, must pass the wire-mode
checks on fixed seeds, writes and wire faults included, and leave no server thread
behind. Skipped unless the adapter was built (``make -C adapters/client-java build``; in
CI ``make peers`` builds it first).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from wire_peers import assert_passes, hello_components

PEER = Path(__file__).resolve().parent.parent / "adapters/client-java"
RUN = PEER / "run"

pytestmark = pytest.mark.skipif(
    not (PEER / "target/adapter.jar").exists(),
    reason=f"{PEER} not built (make -C adapters/client-java build)",
)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_client_java_passes_over_the_wire(seed: int, no_thread_left: None) -> None:
    # Some handler calls are checked: the informer did list, over http:// with the token.
    assert_passes([str(RUN)], seed)


def test_the_wire_flag_offers_only_the_wire_informer() -> None:
    for flags, wire in (["--wire"], True), (["--wire", "--quiescence", "20"], True), ([], None):
        components = hello_components([str(RUN)], *flags)
        assert components["informer"].get("wire") is wire
        if wire:
            assert list(components) == ["informer"]
            assert components["informer"].get("quiescence_seconds") == (
                20 if "--quiescence" in flags else None
            )
        else:
            assert "queue" in components


def test_the_wire_mode_refuses_the_scripted_components() -> None:
    requests = [
        {"id": 1, "op": "hello", "protocol": 2},
        {"id": 2, "op": "create", "instance": "q", "component": "queue", "options": {}},
        {"id": 3, "op": "create", "instance": "i", "component": "informer", "options": {}},
        {"id": 4, "op": "call", "instance": "i", "method": "list_reply", "args": {}},
    ]
    done = subprocess.run(
        [str(RUN), "--wire"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a.get("error", {}).get("kind") for a in answers] == [
        None,
        "unsupported",
        None,
        "unsupported",
    ]


@pytest.mark.parametrize("flags", [["--wired"], ["--wire", "--quiescence", "0"]])
def test_bad_flags_are_a_usage_error(flags: list[str]) -> None:
    done = subprocess.run([str(RUN), *flags], input="", capture_output=True, timeout=60)
    assert done.returncode == 2
