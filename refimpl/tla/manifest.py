"""The model manifest, spec/models.json: which models exist and what TLC should say.

Owns the file's format. Each entry names an MC module and its cfg, the expected outcome
(``"pass"``, or ``"violation"`` plus the property TLC must report), the figures of the
last real run with one TLC worker (distinct states, depth, seconds) and, for small
models, the committed state graph. A main model also carries its coverage (refimpl/tla/
coverage.py): TLC's count of states found and generated per action of ``Next``, the
actions its constants keep disabled (with the reason), and how many states or steps
reach each property's antecedent. A violation model is an expected failure: it passes
only when TLC finds that violation. A model with ``"default": false`` (a larger one,
checked once to show how far the small ones generalize) is run only when named.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from refimpl.tla.output import Status, TlcResult

__all__ = [
    "MANIFEST",
    "Model",
    "check_outcome",
    "default_spec_dir",
    "load_manifest",
    "packaged_spec_dir",
    "save_manifest",
]

MANIFEST = "models.json"


@attrs.frozen
class Model:
    """One TLC model of the manifest (paths relative to the spec directory)."""

    name: str
    module: str
    cfg: str
    expect: str
    about: str = ""
    property: str | None = None
    distinct_states: int | None = None
    depth: int | None = None
    seconds: float | None = None
    graph: str | None = None
    #: Checked by ``refimpl spec check`` with no model named (and ``pytest -m tlc``);
    #: False for a larger model that is run only when named.
    default: bool = True
    #: Action of Next -> [distinct states found, states generated], as TLC's -coverage
    #: reports them (``refimpl spec coverage --tlc --record``).
    actions: dict[str, list[int]] | None = attrs.field(default=None, hash=False)
    #: Action of Next -> why this model's constants never enable it (checked: each is
    #: exactly an action TLC never took).
    idle_actions: dict[str, str] | None = attrs.field(default=None, hash=False)
    #: Checked property -> [states or steps of the model's graph where its antecedent
    #: holds, all states or steps] (refimpl.tla.coverage.ANTECEDENTS).
    antecedents: dict[str, list[int]] | None = attrs.field(default=None, hash=False)

    def __attrs_post_init__(self) -> None:
        if self.expect not in ("pass", "violation"):
            raise ValueError(f"model {self.name}: expect must be 'pass' or 'violation'")
        if self.expect == "violation" and not self.property:
            raise ValueError(f"model {self.name}: a violation model must name its property")
        if self.graph and not self.default:
            raise ValueError(f"model {self.name}: a model with a graph must be checked by default")


def packaged_spec_dir() -> Path | None:
    """The spec/ a wheel carries as ``refimpl/_spec`` (pyproject.toml), if there is one.

    Found through importlib.resources so that it is wherever the package was installed;
    None in a checkout (the folder is mapped in only when a wheel is built) and for an
    install that is not on a file system (a zip), which TLC could not read anyway.
    """
    root = resources.files("refimpl") / "_spec"
    if isinstance(root, Path) and (root / MANIFEST).is_file():
        return root
    return None


def default_spec_dir() -> Path:
    """Where the TLA+ models, their manifest and the state graphs are.

    In this order: ``./spec`` if it holds a manifest (a checkout, or a user's own models),
    the copy an installed wheel carries (:func:`packaged_spec_dir`), else the spec/
    beside the package in a checkout (an editable install run from elsewhere).
    """
    here = Path.cwd() / "spec"
    if (here / MANIFEST).is_file():
        return here
    packaged = packaged_spec_dir()
    if packaged is not None:
        return packaged
    return Path(__file__).resolve().parents[2] / "spec"


def load_manifest(spec_dir: Path) -> list[Model]:
    path = spec_dir / MANIFEST
    try:
        data = json.loads(path.read_text())
        return [Model(**entry) for entry in data["models"]]
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no model manifest at {path}: the spec directory is missing or incomplete "
            "(pass --spec-dir, or reinstall refimpl: its wheel carries spec/)"
        ) from None
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: malformed manifest ({exc})") from exc


def save_manifest(spec_dir: Path, models: Sequence[Model]) -> None:
    entries: list[dict[str, Any]] = []
    for model in models:
        entry = attrs.asdict(model)
        entries.append(
            {
                k: v
                for k, v in entry.items()
                if v is not None and v != "" and not (k == "default" and v is True)
            }
        )
    text = json.dumps({"models": entries}, indent=2) + "\n"
    (spec_dir / MANIFEST).write_text(text)


def check_outcome(model: Model, result: TlcResult, *, exact: bool = True) -> list[str]:
    """Why ``result`` is not what ``model`` expects (empty when it is).

    A pass model must pass, a violation model must report its property violated (among
    others, when one counterexample violates several temporal properties). With
    ``exact`` (one TLC worker: a breadth-first search in a fixed order, liveness checked
    once on the complete graph, see :func:`refimpl.tla.runner.run_tlc`) every figure
    repeats from run to run, so the distinct-state count and depth must also equal the
    manifest's, for violation models too (the state count where the search stopped). With
    several workers they race for the queue: the depth TLC reports can differ by one and a
    violation can be found earlier or later, so only a pass model's distinct-state count
    (a complete search) is compared; callers pass ``exact=False``.
    """
    problems: list[str] = []
    if model.expect == "pass":
        if result.status is not Status.PASS:
            what = f" {result.violated}" if result.violated else ""
            problems.append(f"expected pass, TLC reported {result.status.value}{what}")
            return problems
    elif not result.status.is_violation:
        problems.append(
            f"expected TLC to report {model.property} violated, got {result.status.value}"
        )
        return problems
    elif model.property is None or not result.names_violated(model.property):
        problems.append(
            f"expected {model.property} violated, TLC reported "
            f"{result.violated or result.status.value}"
        )
        return problems
    if exact:
        fields: tuple[str, ...] = ("distinct_states", "depth")
    else:
        fields = ("distinct_states",) if model.expect == "pass" else ()
    for field in fields:
        want, got = getattr(model, field), getattr(result, field)
        if want is not None and want != got:
            problems.append(f"{field}: manifest says {want}, TLC found {got}")
    return problems
