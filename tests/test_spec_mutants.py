"""Every checked property can fail: a one-action mutation model breaks it.

For every main model (spec/models.json: expected to pass, checked by default, its module
in spec/) and every name under INVARIANTS and PROPERTIES in its cfg, spec/models.json
lists an expected-violation model that EXTENDS the same spec module, names that property,
and whose next-state relation is the spec's ``Next`` with exactly one action swapped for a
mutated one. So no property a main model checks holds by construction. Runs without TLC
(reads the modules); TLC checks that each mutant really violates its property
(tests/test_tlc_models.py, ``pytest -m tlc``, or ``refimpl spec check``).

docs/07-the-model-and-the-code.md has the tables of mutants.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refimpl.tla.graph import without_comments
from refimpl.tla.manifest import Model, load_manifest

SPEC = Path(__file__).resolve().parents[1] / "spec"
MODELS = {m.name: m for m in load_manifest(SPEC)}
#: The models whose properties are the claims: expected to pass, checked by default,
#: and in spec/ (the proofs' models check the proof's own obligations).
MAIN = [
    m
    for m in MODELS.values()
    if m.expect == "pass" and m.default and not m.module.startswith("../")
]
_WORD = re.compile(r"\b[A-Z][A-Za-z0-9_]*\b")


def _source(name: str) -> str:
    return without_comments((SPEC / name).read_text())


def _definition(text: str, name: str) -> str:
    """The body of the top-level definition ``name ==``: up to the next line that
    starts in column 0 (the next definition, a separator, the module's end)."""
    match = re.search(rf"(?m)^{name}\s*==(.*?)(?=\n\S|\Z)", text, re.S)
    assert match, f"no definition {name}"
    return match.group(1)


def _actions(body: str) -> set[str]:
    return set(_WORD.findall(body)) - {"UNCHANGED", "Keys"}


def _extends(model: Model) -> str:
    match = re.search(r"(?m)^EXTENDS\s+(\w+)", _source(model.module))
    assert match, f"{model.module} EXTENDS nothing"
    return match.group(1)


def _next_name(model: Model) -> str:
    spec_name = _spec_name(model)
    body = _definition(_source(model.module), spec_name)
    nxt = re.search(r"\[\]\[(\w+)\]_", body)
    assert nxt, f"{model.name}: no [][Next]_vars in {spec_name}"
    return nxt.group(1)


def _spec_name(model: Model) -> str:
    found = re.search(r"SPECIFICATION\s+(\w+)", (SPEC / model.cfg).read_text())
    assert found, model.cfg
    return found.group(1)


def _mutants(spec: str, prop: str) -> list[Model]:
    """The expected violations of ``prop`` by a mutated ``spec``: a model that checks the
    spec's own ``Spec`` under other constants (MCEdgeVsLevelEdge) is no mutant."""
    return [
        m
        for m in MODELS.values()
        if m.expect == "violation"
        and m.property == prop
        and _extends(m) == spec
        and _spec_name(m) != "Spec"
    ]


def _checked(cfg: str) -> list[str]:
    """The names under INVARIANT(S) and PROPERTY(IES) in a cfg, in order: a section
    head alone on its line with names indented below it, or one name after it."""
    names: list[str] = []
    section = ""
    for line in (SPEC / cfg).read_text().splitlines():
        words = line.split("\\*")[0].split()
        if not words:
            continue
        if not line[0].isspace():
            section, words = words[0], words[1:]
        if section in ("INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES"):
            names += words
    return names


CASES = sorted({(_extends(m), prop) for m in MAIN for prop in _checked(m.cfg)})


def test_the_cases_cover_the_headline_properties() -> None:
    """The reading of the cfgs finds what the main models are known to check."""
    assert {m.name for m in MAIN} >= {"WorkQueue", "DeltaFIFO", "Informer", "Controller"}
    for pair in [
        ("WorkQueue", "NoTwoWorkersOnOneKey"),
        ("Controller", "NoTwoWorkersOnOneKey"),
        ("Informer", "StoreBeforeHandler"),
        ("InformerAtomic", "Converges"),
        ("Controller", "Converges"),
        ("DeltaFIFOClose", "QueuedKeysArePopped"),
        ("EdgeVsLevel", "Converges"),
    ]:
        assert pair in CASES
    assert _checked("MCEdgeVsLevelLevel.cfg") == ["TypeOK", "Converges"]


@pytest.mark.parametrize(("spec", "prop"), CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_each_checked_property_has_a_one_action_mutant(spec: str, prop: str) -> None:
    mutants = _mutants(spec, prop)
    assert mutants, f"no expected-violation model of {spec}.tla for {prop}"
    spec_next = _actions(_definition(_source(f"{spec}.tla"), "Next"))
    for mutant in mutants:
        body = _definition(_source(mutant.module), _next_name(mutant))
        mutant_next = _actions(body)
        removed, added = spec_next - mutant_next, mutant_next - spec_next
        assert len(removed) == 1 and len(added) == 1, (
            f"{mutant.name}: Next should swap one action of {spec}.tla's, "
            f"but drops {sorted(removed)} and adds {sorted(added)}"
        )
