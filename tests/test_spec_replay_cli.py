"""``refimpl spec replay``: every committed graph has a code mapping, and the command
replays, reports and fails as it says (on a mismatch, a stale graph, a bad name)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from refimpl.cli import main
from refimpl.tla.manifest import load_manifest
from refimpl.tla.mappings import MAPPINGS, mapping_for, mc_constants

SPEC = Path(__file__).resolve().parents[1] / "spec"


def test_every_graphed_model_has_a_mapping_and_no_mapping_is_orphaned() -> None:
    graphed = {m.name for m in load_manifest(SPEC) if m.graph}
    assert graphed == set(MAPPINGS)


def test_constants_come_from_the_mc_module() -> None:
    constants = mc_constants(SPEC / "MCInformer.tla")
    assert constants == {"Keys": frozenset({"a", "b"}), "MaxRV": 3}
    with pytest.raises(ValueError, match="no code mapping for model Nope"):
        mapping_for("Nope", SPEC / "MCInformer.tla")


def test_replay_prints_a_table_and_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "replay", "--spec-dir", str(SPEC), "WorkQueue", "DeltaFIFO"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^WorkQueue\s+318\s+1266\s+\d+\s+0\s.*OK$", out, re.M), out
    assert re.search(r"^DeltaFIFO\s+3726\s+8109\s+\d+\s+0\s.*OK$", out, re.M), out
    assert "2/2 graphs replayed without a mismatch" in out


def test_stale_graph_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec)
    wq = spec / "WorkQueue.tla"
    wq.write_text(wq.read_text().replace("====", "Unused == TRUE\n====", 1))
    assert main(["spec", "replay", "--spec-dir", str(spec), "WorkQueue"]) == 1
    assert "stale graph: run 'refimpl spec export WorkQueue'" in capsys.readouterr().out


def test_mismatch_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A graph of other constants than the MC module says: every state is rebuilt with
    # one key too few, so the code's moves cannot match.
    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec)
    mc = spec / "MCWorkQueue.tla"
    mc.write_text(mc.read_text().replace('MCKeys == {"a", "b"}', 'MCKeys == {"a"}'))
    assert main(["spec", "replay", "--spec-dir", str(spec), "--show", "2", "WorkQueue"]) == 1
    captured = capsys.readouterr()
    assert "FAIL" in captured.out
    assert "which the spec does not allow" in captured.err or "no matching" in captured.err


def test_unknown_or_graphless_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "replay", "--spec-dir", str(SPEC), "NoSuchModel"]) == 2
    assert main(["spec", "replay", "--spec-dir", str(SPEC), "EdgeVsLevelEdge"]) == 2
    assert "no committed graph for EdgeVsLevelEdge" in capsys.readouterr().err
