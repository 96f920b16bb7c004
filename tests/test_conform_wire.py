"""``refimpl conform --wire``: the informer over HTTP against the harness's own server.

The reference's wire adapter (refimpl's informer over refimpl/wire/client.py) must pass;
each broken wire adapter (``--break``) must be reported with the ID of what it breaks;
a hung one makes the run inconclusive. Each run checks that the server and the watch
readers left no thread behind. Seeds are fixed; a plan is a function of its seed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs
import pytest

from refimpl.conformance.cli import main
from refimpl.conformance.search.triage import DIFFERS, SAME
from refimpl.conformance.wire.run import FAULTS, WireRun, plan, run_wire, serving
from refimpl.meta import ListOptions
from refimpl.usage import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE
from refimpl.wire.client import HttpListerWatcher, load_kubeconfig

ADAPTER = [sys.executable, "-m", "refimpl.conformance.wire.adapter"]


def _run(seed: int, *flags: str, steps: int = 15, timeout: float = 5.0) -> tuple[int, str]:
    lines: list[str] = []
    rc = run_wire(WireRun([*ADAPTER, *flags], seed, steps, timeout), lines.append)
    assert all(len(line) <= 100 for line in lines), lines
    return rc, "\n".join(lines)


def _fault_free_seed_with_a_ghost(steps: int) -> int:
    """A seed whose plan has no fault (nothing makes the informer relist) and leaves a
    deleted object deleted: an informer that drops DELETED events keeps it forever."""
    for seed in range(1, 1000):
        steps_ = plan(seed, steps)
        if any("fault" in s for s in steps_):
            continue
        last = {s["name"]: s["write"] for s in steps_}
        if "delete" in last.values():
            return seed
    raise AssertionError("no such seed")


def test_a_plan_is_a_function_of_its_seed_and_writes_only_what_exists() -> None:
    assert plan(7, 40) == plan(7, 40)
    assert plan(7, 40) != plan(8, 40)
    present: set[str] = set()
    for step in plan(7, 200):
        if "fault" in step:
            assert step["fault"] in FAULTS
            continue
        assert (step["name"] in present) == (step["write"] != "create")
        (present.discard if step["write"] == "delete" else present.add)(step["name"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_reference_wire_adapter_passes(seed: int, no_thread_left: None) -> None:
    rc, out = _run(seed)
    assert rc == EXIT_OK, out
    assert f"seed {seed}" in out and "PASS" in out


def test_a_handler_run_before_its_store_write_is_inf_1(no_thread_left: None) -> None:
    rc, out = _run(1, "--break", "notify-first")
    assert rc == EXIT_FAILED, out
    assert "INF-1 store before notify" in out


def test_an_informer_that_drops_deleted_events_never_converges_inf_3(no_thread_left: None) -> None:
    seed = _fault_free_seed_with_a_ghost(8)
    rc, out = _run(seed, "--break", "ignore-deleted", "--quiescence", "1", steps=8)
    assert rc == EXIT_FAILED, out
    assert "INF-3 convergence (liveness): after 1.0 s" in out
    assert "is a ghost" in out


def test_a_hung_adapter_is_inconclusive(no_thread_left: None) -> None:
    rc, out = _run(1, "--break", "hang", steps=3, timeout=1.0)
    assert rc == EXIT_INCONCLUSIVE, out
    assert "INCONCLUSIVE" in out and "PASS" not in out and "INF-" not in out


def test_an_adapter_without_wire_is_refused(no_thread_left: None) -> None:
    lines: list[str] = []
    command = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
    rc = run_wire(WireRun(command, 1, 3), lines.append)
    assert rc == 2 and '"wire": true' in lines[-1]


def test_the_command_line_runs_the_wire_mode(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--wire", "--component", "informer", "--seed", "2", "--steps", "5", "--", *ADAPTER])
    assert rc == EXIT_OK, capsys.readouterr()
    assert capsys.readouterr().out.startswith("wire: seed 2: ")


@pytest.mark.parametrize(
    "flags", [["--component", "queue"], ["--from-spec", "Informer"], ["--replay", __file__]]
)
def test_wire_with_what_does_not_apply_is_a_usage_error(flags: list[str]) -> None:
    assert main(["--wire", *flags, "--", *ADAPTER]) == EXIT_USAGE


def test_json_results_name_each_distinct_finding_its_ack_and_client_gos_label(
    tmp_path: Path, no_thread_left: None
) -> None:
    """``--json`` gives ``refimpl peers`` one finding per invariant (signature
    ``informer/ID/wire``), marked by ``--known``; ``--client-go`` runs the same seed
    against a second adapter with ``--wire`` appended and labels each finding by it."""
    broken = [*ADAPTER, "--break", "notify-first"]
    out = tmp_path / "results.json"
    known = {"informer/INF-1/wire": "acknowledged here"}
    lines: list[str] = []
    settings = WireRun(broken, 1, 15, 5.0, json=str(out), known=known, client_go=ADAPTER)
    assert run_wire(settings, lines.append) == EXIT_FAILED
    results = json.loads(out.read_text())
    assert results["wire"] is True and results["status"] == EXIT_FAILED
    found = results["components"][0]["findings"]
    signatures = [f["signature"] for f in found]
    assert "informer/INF-1/wire" in signatures and len(set(signatures)) == len(signatures)
    inf1 = found[signatures.index("informer/INF-1/wire")]
    assert inf1["known"] == "acknowledged here"
    # The reference's wire adapter (as "client-go") passes the same plan.
    assert inf1["client_go"] == DIFFERS
    assert f"client-go on this plan: {DIFFERS}" in " ".join(" ".join(lines).split())
    # The same broken adapter as "client-go" does the same.
    same = attrs.evolve(settings, json=None, client_go=broken)
    lines.clear()
    assert run_wire(same, lines.append) == EXIT_FAILED
    text = " ".join(" ".join(lines).split())  # the report wraps at 100 columns
    assert f"INF-1/wire: known: acknowledged here; client-go on this plan: {SAME}]" in text


def test_json_results_of_a_pass_have_no_finding(tmp_path: Path, no_thread_left: None) -> None:
    out = tmp_path / "results.json"
    assert run_wire(WireRun(ADAPTER, 2, 5, json=str(out)), lambda _line: None) == EXIT_OK
    results = json.loads(out.read_text())
    assert results["status"] == EXIT_OK and results["components"][0]["findings"] == []
    assert results["adapter"]["name"]


def test_an_adapter_that_asks_for_tls_gets_https_and_passes(no_thread_left: None) -> None:
    """``"tls": true`` in the hello: the harness serves HTTPS with a CA made for the run,
    in the kubeconfig; refimpl's client verifies the server with it."""
    rc, out = _run(2, "--tls")
    assert rc == EXIT_OK, out
    rc, out = _run(1, "--tls", "--break", "notify-first")
    assert rc == EXIT_FAILED and "INF-1 store before notify" in out


def test_the_tls_kubeconfig_names_an_https_server_and_its_ca(tmp_path: Path) -> None:
    with serving(tmp_path, True) as (server, kubeconfig):
        assert server.url.startswith("https://127.0.0.1:")
        config = load_kubeconfig(kubeconfig)
        assert config.server == server.url and config.ca and b"BEGIN CERTIFICATE" in config.ca
        lister = HttpListerWatcher(config)
        assert lister.list(ListOptions(resource_version="")).items == ()
        without_ca = attrs.evolve(config, ca=None)
        with pytest.raises(ValueError, match="CA certificate"):
            HttpListerWatcher(without_ca)
