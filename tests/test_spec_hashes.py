"""The committed state graphs and the manifest are in step with the specs.

A graph records the sha256 of the spec files that produced it (the MC module, its cfg
and the spec modules they extend), comments left out, since TLC ignores them; if any of
them changed otherwise, the graph is stale and the replay tests would check the code
against an old spec. Regenerate with
``refimpl spec export MODEL`` (needs TLA2TOOLS_JAR).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from spec_graphs import graph_file

from refimpl.tla.graph import spec_files, spec_hash, without_comments
from refimpl.tla.manifest import Model, load_manifest

SPEC = Path(__file__).resolve().parents[1] / "spec"
PROOFS = SPEC.parent / "proofs"
MODELS = load_manifest(SPEC)
GRAPHED = [m for m in MODELS if m.graph]


def test_manifest_lists_every_model_file() -> None:
    listed = {os.path.normpath(SPEC / m.module) for m in MODELS}
    on_disk = {str(p) for p in [*SPEC.glob("MC*.tla"), *PROOFS.glob("MC*.tla")]}
    assert on_disk <= listed, f"MC modules not in spec/models.json: {on_disk - listed}"
    for model in MODELS:
        assert (SPEC / model.cfg).is_file(), f"{model.name}: missing {model.cfg}"


def test_manifest_names_are_unique_and_figures_recorded() -> None:
    names = [m.name for m in MODELS]
    assert len(names) == len(set(names))
    for model in MODELS:
        assert model.distinct_states, f"{model.name}: run 'refimpl spec check --record'"
        assert model.depth, f"{model.name}: run 'refimpl spec check --record'"


@pytest.mark.parametrize("model", GRAPHED, ids=lambda m: m.name)
def test_graph_matches_current_spec(model: Model) -> None:
    assert model.graph is not None
    path = SPEC / model.graph
    assert path.is_file(), f"{model.graph} missing: run 'refimpl spec export {model.name}'"
    graph = graph_file(path)
    files = spec_files(SPEC / model.module, SPEC / model.cfg, library=[SPEC])
    assert sorted(graph.spec_files) == sorted(os.path.relpath(p, SPEC) for p in files)
    assert graph.spec_hash == spec_hash(files), (
        f"{model.graph} was exported from other versions of {', '.join(graph.spec_files)}: "
        f"run 'refimpl spec export {model.name}' and commit the result"
    )
    if model.expect == "pass" and model.distinct_states is not None:
        assert len(graph.states) == model.distinct_states


def test_hash_changes_with_any_spec_file(tmp_path: Path) -> None:
    for name in ("MCWorkQueue.tla", "MCWorkQueue.cfg", "WorkQueue.tla"):
        (tmp_path / name).write_bytes((SPEC / name).read_bytes())
    files = spec_files(tmp_path / "MCWorkQueue.tla", tmp_path / "MCWorkQueue.cfg")
    assert [p.name for p in files] == ["MCWorkQueue.cfg", "MCWorkQueue.tla", "WorkQueue.tla"]
    before = spec_hash(files)
    spec = tmp_path / "WorkQueue.tla"
    spec.write_text(spec.read_text().replace("x \\notin dirty", "x \\notin processing", 1))
    assert spec_hash(files) != before


def test_comments_do_not_change_the_hash_code_does(tmp_path: Path) -> None:
    for name in ("MCWorkQueue.tla", "MCWorkQueue.cfg", "WorkQueue.tla"):
        (tmp_path / name).write_bytes((SPEC / name).read_bytes())
    files = spec_files(tmp_path / "MCWorkQueue.tla", tmp_path / "MCWorkQueue.cfg")
    before = spec_hash(files)
    spec = tmp_path / "WorkQueue.tla"
    text = spec.read_text()
    # A comment rewritten, one added on its own lines and one at the end of a line.
    edited = text.replace("(* Safety", "(* Safety, rewritten at length", 1)
    edited = edited.replace("Init ==", "(* a new\n   comment *)\nInit == \\* here too", 1)
    assert edited != text
    spec.write_text(edited)
    assert spec_hash(files) == before
    # Moving a conjunct's column is not a comment edit: TLA+ reads the alignment.
    spec.write_text(text.replace("\n    /\\ ", "\n     /\\ ", 1))
    assert spec_hash(files) != before


def test_without_comments_keeps_strings_and_columns() -> None:
    text = 'A == "x (* y *) \\\\* z" \\* gone\n(* a (* nested *) b *)\n  /\\ B (* c *) /\\ C\n'
    assert without_comments(text) == 'A == "x (* y *) \\\\* z"\n  /\\ B         /\\ C'
