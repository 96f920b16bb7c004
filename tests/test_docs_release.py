"""The docs' release facts: which Kubernetes release first shipped a fix, which feature
gates 1.36 has, client-go's current names, and the installs the README offers.

Each fact below was read in client-go's (or apimachinery's) source at the tag named, not
taken from the docs; a docs sentence that states another release fails here (issue 27:
#83520 was cited as first in v1.18, the 1.36 gates as one gate locked on, the reflector's
event loop by its pre-v0.31 name, and the README offered an install from an index that
does not have refimpl).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))

#: kubernetes/kubernetes PR -> the first Kubernetes minor release that has it. #83520:
#: ``relistResourceVersion`` is in client-go v0.17.0's reflector.go, not in v0.16.15's.
#: The others are the releases the docs state, as checked for issue 27.
FIRST_RELEASE = {
    "58394": 10,
    "77170": 15,
    "83520": 17,
    "83911": 17,
    "83945": 17,
    "84970": 17,
    "90825": 19,
    "92537": 19,
    "96797": 21,
    "113985": 27,
    "115620": 27,
    "135462": 36,
    "136264": 36,
    "136583": 36,
}

#: "#NNNNN ... first in v1.NN", the PR nearest before the release (no other PR between).
FIRST_IN = re.compile(r"#(\d{5,6})[^#]{0,40}?first in v1\.(\d+)")


def _texts() -> list[tuple[str, str]]:
    return [(p.name, p.read_text()) for p in [*DOCS, ROOT / "README.md"]]


def test_every_first_release_cited_is_the_one_client_go_shipped() -> None:
    wrong, unknown = [], []
    for name, text in _texts():
        for match in FIRST_IN.finditer(" ".join(text.split())):
            pr, release = match.group(1), int(match.group(2))
            if pr not in FIRST_RELEASE:
                unknown.append(f"{name}: #{pr}")
            elif FIRST_RELEASE[pr] != release:
                wrong.append(f"{name}: #{pr} first in v1.{release}, not v1.{FIRST_RELEASE[pr]}")
    assert not wrong, wrong
    assert not unknown, f"add these to FIRST_RELEASE once checked in client-go: {unknown}"


#: client-go v0.36 ``features/known_features.go``: gate -> (first release, 1.36 stage).
GATES_1_36 = {
    "InOrderInformers": ("1.33", "GA"),
    "InOrderInformersBatchProcess": ("1.35", "beta"),
    "AtomicFIFO": ("1.36", "beta"),
    "UnlockWhileProcessingFIFO": ("1.36", "beta"),
}


def _gate_rows() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "02-inside-the-informers-queue.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and cells[0].strip("`") in GATES_1_36:
            rows[cells[0].strip("`")] = cells
    return rows


def test_docs_02_names_each_1_36_gate_with_its_release() -> None:
    rows = _gate_rows()
    assert set(rows) == set(GATES_1_36)
    for gate, (since, stage) in GATES_1_36.items():
        assert rows[gate][1].startswith(since), (gate, rows[gate])
        assert ("GA in 1.36" in rows[gate][1]) == (stage == "GA"), (gate, rows[gate])
    text = " ".join((ROOT / "docs" / "02-inside-the-informers-queue.md").read_text().split())
    assert "the gate is locked on" not in text
    assert "only `InOrderInformers` is GA and locked on" in text


def test_the_refimpl_column_of_the_gates_table_builds_what_it_says() -> None:
    from refimpl.cache.informer_core import FifoMode, new_fifo_core
    from refimpl.cache.real_fifo import RealFIFO, RealFIFOCore
    from refimpl.cache.shared_informer import SharedIndexInformer
    from refimpl.cache.store import Indexer

    rows = _gate_rows()
    assert "`FifoMode.DELTA`" in rows["InOrderInformers"][3]
    assert "`FifoMode.REAL`" in rows["AtomicFIFO"][3]
    assert "`batch=False`" in rows["InOrderInformersBatchProcess"][3]
    assert "unlock_while_processing=False" in rows["UnlockWhileProcessingFIFO"][3]
    # AtomicFIFO off: RealFIFO, not atomic, the indexer as known objects (client-go's
    # newQueueFIFO); on: atomic, unlocking (the UnlockWhileProcessingFIFO default).
    real = new_fifo_core(FifoMode.REAL, Indexer())
    atomic = new_fifo_core(FifoMode.REAL_ATOMIC, Indexer())
    assert isinstance(real, RealFIFOCore) and isinstance(atomic, RealFIFOCore)
    assert not real.atomic_events and real.known_objects is not None
    assert atomic.atomic_events and atomic.unlock_while_processing
    locked = RealFIFO(atomic_events=True, unlock_while_processing=False)
    assert not locked.core.unlock_while_processing
    assert "batch" in inspect.signature(SharedIndexInformer.__init__).parameters


#: client-go names the docs may use only with the release that renamed them.
RENAMED = {"watchHandler": "v1.31"}


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_a_renamed_client_go_function_is_cited_with_its_rename(old: str) -> None:
    stale = [
        f"{name}: {sentence.strip()[:120]}"
        for name, text in _texts()
        for sentence in re.split(r"(?<=[.!?])\s", " ".join(text.split()))
        if f"`{old}`" in sentence and RENAMED[old] not in sentence
    ]
    assert not stale, stale


def test_docs_readme_says_what_a_release_number_means() -> None:
    text = " ".join((ROOT / "docs" / "README.md").read_text().split())
    assert re.search(r"v1\.NN .*Kubernetes 1\.NN.*client-go module is tagged v0\.NN", text), text


def test_the_readme_offers_only_installs_that_work() -> None:
    # refimpl is on no package index: every `pip install` the docs show installs a path
    # (the clone, or a wheel built from it), never a bare project name.
    offered = [
        (name, target)
        for name, text in _texts()
        for target in re.findall(r"pip install ([^`]+)`", text)
    ]
    assert offered
    by_name = [
        f"{name}: pip install {target}"
        for name, target in offered
        if not re.match(r"""['"]?(\.|dist/|\S+\.whl)""", target.split()[-1])
    ]
    assert not by_name, by_name
