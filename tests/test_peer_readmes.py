"""Each peer's README says what its peer.json pins (issue 27): the signatures of every
finding a check expects and those it acknowledges as known, in a "Pinned checks"
section, and no signature there that the manifest does not pin. The READMEs described
the older pins, one first finding per check, after peer.json had moved to lists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refimpl.conformance.peers.manifest import discover, load_manifest
from refimpl.conformance.protocol import COMPONENTS

ROOT = Path(__file__).resolve().parent.parent
PEERS = sorted(path.parent.name for path in discover(ROOT))
#: A signature as the READMEs quote it: `component/what/method`.
SIGNATURE = re.compile(r"`([a-z_]+/[A-Za-z0-9:+-]+/[a-z_]+)`")


def _pinned_section(readme: str) -> str:
    """The README's "Pinned checks (peer.json)" section, up to the next heading of its
    level or above."""
    found = re.search(r"^(#+) Pinned checks \(peer\.json\)\n", readme, re.MULTILINE)
    assert found is not None, "no 'Pinned checks (peer.json)' section"
    level = len(found[1])
    rest = readme[found.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def test_every_peer_is_checked() -> None:
    assert {"aiok8s", "client-go", "client-java"} <= set(PEERS), PEERS


@pytest.mark.parametrize("peer", PEERS)
def test_the_readme_names_exactly_what_peer_json_pins(peer: str) -> None:
    folder = ROOT / "adapters" / peer
    manifest = load_manifest(folder / "peer.json")
    pinned: set[str] = set()
    for check in manifest.checks:
        if not isinstance(check.expect, str):  # the older form pins no signature
            pinned |= set(check.expect)
    known = {k.signature for k in manifest.known}
    section = _pinned_section((folder / "README.md").read_text(encoding="utf-8"))
    named = {s for s in SIGNATURE.findall(section) if s.split("/")[0] in COMPONENTS}
    missing = sorted((pinned | known) - named)
    assert not missing, f"{peer}: pinned but not in its README's section: {missing}"
    stale = sorted(named - (pinned | known))
    assert not stale, f"{peer}: in its README's section but not pinned: {stale}"
    if not known:
        assert "No finding is in `known`" in section, peer
