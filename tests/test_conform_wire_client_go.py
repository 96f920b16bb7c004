"""``refimpl conform --wire`` against client-go's wire adapter (``bin/adapter --wire``).

client-go's own dynamic SharedIndexInformer, built from the harness's kubeconfig, must
pass the wire-mode checks on fixed seeds, writes and wire faults included, and leave no
server thread behind. Skipped unless the adapter was built (``make -C adapters/client-go
build``; in CI ``make peers`` builds it first).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from refimpl.conformance.wire.run import WireRun, run_wire
from refimpl.usage import EXIT_OK

ADAPTER = Path(__file__).resolve().parent.parent / "adapters/client-go/bin/adapter"

pytestmark = pytest.mark.skipif(
    not ADAPTER.exists(), reason=f"{ADAPTER} not built (make -C adapters/client-go build)"
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_client_go_passes_over_the_wire(seed: int, no_thread_left: None) -> None:
    lines: list[str] = []
    rc = run_wire(WireRun([str(ADAPTER), "--wire"], seed), lines.append)
    out = "\n".join(lines)
    assert rc == EXIT_OK, out
    assert "informer (wire): PASS" in out
    # Some handler calls were checked: the informer did see the writes.
    assert " 0 handler calls" not in out


def test_the_wire_flag_offers_only_the_wire_informer() -> None:
    requests = [{"id": 1, "op": "hello", "protocol": 2}]
    for flags, wire in (["--wire"], True), (["--wire", "--quiescence", "20"], True), ([], None):
        done = subprocess.run(
            [str(ADAPTER), *flags],
            input="".join(json.dumps(r) + "\n" for r in requests),
            capture_output=True,
            text=True,
            timeout=30,
        )
        components = json.loads(done.stdout)["result"]["components"]
        assert components["informer"].get("wire") is wire
        if wire:
            assert list(components) == ["informer"]
            assert components["informer"].get("tls") is True  # clientcmd reads the token
            assert components["informer"].get("quiescence_seconds") == (
                20 if "--quiescence" in flags else None
            )
        else:
            assert "queue" in components


@pytest.mark.parametrize("flags", [["--wired"], ["--wire", "--quiescence", "0"]])
def test_bad_flags_are_a_usage_error(flags: list[str]) -> None:
    done = subprocess.run([str(ADAPTER), *flags], input="", capture_output=True, timeout=30)
    assert done.returncode == 2
