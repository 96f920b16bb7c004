"""``refimpl conform --wire`` against kubernetes-python's wire adapter (``adapter.py --wire``).

The official client's own ``SharedInformer`` over ``CoreV1Api`` and the ``ApiClient`` its
kubeconfig loader builds must pass the wire-mode checks on fixed seeds, writes and wire
faults included, and leave no server thread behind. The seeds are ones whose plans hold
no ``compact``: with one, a relist may come (timing decides), and its DELETED runs
before the cache drops the object (INF-1, adapters/kubernetes-python/README.md, "Over
the wire"), a finding too rare to assert. Skipped unless the adapter's virtualenv was
built (``make -C adapters/kubernetes-python build``; in CI ``make peers`` builds it).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from refimpl.conformance.wire.run import WireRun, plan, run_wire
from refimpl.usage import EXIT_OK

FOLDER = Path(__file__).resolve().parent.parent / "adapters/kubernetes-python"
PYTHON = FOLDER / ".venv/bin/python"
ADAPTER = [str(PYTHON), str(FOLDER / "adapter.py")]
SEEDS = [1, 2, 6]

pytestmark = pytest.mark.skipif(
    not PYTHON.exists(), reason=f"{PYTHON} not built (make -C adapters/kubernetes-python build)"
)


@pytest.mark.parametrize("seed", SEEDS)
def test_kubernetes_python_passes_over_the_wire(seed: int, no_thread_left: None) -> None:
    lines: list[str] = []
    rc = run_wire(WireRun([*ADAPTER, "--wire"], seed), lines.append)
    out = "\n".join(lines)
    assert rc == EXIT_OK, out
    assert "informer (wire): PASS" in out
    # Some handler calls were checked: the informer did see the writes.
    assert " 0 handler calls" not in out


def test_the_seeds_plans_compact_nothing() -> None:
    # Why these seeds (the module docstring): a plan that changes must be re-chosen.
    for seed in SEEDS:
        assert not [s for s in plan(seed, 30) if s.get("fault", {}).get("op") == "compact"]


def _hello(flags: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [*ADAPTER, *flags],
        input=json.dumps({"id": 1, "op": "hello", "protocol": 2}) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    components: dict[str, object] = json.loads(done.stdout)["result"]["components"]
    return components


def test_the_wire_flag_offers_only_the_wire_informer() -> None:
    for flags, bound in (["--wire"], 30), (["--wire", "--quiescence", "20"], 20):
        components = _hello(flags)
        assert list(components) == ["informer"]
        informer = components["informer"]
        assert isinstance(informer, dict)
        assert informer["wire"] is True
        assert informer["quiescence_seconds"] == bound
        assert informer["methods"] == ["add_handler", "start", "state"]
    scripted = _hello([])
    assert list(scripted) == ["store", "informer"]
    assert "wire" not in str(scripted["informer"])


@pytest.mark.parametrize(
    "flags", [["--wired"], ["--wire", "--quiescence", "0"], ["--wire", "--quiescence", "61"]]
)
def test_bad_flags_are_a_usage_error(flags: list[str]) -> None:
    done = subprocess.run([*ADAPTER, *flags], input="", capture_output=True, timeout=60)
    assert done.returncode == 2
