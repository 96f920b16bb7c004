"""The peers' verdicts, pinned: a change on either side (the peer, or the harness) fails.

Every adapter folder with a ``peer.json`` (format: docs/conformance.md, "Peers and their
manifests") is a peer; ``make peers`` builds each and runs refimpl/conformance/peers/run.py.
Here, for every trace committed under ``adapters/PEER/traces/`` (its header names the
adapter flags it needs and the verdict it ``expect``s): replaying it against the peer
fails with that verdict, and replaying it against the reference adapter passes, so the
trace is behaviour client-go has and the peer lacks. Each manifest check (a seeded
search, marked ``peers``: ``make peers`` runs them too) gives the findings its
``expect`` pins (their signatures, or in the older form the first finding's verdict).
And docs/peers.md must be what the manifests, the traces and the run's observations in
docs/peers.json render to, with every verdict as pinned: a manifest or trace changed
without ``make peers`` leaves docs/peers.md stale, and that fails here
without running any peer.

Locally a peer that was not built is skipped (run ``make peers``); in CI (``CI`` set)
it is a failure, so a broken peer build cannot pass unnoticed.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.peers.checking import run_check
from refimpl.conformance.peers.manifest import (
    Check,
    Manifest,
    check_key,
    discover,
    load_manifest,
    trace_header,
)
from refimpl.conformance.peers.render import DOC, OBSERVATIONS, as_pinned, render
from refimpl.conformance.search.config import EXIT_DISAGREE, EXIT_PASS, Config
from refimpl.conformance.search.run import run

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
MANIFESTS = [load_manifest(path) for path in discover(ROOT)]


def built(manifest: Manifest) -> None:
    """Skip (locally) or fail (in CI) when ``manifest``'s peer was not built."""
    if not (manifest.folder / manifest.built).exists():
        message = f"{manifest.name} is not built: run `make peers`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def traces() -> list[tuple[Manifest, Path]]:
    return [(m, path) for m in MANIFESTS for path in m.traces()]


def checks() -> list[tuple[Manifest, Check]]:
    return [(m, check) for m in MANIFESTS for check in m.checks]


def conform(command: list[str], **settings: Any) -> tuple[int, str]:
    out = io.StringIO()
    config = Config(command=command, progress=False, timeout=10.0, **settings)
    return run(config, out=out, err=io.StringIO()), out.getvalue()


def test_the_known_peers_have_manifests() -> None:
    names = {m.name for m in MANIFESTS}
    assert {"kubernetes-python", "aiok8s", "client-node"} <= names
    for m in MANIFESTS:
        assert (m.folder / "Makefile").exists(), m.name
        assert m.checks, f"{m.name}: a peer.json without checks checks nothing"


def test_every_trace_header_is_well_formed() -> None:
    for _, path in traces():
        head = trace_header(path)
        assert isinstance(head.get("adapter_args", []), list), path


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("manifest", "path"), traces(), ids=lambda v: getattr(v, "name", ""))
def test_trace_still_fails_against_the_peer(manifest: Manifest, path: Path) -> None:
    built(manifest)
    head = trace_header(path)
    command = manifest.adapter_command(ROOT, head.get("adapter_args", []), absolute=True)
    status, text = conform(command, replay=str(path))
    assert status == EXIT_DISAGREE, text
    assert head["expect"] in text, text


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("manifest", "path"), traces(), ids=lambda v: getattr(v, "name", ""))
def test_trace_is_client_go_behaviour(manifest: Manifest, path: Path) -> None:
    status, text = conform(REFERENCE, replay=str(path))
    assert status == EXIT_PASS, text


@pytest.mark.peers
@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("manifest", "check"),
    checks(),
    ids=[
        f"{m.name}-{c.component}{'-wire' if c.wire else ''}-seed{c.seed}-"
        f"{'-'.join(c.flags + c.skip) or 'plain'}"
        for m, c in checks()
    ],
)
def test_seeded_search_verdict(manifest: Manifest, check: Check) -> None:
    built(manifest)
    observed, _ = run_check(manifest, check, ROOT)
    assert observed["ok"], observed


def test_docs_peers_md_is_current() -> None:
    """docs/peers.md is what ``make peers`` renders from the manifests, the traces and
    docs/peers.json, and every observation there is as pinned (see the module
    docstring). Regenerate with ``make peers`` (or ``make peers PEER=NAME``)."""
    store = json.loads((ROOT / OBSERVATIONS).read_text(encoding="utf-8"))
    assert (ROOT / DOC).read_text(encoding="utf-8") == render(ROOT, store), (
        "docs/peers.md is stale: run `make peers`"
    )
    problems: list[str] = []
    for m in MANIFESTS:
        seen = store["peers"].get(m.name, {})
        if "problem" in seen:
            problems.append(f"{m.name}: {seen['problem']}")
            continue
        for check in m.checks:
            key = check_key(m, check, ROOT)
            observed = seen.get("checks", {}).get(key)
            if not as_pinned(check, observed):
                problems.append(f"{m.name}: {key}: {observed and observed['verdict']}")
        for path in m.traces():
            observed = seen.get("traces", {}).get(path.name)
            if observed is None or not observed["ok"]:
                problems.append(f"{m.name}: trace {path.name}: {observed}")
    assert not problems, "run `make peers`:\n" + "\n".join(problems)
