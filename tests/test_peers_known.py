"""Known findings and pinned finding sets in peer manifests (refimpl/conformance/peers/).

A check's ``expect`` lists the signatures of every finding (the older single verdict
still reads); a new or a vanished finding fails ``make peers``. A peer.json ``known``
entry acknowledges a finding: the check still reports it, marked known, and an entry
no check finds is stale, which fails too. The peers here are fake folders whose adapter
is the broken adapter (adapters/broken) or the reference adapter; the seeds are fixed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from test_peers_runner import fake_peer, peers

from refimpl.conformance.peers.manifest import ManifestError, load_manifest
from refimpl.conformance.peers.render import DOC, OBSERVATIONS, render

ROOT = Path(__file__).resolve().parent.parent
BROKEN = [sys.executable, str(ROOT / "adapters" / "broken" / "adapter.py")]
BUGGY = [*BROKEN, "--bug", "done-forgets-requeue"]
#: What done-forgets-requeue's queue finding is called (the report prints it).
FINDING = "queue/differs/get_nowait"
#: Every finding of its seed-1 run: the lost requeue shows at a pop and at a len.
FINDINGS = [FINDING, "queue/differs/len"]
UPSTREAM = "https://example.org/issues/1"


def _listed(out: str, before: str, after: str) -> set[str]:
    """The signatures a ``peers`` line lists between ``before`` and ``after`` (in the
    order the run found them, which the pin does not fix)."""
    found = re.search(re.escape(before) + r" \[([^\]]*)\] " + re.escape(after), out)
    return set(found.group(1).split(", ")) if found else set()


def check(seed: int, expect: Any) -> dict[str, Any]:
    # A short shrink: the pins are the findings' signatures, which the search decides
    # (each finding is shrunk on its own and keeps its signature), not their lengths.
    return {"component": "queue", "seed": seed, "budget": 30, "shrink_budget": 2,
            "max_examples": 300, "expect": expect}  # fmt: skip


@pytest.mark.timeout(240)
def test_pinned_findings_and_known_notes_pass_and_render(tmp_path: Path) -> None:
    known = [{"signature": FINDING, "note": "re-adds lost", "upstream": UPSTREAM}]
    # Seed 1 pinned as a set of signatures, seed 2 in the older one-verdict form.
    fake_peer(tmp_path, command=BUGGY, checks=[check(1, FINDINGS), check(2, "difference")],
              known=known)  # fmt: skip
    status, out = peers(tmp_path)
    assert status == 0, out
    assert _listed(out, "check 1/2 queue (seed 1): difference", "ok") == set(FINDINGS), out
    assert "check 2/2 queue (seed 2): difference" in out and "stale" not in out, out
    store = json.loads((tmp_path / OBSERVATIONS).read_text(encoding="utf-8"))
    for observed in store["peers"]["fake"]["checks"].values():
        (found,) = [f for f in observed["findings"] if f["signature"] == FINDING]
        assert found["known"] == "re-adds lost"
        assert found["steps"], found
    doc = (tmp_path / DOC).read_text(encoding="utf-8")
    assert doc == render(tmp_path, store)
    assert f"`{FINDING}` — known: re-adds lost ([upstream]({UPSTREAM}))" in doc, doc


@pytest.mark.timeout(240)
def test_new_vanished_and_stale_findings_fail(tmp_path: Path) -> None:
    stale = {"signature": "queue/WQ-9/len", "note": "fixed long ago"}
    fake_peer(tmp_path, "buggy", command=BUGGY, checks=[check(1, [])], known=[stale])
    fake_peer(tmp_path, "fixed", checks=[check(1, [FINDING])])  # the reference adapter
    status, out = peers(tmp_path)
    assert status == 1, out
    # New: a finding the pin does not list.
    new = _listed(out, "check 1/1 queue (seed 1): difference", "MISMATCH (expected pass)")
    assert new == set(FINDINGS), out
    # Vanished: a pinned finding the run no longer gives.
    assert f"check 1/1 queue (seed 1): pass MISMATCH (expected {FINDING})" in out, out
    assert "peer buggy: known finding queue/WQ-9/len occurs in no check: stale" in out, out
    doc = (tmp_path / DOC).read_text(encoding="utf-8")
    assert "`queue/WQ-9/len` (acknowledged, found by no check)" in doc
    assert f"`{FINDING}` — new; client-go: not asked." in doc, doc


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"known": {"queue/differs/len": "x"}}, "'known' must be a list"),
        ({"known": ["queue/differs/len"]}, r"known'\[0\] must be an object"),
        ({"known": [{"signature": "INF-3", "note": "x"}]}, "not a signature"),
        ({"known": [{"signature": "nope/INF-3/add", "note": "x"}]}, "not a signature"),
        ({"known": [{"signature": "queue/differs/len"}]}, "note must be a non-empty string"),
        ({"known": [{"signature": "queue/differs/len", "note": " "}]}, "note must be"),
        ({"known": [{"signature": "queue/differs/len", "note": "x", "upstream": "#1"}]},
         "upstream must be a URL"),
        ({"known": [{"signature": "queue/differs/len", "note": "x", "issue": 1}]},
         r"unknown field\(s\) issue"),
        ({"known": [{"signature": "queue/differs/len", "note": "x"}] * 2},
         "acknowledged twice"),
        ({"checks": [check(1, ["queue/differs"])]}, "not a signature"),
        ({"checks": [check(1, ["store/differs/add"])]}, "not a finding of the queue check"),
        ({"checks": [check(1, [FINDING, FINDING])]}, "listed twice"),
        ({"checks": [check(1, 3)]}, "list of finding signatures"),
    ],
)  # fmt: skip
def test_manifest_known_and_expect_errors(
    tmp_path: Path, fields: dict[str, Any], problem: str
) -> None:
    folder = fake_peer(tmp_path, **fields)
    with pytest.raises(ManifestError, match=problem):
        load_manifest(folder / "peer.json")


def test_a_pin_reads_as_a_set_or_as_the_old_verdict(tmp_path: Path) -> None:
    folder = fake_peer(tmp_path, checks=[check(1, [FINDING, "queue/WQ-1/len"]), check(2, "WQ-1")])
    listed, verdict = load_manifest(folder / "peer.json").checks
    assert listed.matches("difference", ["queue/WQ-1/len", FINDING])
    assert not listed.matches("difference", [FINDING])
    assert not listed.matches("inconclusive", [FINDING, "queue/WQ-1/len"])
    assert verdict.matches("WQ-1", []) and not verdict.matches("pass", [])
    passing = load_manifest(fake_peer(tmp_path / "p", checks=[check(1, [])]) / "peer.json")
    assert passing.checks[0].matches("pass", [])
    # A run that ended with no results (a usage error, an adapter that did not start)
    # has no findings either, and is no pass.
    assert not passing.checks[0].matches("exit 3", [])
    assert not passing.checks[0].matches("adapter failure", [])
    assert listed.expect_text() == f"{FINDING}, queue/WQ-1/len" and verdict.expect_text() == "WQ-1"
