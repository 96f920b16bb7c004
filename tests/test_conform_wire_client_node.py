"""``refimpl conform --wire`` against client-node's wire adapter (``run --wire``).

client-node 2.0.1's own informer (``makeInformer`` over its real ``Watch`` and
``CoreV1Api``), built from the harness's kubeconfig over HTTPS (the adapter declares
``"tls": true``), with the restart after an ``error`` event that client-node's
documentation shows its users (``--workaround=restart-after-error``), must pass the
wire-mode checks on fixed seeds and leave no server thread behind. Without that restart
(the default, the library alone) a 500 ends the informer for good: the run reports
INF-3's liveness finding (adapters/client-node/README.md, "Over the wire"). Skipped unless the
adapter was built (``make -C adapters/client-node build``; in CI ``make peers`` builds
it first).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from wire_peers import assert_passes, hello_components, run_peer

from refimpl.usage import EXIT_FAILED

FOLDER = Path(__file__).resolve().parent.parent / "adapters/client-node"
ADAPTER = FOLDER / "run"

pytestmark = pytest.mark.skipif(
    not (FOLDER / "node_modules/.installed").exists(),
    reason=f"{FOLDER} not built (make -C adapters/client-node build)",
)


def _run(seed: int, *flags: str) -> tuple[int, str]:
    return run_peer([str(ADAPTER)], seed, *flags)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_client_node_passes_over_the_wire(seed: int, no_thread_left: None) -> None:
    assert_passes([str(ADAPTER)], seed, "--workaround=restart-after-error")


def test_without_the_documented_restart_a_500_ends_the_informer(no_thread_left: None) -> None:
    # Seed 3's plan answers a watch and three lists with 500s: each ends ListWatch's
    # loop with an `error` event, and nothing starts it again.
    rc, out = _run(3, "--quiescence=5")
    assert rc == EXIT_FAILED, out
    words = " ".join(out.split())  # the report wraps at 100 columns
    assert "INF-3 convergence (liveness): after 5." in words
    assert "of quiet the cache is not the server's state" in words


def _hello(*flags: str) -> dict[str, object]:
    return hello_components([str(ADAPTER)], *flags, timeout=30)


def test_the_wire_flag_offers_only_the_wire_informer() -> None:
    assert _hello("--wire") == {
        "informer": {
            "methods": ["add_handler", "start", "state"],
            "behaves_like": None,
            "wire": True,
            "tls": True,
            "quiescence_seconds": 40,
        }
    }
    wired = _hello("--wire", "--quiescence=20")["informer"]
    assert isinstance(wired, dict) and wired["quiescence_seconds"] == 20
    scripted = _hello()["informer"]
    assert isinstance(scripted, dict) and "wire" not in scripted
    assert "list_reply" in scripted["methods"]


@pytest.mark.parametrize(
    "flags", [["--wired"], ["--wire", "--quiescence=0"], ["--quiescence=20"], ["--wire", "--wire"]]
)
def test_bad_flags_are_a_usage_error(flags: list[str]) -> None:
    done = subprocess.run([str(ADAPTER), *flags], input="", capture_output=True, timeout=30)
    assert done.returncode == 3
