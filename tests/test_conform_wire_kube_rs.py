"""``refimpl conform --wire`` against kube-rs' wire adapter (``kube-rs-adapter --wire``).

kube-rs' own watcher and reflector store, built from the harness's kubeconfig through
kube-client, over the harness's server: with a consumer that follows kube's docs
(``--init=buffer-deletes``: hold ``InitApply`` until ``InitDone``, take keys missing from
a relist as deleted) it passes fixed seeds, writes and wire faults included. A consumer
that acts on each ``InitApply`` as it comes (``--init=stream``, the default) meets a
store that does not hold the object yet (INF-1), and one that buffers but does not diff
the relist never learns of an object deleted while the watch was down (INF-3).
Skipped unless the adapter was built (``make -C adapters/kube-rs build``; in CI ``make
peers`` builds it first).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from wire_peers import assert_passes, hello_components, run_peer

from refimpl.usage import EXIT_FAILED

ADAPTER = Path(__file__).resolve().parent.parent / "adapters/kube-rs/target/release/kube-rs-adapter"

pytestmark = pytest.mark.skipif(
    not ADAPTER.exists(), reason=f"{ADAPTER} not built (make -C adapters/kube-rs build)"
)


def _run(seed: int, *flags: str) -> tuple[int, str]:
    return run_peer([str(ADAPTER)], seed, *flags)


@pytest.mark.parametrize("seed", [1, 6, 12])
def test_kube_rs_passes_over_the_wire(seed: int, no_thread_left: None) -> None:
    assert_passes([str(ADAPTER)], seed, "--init=buffer-deletes")


def test_acting_on_init_apply_meets_a_store_without_it(no_thread_left: None) -> None:
    # README "Over the wire": the stream yields each InitApply before InitDone swaps the
    # listed objects into the store. Seed 11 found INF-1 on every run (10 of 10); which
    # calls meet it depends on timing (whether the first list already finds c).
    rc, out = _run(11, "--init=stream")
    assert rc == EXIT_FAILED, out
    assert "INF-1 store before notify: h0.on_" in out


def test_a_relist_that_drops_an_object_tells_no_handler(no_thread_left: None) -> None:
    # README "Over the wire": b is deleted while the watch is down; the relist's InitDone
    # drops it from the store but yields no Delete, so a consumer that only buffers
    # InitApply keeps it (seed 4: 8 runs of 8, with bounds of 10, 20 and 60 s; 30 s
    # leaves kube's backoff room under load).
    rc, out = _run(4, "--init=buffer", "--quiescence", "30")
    assert rc == EXIT_FAILED, out
    assert "h0 saw default/b@" in out
    assert "(a lost notification)" in out


def test_the_wire_flag_offers_only_the_wire_informer() -> None:
    for flags, wire in (["--wire"], True), (["--wire", "--quiescence", "20"], True), ([], None):
        components = hello_components([str(ADAPTER)], *flags, timeout=30)
        assert components["informer"].get("wire") is wire
        if wire:
            assert list(components) == ["informer"]
            assert components["informer"]["quiescence_seconds"] == (
                20 if "--quiescence" in flags else 60
            )
        else:
            assert "list_reply" in components["informer"]["methods"]


@pytest.mark.parametrize(
    "flags",
    [["--wired"], ["--wire", "--quiescence", "0"], ["--wire", "--backoff=default"]],
)
def test_bad_flags_are_a_usage_error(flags: list[str]) -> None:
    done = subprocess.run([str(ADAPTER), *flags], input="", capture_output=True, timeout=30)
    assert done.returncode == 3
