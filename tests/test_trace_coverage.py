"""Trace validation's coverage across seeds (refimpl/tla/trace_coverage.py): the rare
relists of refimpl/sim/rare.py are read off a trace correctly, and the informer
scenario's steering reaches each in most seeds where the unsteered generator seldom
does (both measured here, seeds 1-40). The witnesses' actions need TLC:
tests/test_tlc_trace_coverage.py."""

from __future__ import annotations

from typing import Any

from refimpl.sim.rare import GHOST, QUEUED_DELETE, ghost_keys, setups
from refimpl.tla.trace_core import witness_actions
from refimpl.tla.trace_coverage import declared_actions, rare_paths_reached, run_seed


def _line(action: str, desc: str, fifo: Any, store: Any, server: Any, gen: int = 0) -> Any:
    return {
        "action": action,
        "desc": desc,
        "fifo": fifo,
        "store": store,
        "server": server,
        "generation": gen,
    }


def test_a_relist_over_a_queued_delete_and_a_ghost_are_seen() -> None:
    listed = "reflector listed at rv 9 -> watch"
    fifo = [
        ["ns/a", [["Added", "ns/a", 3]]],
        ["ns/b", [["Updated", "ns/b", 4], ["Deleted", "ns/b", 5]]],
    ]
    lines = [
        _line("reflector", listed, [], {}, {"ns/a": 3}),  # the first list: no relist
        _line("client", "client delete ns/a@6", fifo, {"ns/b": 2}, {}),
        _line("reflector", listed, [], {"ns/b": 2}, {}),
    ]
    assert rare_paths_reached(lines) == {QUEUED_DELETE, GHOST}
    # a stored key, or one the server still has, is no ghost
    assert ghost_keys(fifo, {"ns/a": 1}, ()) == []
    assert ghost_keys(fifo, (), {"ns/a"}) == []
    assert setups([["Added", "ns/a", 3]], (), ()) == {GHOST}  # RealFIFO's log form
    # the same state before a generation's first list (a restart) is no relist
    restarted = [lines[0], lines[1], {**lines[2], "generation": 1}]
    assert rare_paths_reached(restarted) == set()


def test_steering_reaches_each_rare_path_in_most_seeds() -> None:
    runs = [run_seed("informer", seed, 300, "delta") for seed in range(1, 41)]
    for path in (QUEUED_DELETE, GHOST):
        plain = sum(path in r.plain for r in runs)
        steered = sum(path in r.steered for r in runs)
        print(f"{path}: {plain}/40 plain, {steered}/40 steered")
        assert steered > 20 > plain, path


def test_witness_actions_read_each_state_act() -> None:
    output = '/\\ act = "-"\n/\\ act = "Replace"\n/\\ i = 1\n/\\ act = "Pop"\n/\\ act = "Pop"\n'
    assert witness_actions(output) == {"Replace": 1, "Pop": 2}


def test_declared_actions_are_the_mappings_vocabulary() -> None:
    assert declared_actions("DeltaFIFO") == {"Add", "Update", "Delete", "Replace", "Resync", "Pop"}
    assert {"Write", "StoreWrite", "Distribute", "Pop", "List"} <= declared_actions("Informer")
