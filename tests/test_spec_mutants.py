"""Each informer property can fail: a mutation model breaks it.

For spec/Informer.tla and spec/InformerAtomic.tla and each property their main models
check (StoreBeforeHandler, INF-1; PerKeyRVOrder, INF-2; StoreFromServer, INF-8;
NoLostDelete and Converges, INF-3; TypeOK; and, atomic mode only,
ReplacedAllWholeStore, RF-4), spec/models.json lists an expected-violation model that
EXTENDS the spec, names that property, and whose next-state relation is the spec's
``Next`` with exactly one action swapped for a mutated one; the main model checks the
property. So no property the main models check holds by construction. Runs without TLC
(reads the modules); TLC checks that each mutant really violates its property
(tests/test_tlc_models.py, ``pytest -m tlc``, or ``refimpl spec check``).

The FIFO and controller models name the properties that were vacuous or untested before
(OTHERS): the relist, sync, batch and close properties of spec/RealFIFOClose.tla and
spec/DeltaFIFOClose.tla, and the controller's ActualFollowsCache,
WorkersExitAfterShutDown and DrainWaitsForReconciles; each has such a
mutant too (their other checked properties are not all covered).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refimpl.tla.graph import without_comments
from refimpl.tla.manifest import Model, load_manifest

SPEC = Path(__file__).resolve().parents[1] / "spec"
MODELS = {m.name: m for m in load_manifest(SPEC)}
SPECS = {"Informer": "Informer", "InformerAtomic": "InformerAtomic"}
_COMMON = (
    "StoreBeforeHandler",
    "PerKeyRVOrder",
    "StoreFromServer",
    "NoLostDelete",
    "Converges",
    "TypeOK",
)
#: Every invariant and property each main model's cfg checks.
PROPERTIES = {
    "Informer": _COMMON,
    "InformerAtomic": (*_COMMON, "ReplacedAllWholeStore"),
}
CASES = [(spec, prop) for spec, props in PROPERTIES.items() for prop in props]
#: Main model -> (the module its mutants EXTEND, the properties each needing a mutant).
OTHERS = {
    "RealFIFO": (
        "RealFIFOClose",
        (
            "RelistLeavesListedKeys",
            "InitialListIsProcessed",
            "ExitOnlyWhenDrained",
            "ExitsAfterClose",
            "BatchIsWellFormed",
        ),
    ),
    "DeltaFIFO": ("DeltaFIFOClose", ("ExitsAfterClose",)),
    "Controller": (
        "Controller",
        ("ActualFollowsCache", "WorkersExitAfterShutDown", "DrainWaitsForReconciles"),
    ),
}
OTHER_CASES = [(model, spec, prop) for model, (spec, props) in OTHERS.items() for prop in props]
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


def _extends(model: Model) -> str | None:
    match = re.search(r"(?m)^EXTENDS\s+(\w+)", _source(model.module))
    return match.group(1) if match else None


def _next_name(model: Model) -> str:
    cfg = (SPEC / model.cfg).read_text()
    spec_name = re.search(r"SPECIFICATION\s+(\w+)", cfg)
    assert spec_name, model.cfg
    text = _source(model.module)
    body = _definition(text, spec_name.group(1))
    nxt = re.search(r"\[\]\[(\w+)\]_", body)
    assert nxt, f"{model.name}: no [][Next]_vars in {spec_name.group(1)}"
    return nxt.group(1)


def _mutants(spec: str, prop: str) -> list[Model]:
    return [
        m
        for m in MODELS.values()
        if m.expect == "violation" and m.property == prop and _extends(m) == spec
    ]


def _checked(cfg: str) -> set[str]:
    """The names under INVARIANTS and PROPERTIES in a cfg."""
    names: set[str] = set()
    section = ""
    for line in (SPEC / cfg).read_text().splitlines():
        if line and not line[0].isspace():
            section = line.split()[0]
        elif section in ("INVARIANTS", "PROPERTIES") and line.strip():
            names.add(line.strip())
    return names


@pytest.mark.parametrize("spec", SPECS)
def test_the_list_covers_every_checked_property(spec: str) -> None:
    assert _checked(MODELS[SPECS[spec]].cfg) == set(PROPERTIES[spec])


@pytest.mark.parametrize(("spec", "prop"), CASES)
def test_each_property_has_a_one_action_mutant(spec: str, prop: str) -> None:
    _check_mutants(SPECS[spec], spec, prop)


@pytest.mark.parametrize(("model", "spec", "prop"), OTHER_CASES)
def test_fifo_and_controller_properties_have_one_action_mutants(
    model: str, spec: str, prop: str
) -> None:
    _check_mutants(model, spec, prop)


def _check_mutants(model: str, spec: str, prop: str) -> None:
    main = MODELS[model]
    assert main.expect == "pass"
    assert re.search(rf"(?m)^\s+{prop}\s*$", (SPEC / main.cfg).read_text()), (
        f"{main.cfg} does not check {prop}"
    )
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
