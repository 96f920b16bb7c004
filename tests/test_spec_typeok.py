"""Every spec says what its variables hold, and every passing model checks it (issue 14).

A ``TypeOK`` that is defined but never checked proves nothing, so each model the
manifest expects to pass must name a TypeOK invariant in its cfg (directly, or through
an inductive invariant that conjoins it). No TLC needed: this reads the files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refimpl.tla.manifest import default_spec_dir, load_manifest

SPEC = default_spec_dir()
ROOT = Path(__file__).resolve().parents[1]


def _modules() -> list[Path]:
    return sorted(p for p in SPEC.glob("*.tla") if not p.name.startswith("MC"))


@pytest.mark.parametrize("module", _modules(), ids=lambda p: p.stem)
def test_every_spec_defines_type_ok(module: Path) -> None:
    assert re.search(r"^\w*TypeOK\s*==", module.read_text(), re.M), f"{module.name}: no TypeOK"


def _invariants(cfg: Path) -> set[str]:
    names: set[str] = set()
    section = ""
    for line in cfg.read_text().splitlines():
        words = line.split()
        if not words:
            continue
        if words[0].isupper():
            section, words = words[0], words[1:]
        if section in ("INVARIANT", "INVARIANTS"):
            names.update(words)
    return names


def _cfg(module: str, cfg: str) -> Path:
    for folder in (SPEC, ROOT / "proofs"):
        if (folder / cfg).exists():
            return folder / cfg
    raise FileNotFoundError(cfg)


@pytest.mark.parametrize(
    "model", [m for m in load_manifest(SPEC) if m.expect == "pass"], ids=lambda m: m.name
)
def test_every_passing_model_checks_type_ok(model: object) -> None:
    from refimpl.tla.manifest import Model

    assert isinstance(model, Model)
    invariants = _invariants(_cfg(model.module, model.cfg))
    assert any("TypeOK" in name or name == "IndInv" for name in invariants), (
        f"{model.name}: {model.cfg} checks {sorted(invariants)}, no TypeOK"
    )
