"""The tour: every claim in docs/ as an experiment anyone can run (``refimpl tour``).

An *experiment* is a function that builds real refimpl components, drives them (on a
fake clock or in virtual time wherever time matters) and returns :class:`Claim` rows:
what the docs say, what was measured, what was expected, and whether they agree.
Chapters are the modules ``refimpl/tour/chNN_*.py``; each defines ``CHAPTER``,
``TITLE`` and registers experiments with :func:`experiment`. ``tests/test_tour.py`` runs
them all, so docs and code cannot drift.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import attrs

__all__ = ["Chapter", "Claim", "Experiment", "chapters", "equal", "experiment", "holds"]


@attrs.frozen
class Claim:
    """One checked statement. ``id`` is stable: docs/ cite it as ``[claim NN.slug]``."""

    id: str
    text: str
    measured: str
    expected: str
    ok: bool


@attrs.frozen
class Experiment:
    chapter: str
    name: str
    title: str
    run: Callable[[], list[Claim]]


@attrs.define
class Chapter:
    number: str
    title: str
    module: str
    experiments: list[Experiment] = attrs.field(factory=list)


_REGISTRY: list[Experiment] = []


ExperimentFn = Callable[[], list[Claim]]


def experiment(chapter: str, name: str, title: str) -> Callable[[ExperimentFn], ExperimentFn]:
    """Register ``fn`` as experiment ``name`` of ``chapter``."""

    def register(fn: ExperimentFn) -> ExperimentFn:
        _REGISTRY.append(Experiment(chapter, name, title, fn))
        return fn

    return register


def chapters() -> list[Chapter]:
    """Every chapter module, imported, in chapter order, with its experiments."""
    found: dict[str, Chapter] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("ch"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        number = str(module.CHAPTER)
        found[number] = Chapter(number, str(module.TITLE), module.__name__)
    for exp in _REGISTRY:
        if exp.chapter in found and exp not in found[exp.chapter].experiments:
            found[exp.chapter].experiments.append(exp)
    return [found[k] for k in sorted(found)]


def equal(id: str, text: str, measured: object, expected: object, unit: str = "") -> Claim:
    """A claim that holds when the measured value equals the expected one."""
    suffix = f" {unit}" if unit else ""
    return Claim(id, text, f"{measured}{suffix}", f"{expected}{suffix}", measured == expected)


def holds(id: str, text: str, measured: str, expected: str, ok: bool) -> Claim:
    """A claim whose test is not plain equality (a bound, a range, an ordering)."""
    return Claim(id, text, measured, expected, ok)
