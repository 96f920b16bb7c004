"""``refimpl conform --wire`` against client-go's wire adapter (``bin/adapter --wire``).

client-go's own dynamic SharedIndexInformer, built from the harness's kubeconfig, must
pass the wire-mode checks on fixed seeds, writes and wire faults included, and leave no
server thread behind. Skipped unless the adapter was built (``make -C adapters/client-go
build``; in CI ``make peers`` builds it first).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from wire_peers import assert_passes, hello_components

ADAPTER = Path(__file__).resolve().parent.parent / "adapters/client-go/bin/adapter"

pytestmark = pytest.mark.skipif(
    not ADAPTER.exists(), reason=f"{ADAPTER} not built (make -C adapters/client-go build)"
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_client_go_passes_over_the_wire(seed: int, no_thread_left: None) -> None:
    assert_passes([str(ADAPTER)], seed)


def test_the_wire_flag_offers_only_the_wire_informer() -> None:
    for flags, wire in (["--wire"], True), (["--wire", "--quiescence", "20"], True), ([], None):
        components = hello_components([str(ADAPTER)], *flags, timeout=30)
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
