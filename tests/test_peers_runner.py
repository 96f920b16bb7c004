"""``refimpl peers`` on bad input: tiny fake peers in a temporary repository root.

A missing toolchain is named, a build that fails is quoted, a verdict or a trace that
differs from its pin fails the run, a malformed peer.json is reported; none is a skip.
The one fake peer that really runs is the reference adapter behind a manifest.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.peers.checking import run_peers, verdict_of
from refimpl.conformance.peers.manifest import ManifestError, load_manifest
from refimpl.conformance.peers.render import DOC, OBSERVATIONS, render

ROOT = Path(__file__).resolve().parent.parent

BUILD_OK = "build:\n\ttouch built.stamp\nclean:\n\trm -f built.stamp\n"


def fake_peer(
    root: Path,
    name: str = "fake",
    makefile: str = BUILD_OK,
    **fields: Any,
) -> Path:
    folder = root / "adapters" / name
    folder.mkdir(parents=True)
    (folder / "Makefile").write_text(makefile, encoding="utf-8")
    manifest = {
        "peer": name,
        "language": "Python",
        "toolchains": ["make"],
        "implementation": "refimpl's own reference adapter",
        "built": "built.stamp",
        "command": [sys.executable, "-m", "refimpl.conformance.reference.adapter"],
        # --max-examples ends these searches; a budget of 3 s ran out on a loaded machine
        # ("inconclusive")
        "checks": [
            {"component": "queue", "seed": 1, "budget": 30, "max_examples": 10, "expect": "pass"}
        ],
        **fields,
    }
    (folder / "peer.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def peers(root: Path, *names: str, models: tuple[str, ...] = ()) -> tuple[int, str]:
    """Run the fake peers; no spec-driven walks unless ``models`` names some (the
    reference adapter offers every component, and each full walk takes seconds)."""
    out = io.StringIO()
    status = run_peers(root, names, out=out, models=models)
    return status, out.getvalue()


def test_a_missing_toolchain_is_named_and_fails(tmp_path: Path) -> None:
    fake_peer(tmp_path, toolchains=["make", "refimpl-no-such-compiler"])
    status, out = peers(tmp_path)
    assert status == 1
    assert "peer fake: toolchain 'refimpl-no-such-compiler' not found" in out
    assert "building" not in out
    doc = (tmp_path / DOC).read_text(encoding="utf-8")
    assert "fake: toolchain 'refimpl-no-such-compiler' not found" in doc


def test_a_failing_build_is_quoted_and_fails(tmp_path: Path) -> None:
    makefile = "build:\n\t@echo 'fatal: cannot reach the registry for foo 1.2.3' >&2; exit 1\n"
    fake_peer(tmp_path, makefile=makefile)
    status, out = peers(tmp_path)
    assert status == 1
    assert "peer fake did not build: " in out
    assert "fatal: cannot reach the registry for foo 1.2.3" in out
    assert "peers: 0 ok, 1 failed (fake)" in out


def test_a_build_that_leaves_no_built_file_fails(tmp_path: Path) -> None:
    fake_peer(tmp_path, makefile="build:\n\t@true\n")
    status, out = peers(tmp_path)
    assert status == 1
    assert "peer fake did not build: make build succeeded but built.stamp does not exist" in out


@pytest.mark.timeout(120)
def test_a_verdict_that_differs_from_its_pin_fails(tmp_path: Path) -> None:
    checks = [
        {"component": "queue", "seed": 1, "budget": 30, "max_examples": 10, "expect": "pass"},
        {"component": "queue", "seed": 2, "budget": 30, "max_examples": 10, "expect": "WQ-5"},
    ]
    fake_peer(tmp_path, checks=checks)
    status, out = peers(tmp_path)
    assert status == 1, out
    assert "check 1/2 queue (seed 1): pass ok" in out
    assert "check 2/2 queue (seed 2): pass MISMATCH (expected WQ-5)" in out
    doc = (tmp_path / DOC).read_text(encoding="utf-8")
    assert "**pass** [WQ-5]" in doc and "**pinned: WQ-5**" in doc
    assert "## Timings" in doc


def test_a_search_the_budget_ends_is_inconclusive_not_a_pass(tmp_path: Path) -> None:
    # 100000 examples cannot run in one second: the clock, not the seed, would decide
    # what was searched, so the pinned pass is not confirmed on this (or any) machine.
    checks = [
        {"component": "queue", "seed": 1, "budget": 1, "max_examples": 100_000, "expect": "pass"}
    ]
    fake_peer(tmp_path, checks=checks)
    status, out = peers(tmp_path)
    assert status == 1, out
    assert "check 1/1 queue (seed 1): inconclusive MISMATCH (expected pass)" in out
    assert verdict_of(
        0, "  queue  PASS  9 examples [the budget ended the search before --max-examples 50]"
    ) == (
        "inconclusive",
        "queue  PASS  9 examples [the budget ended the search before --max-examples 50]",
    )


@pytest.mark.timeout(120)
def test_a_trace_the_peer_passes_is_a_mismatch(tmp_path: Path) -> None:
    """A pinned trace says the peer lacks a behaviour; the reference adapter has it."""
    folder = fake_peer(tmp_path)
    (folder / "traces").mkdir()
    source = ROOT / "adapters" / "aiok8s" / "traces" / "replace-after-delete.jsonl"
    shutil.copy(source, folder / "traces" / source.name)
    status, out = peers(tmp_path)
    assert status == 1, out
    assert "trace replace-after-delete.jsonl: peer pass, reference pass MISMATCH" in out


@pytest.mark.timeout(120)
def test_a_peer_as_pinned_passes_and_renders_the_same_again(tmp_path: Path) -> None:
    fake_peer(tmp_path)
    status, out = peers(tmp_path)
    assert status == 0, out
    store = json.loads((tmp_path / OBSERVATIONS).read_text(encoding="utf-8"))
    doc = (tmp_path / DOC).read_text(encoding="utf-8")
    assert render(tmp_path, store) == doc
    assert "Generated by `make peers`" in doc
    # Only the timings section depends on the timings.
    store["timings"]["fake"]["total"] = 12345.6
    again = render(tmp_path, store)
    assert again != doc
    assert again.split("## Timings")[0] == doc.split("## Timings")[0]
    # A manifest changed after the run leaves the rendered text different (stale).
    path = tmp_path / "adapters" / "fake" / "peer.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["checks"][0]["seed"] = 7
    path.write_text(json.dumps(manifest), encoding="utf-8")
    stale = render(tmp_path, json.loads((tmp_path / OBSERVATIONS).read_text(encoding="utf-8")))
    assert stale != doc and "not run (**pinned: pass**)" in stale


def test_a_malformed_manifest_is_reported(tmp_path: Path) -> None:
    folder = fake_peer(tmp_path)
    (folder / "peer.json").write_text('{"peer": "fake"}', encoding="utf-8")
    status, out = peers(tmp_path)
    assert status == 1
    assert "peer fake: bad peer.json:" in out and "'language' must be a non-empty string" in out


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("checks", [{"component": "nope", "seed": 1, "expect": "pass"}], "component must be"),
        ("checks", [{"component": "queue", "seed": "1", "expect": "pass"}], "seed must be"),
        ("checks", [{"component": "queue", "seed": 1, "expect": ""}], "expect must be"),
        ("checks", [{"component": "queue", "seed": 1, "expect": "pass", "bduget": 3}], "bduget"),
        (
            "checks",
            [{"component": "queue", "seed": 1, "expect": "pass", "options": ["x=nope"]}],
            "NAME=JSON",
        ),
        (
            "checks",
            [{"component": "queue", "seed": 1, "expect": [], "wire": True}],
            "a wire check is an informer check",
        ),
        (
            "checks",
            [{"component": "informer", "seed": 1, "expect": [], "wire": True, "skip": ["x"]}],
            "a wire check takes no skip",
        ),
        ("checks", [{"component": "informer", "seed": 1, "expect": [], "wire": 1}], "wire must"),
        ("command", [], "'command' must not be empty"),
        ("toolchains", "go", "'toolchains' must be a list of strings"),
    ],
)
def test_manifest_field_errors(tmp_path: Path, field: str, value: Any, problem: str) -> None:
    folder = fake_peer(tmp_path, **{field: value})
    with pytest.raises(ManifestError, match=problem):
        load_manifest(folder / "peer.json")


def test_an_unknown_peer_name_fails(tmp_path: Path) -> None:
    fake_peer(tmp_path)
    status, out = peers(tmp_path, "nope")
    assert status == 1 and "no peer.json for nope" in out


def test_command_paths_resolve_against_the_folder(tmp_path: Path) -> None:
    folder = fake_peer(tmp_path, command=["bin/adapter", "--flag", "run", "python3"])
    (folder / "run").write_text("", encoding="utf-8")
    manifest = load_manifest(folder / "peer.json")
    assert manifest.adapter_command(tmp_path, ["--x"]) == [
        "adapters/fake/bin/adapter",
        "--flag",
        "adapters/fake/run",
        "python3",
        "--x",
    ]


def test_verdict_of_reads_the_first_finding() -> None:
    invariant = (
        "conform: adapter x 1, protocol 2, seed 1\n"
        "  informer             FAIL     3 examples\n"
        "FAIL informer: the adapter broke an invariant (step 4 of 4)\n"
        "  seed 1; first failure after 0.10 s\n"
        "  INF-3 no lost notification: h0 saw b@3 is missing\n"
    )
    assert verdict_of(1, invariant) == (
        "INF-3",
        "INF-3 no lost notification: h0 saw b@3 is missing",
    )
    differs = "FAIL queue: the adapter's answer differs from the reference (step 2 of 2)\n"
    assert verdict_of(1, differs)[0] == "difference"
    ghost = (
        "FAIL delta_fifo: the adapter broke an invariant (step 2 of 2)\n  s\n  a ghost (INF-3)\n"
    )
    assert verdict_of(1, ghost)[0] == "INF-3"
    crashed = "FAIL queue: the adapter failed (step 1 of 1)\n  s\n  exited\n"
    assert verdict_of(2, crashed) == ("adapter failure", "exited")
    assert verdict_of(0, "anything") == ("pass", "")
    assert verdict_of(3, "refimpl conform: nothing to test\n")[0] == "exit 3"


@pytest.mark.timeout(120)
def test_one_peer_runs_and_the_others_keep_their_observations(tmp_path: Path) -> None:
    fake_peer(tmp_path, name="first")
    fake_peer(tmp_path, name="second", toolchains=["refimpl-no-such-compiler"])
    where = tmp_path / "build" / "peers"
    out = io.StringIO()
    assert run_peers(tmp_path, (), out=out, where=where, models=()) == 1
    assert "peers: 1 ok, 1 failed (second)" in out.getvalue()
    assert not (tmp_path / DOC).exists()  # written where asked, not to docs/
    first = json.loads((where / "peers.json").read_text(encoding="utf-8"))["peers"]["first"]
    out = io.StringIO()
    assert run_peers(tmp_path, ("second",), out=out, where=where, models=()) == 1
    assert "peer first" not in out.getvalue()
    store = json.loads((where / "peers.json").read_text(encoding="utf-8"))
    assert store["peers"]["first"] == first
    doc = (where / "peers.md").read_text(encoding="utf-8")
    assert "(../../docs/conformance.md#peers-and-their-manifests)" in doc


def test_an_unreadable_trace_fails_the_peer(tmp_path: Path) -> None:
    folder = fake_peer(tmp_path, checks=[])
    (folder / "traces").mkdir()
    (folder / "traces" / "broken.jsonl").write_text("not json\n", encoding="utf-8")
    status, out = peers(tmp_path)
    assert status == 1
    assert "trace broken.jsonl: peer unreadable: " in out and "MISMATCH" in out


def test_a_check_note_is_checked_and_shown(tmp_path: Path) -> None:
    check = {"component": "queue", "seed": 1, "expect": "pass", "note": "why seed 1"}
    folder = fake_peer(tmp_path, checks=[check])
    manifest = load_manifest(folder / "peer.json")
    assert manifest.checks[0].note == "why seed 1"
    assert "   why seed 1" in render(tmp_path, {"peers": {}, "timings": {}})
    (folder / "peer.json").write_text(
        json.dumps(
            {**json.loads((folder / "peer.json").read_text()), "checks": [{**check, "note": 1}]}
        ),
        encoding="utf-8",
    )
    with pytest.raises(ManifestError, match="note must be a string"):
        load_manifest(folder / "peer.json")


@pytest.mark.timeout(300)
def test_walks_are_pinned_and_rendered(tmp_path: Path) -> None:
    fake_peer(tmp_path, walks={"WorkQueue": "pass"})
    status, out = peers(tmp_path, models=("WorkQueue",))
    assert status == 0, out
    assert "walk WorkQueue: pass, 1154/1154 edges ok" in out
    doc = (tmp_path / DOC).read_text(encoding="utf-8")
    assert "## Spec-driven coverage" in doc
    assert "| fake | WorkQueue | pass | 1154/1154 (graph: 1266) | 262/318 | yes |" in doc


@pytest.mark.timeout(300)
def test_a_walk_that_differs_from_its_pin_fails(tmp_path: Path) -> None:
    fake_peer(tmp_path, walks={"WorkQueue": "deviation"})
    status, out = peers(tmp_path, models=("WorkQueue",))
    assert status == 1, out
    assert "walk WorkQueue: pass, 1154/1154 edges MISMATCH (pinned: deviation)" in out


def test_a_walk_pin_for_an_unknown_model_is_refused(tmp_path: Path) -> None:
    folder = fake_peer(tmp_path, walks={"Nope": "pass"})
    with pytest.raises(ManifestError, match="no driven model 'Nope'"):
        load_manifest(folder / "peer.json")


def test_wire_checks_run_are_pinned_and_get_their_column(tmp_path: Path) -> None:
    """A ``"wire": true`` check runs ``refimpl conform --wire`` with the check's flags
    after the adapter's command; its findings are pinned by ``informer/ID/wire``
    signatures and shown in the matrix's wire column."""
    wire = [sys.executable, "-m", "refimpl.conformance.wire.adapter"]
    checks = [
        {"component": "informer", "seed": 2, "expect": [], "wire": True, "flags": ["--wire"]},
        {
            "component": "informer",
            "seed": 1,
            "expect": ["informer/INF-1/wire"],
            "wire": True,
            "flags": ["--break", "notify-first"],
        },
    ]
    fake_peer(tmp_path, command=wire, checks=checks)
    status, out = peers(tmp_path)
    assert status == 0, out
    assert "check 1/2 informer (wire, seed 2, --wire): pass ok" in out
    assert "check 2/2 informer (wire, seed 1, --break, notify-first): INF-1 [" in out
    doc = (tmp_path / DOC).read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if line.startswith("| fake |"))
    assert row.endswith("| pass; [INF-1](#fake-check-2) (--break, notify-first) |"), row
    shown = (
        "refimpl conform --component informer --wire --seed 2 --shrink-budget 60 --timeout 10 --"
    )
    assert shown in doc
    assert "`informer/INF-1/wire` — new; client-go:" in doc
    assert "as a plan file (save as .jsonl, run with <code>refimpl conform --wire --replay" in doc
