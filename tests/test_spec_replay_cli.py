"""``refimpl spec replay``: every committed graph has a code mapping, and the command
replays, reports and fails as it says (on a mismatch, a stale graph, a bad name)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import attrs
import pytest

from refimpl.cli import main
from refimpl.tla.graph import load_graph, write_graph
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


def test_a_constant_missing_from_the_mc_module_is_named(tmp_path: Path) -> None:
    module = tmp_path / "MCWorkQueue.tla"
    module.write_text('MCKeys == {"a", "b"}\nMCNoItem ==\n    "-"\n')  # split over lines
    with pytest.raises(ValueError, match="binds no MCNoItem on one line"):
        mapping_for("WorkQueue", module)


def test_replay_prints_a_table_and_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "replay", "--spec-dir", str(SPEC), "WorkQueue", "DeltaFIFO"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^WorkQueue\s+318\s+1266\s+\d+\s+0\s.*OK$", out, re.M), out
    assert re.search(r"^DeltaFIFO\s+10116\s+23387\s+\d+\s+0\s.*OK$", out, re.M), out
    assert "2/2 graphs replayed without a mismatch" in out


def test_stale_graph_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec)
    wq = spec / "WorkQueue.tla"
    wq.write_text(wq.read_text().replace("====", "Unused == TRUE\n====", 1))
    assert main(["spec", "replay", "--spec-dir", str(spec), "WorkQueue"]) == 1
    assert "stale graph: run 'refimpl spec export WorkQueue'" in capsys.readouterr().out


def test_mismatch_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A graph (hash still current) in which one Done edge leads somewhere else: the
    # code's Done cannot follow it, so the replay must say so.
    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec)
    graph = load_graph(SPEC / "graphs" / "WorkQueue.json.gz")
    i = next(n for n, e in enumerate(graph.edges) if e.action == "Done")
    wrong = next(t for t in range(len(graph.states)) if t != graph.edges[i].target)
    edges = list(graph.edges)
    edges[i] = attrs.evolve(edges[i], target=wrong)
    write_graph(attrs.evolve(graph, edges=tuple(edges)), spec / "graphs" / "WorkQueue.json.gz")
    assert main(["spec", "replay", "--spec-dir", str(spec), "--show", "1", "WorkQueue"]) == 1
    captured = capsys.readouterr()
    assert re.search(r"^WorkQueue\s+\d+\s+\d+\s+\d+\s+1\+\s.*FAIL$", captured.out, re.M)
    assert "stale" not in captured.out
    assert "Done" in captured.err


def test_unknown_or_graphless_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "replay", "--spec-dir", str(SPEC), "NoSuchModel"]) == 3
    assert main(["spec", "replay", "--spec-dir", str(SPEC), "EdgeVsLevelEdge"]) == 3
    assert "no committed graph for EdgeVsLevelEdge" in capsys.readouterr().err
