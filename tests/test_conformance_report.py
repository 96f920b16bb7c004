"""The run report says what a PASS does not cover (refimpl/conformance/search/machines.py
``untested``, printed by refimpl/conformance/search/run.py ``run``).

An adapter that narrows a create option (``option_values`` in its hello), a ``--option``
that fixes one, methods or limiters it does not declare and ``--skip``: each shows up as
a "not tested" line under the component's summary, and the generator really leaves
those values out (checked on the protocol log).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from refimpl.conformance.protocol import COMPONENTS
from refimpl.conformance.search.config import EXIT_PASS, Config
from refimpl.conformance.search.machines import untested
from refimpl.conformance.search.run import run

FAKE = str(Path(__file__).with_name("conformance_fake_adapter.py"))


def test_narrowed_option_values_are_listed() -> None:
    caps = {
        "methods": list(COMPONENTS["delta_fifo"]),
        "option_values": {"emit_delta_type_replaced": [False]},
    }
    assert untested("delta_fifo", caps) == [
        "emit_delta_type_replaced=true (the adapter allows only [false])"
    ]


def test_fixed_options_undeclared_and_skipped_methods_are_listed() -> None:
    caps = {"methods": ["add", "update", "delete", "pop_nowait", "known_add", "replace"]}
    lines = untested("delta_fifo", caps, skipped=["replace"], pinned={"known_objects": False})
    assert lines == [
        "known_objects=true (fixed by --option known_objects=false)",
        "methods resync, has_synced, close, is_closed, known_delete (not declared by the adapter)",
        "methods replace (--skip)",
    ]


def test_undeclared_limiters_and_index_functions_are_listed() -> None:
    limiter_caps = {"methods": ["when"], "limiters": ["exponential", "max_of"]}
    assert untested("rate_limiter", limiter_caps) == [
        "methods forget, num_requeues (not declared by the adapter)",
        "limiters fast_slow, bucket, with_max_wait, default_controller, default_item_based "
        "(not declared by the adapter)",
    ]
    store_caps = {"methods": list(COMPONENTS["store"]), "indexers": ["namespace"]}
    assert untested("store", store_caps) == ["index functions labels (not declared by the adapter)"]


def test_a_full_adapter_leaves_nothing_out() -> None:
    caps = {"methods": list(COMPONENTS["real_fifo"])}
    assert untested("real_fifo", caps) == []


@pytest.mark.timeout(60)
def test_the_report_lists_what_the_adapter_narrowed(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    config = Config(
        command=[sys.executable, FAKE, "narrow:hello"],
        components=["delta_fifo"],
        budget=2.0,
        seed=3,
        log=str(log),
        progress=False,
    )
    out = io.StringIO()
    assert run(config, out=out, err=io.StringIO()) == EXIT_PASS, out.getvalue()
    assert (
        "  delta_fifo: not tested: emit_delta_type_replaced=true (the adapter allows only "
        "[false])\n" in out.getvalue()
    ), out.getvalue()
    sent = [json.loads(line[2:]) for line in log.read_text().splitlines() if line[:2] == "> "]
    options = [message["options"] for message in sent if message.get("op") == "create"]
    assert options and all(o["emit_delta_type_replaced"] is False for o in options)
