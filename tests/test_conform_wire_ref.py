"""REF-1 and REF-3 over the wire (refimpl/conformance/wire/reflector_checks.py): the
rules on a hand-made server history, then a broken wire adapter that relists at "0"
caught end to end while the reference's own wire adapter passes the same seed."""

from __future__ import annotations

import sys
from typing import Any

from refimpl.conformance.wire.reflector_checks import reflector_findings
from refimpl.conformance.wire.run import WireRun, run_wire
from refimpl.usage import EXIT_FAILED, EXIT_OK

ADAPTER = [sys.executable, "-m", "refimpl.conformance.wire.adapter"]
PATH = "/api/v1/configmaps"


def req(status: int = 200, path: str = PATH, **query: str) -> dict[str, Any]:
    return {"method": "GET", "path": path, "status": status, "query": query}


def error_event(code: int) -> dict[str, Any]:
    return {"error_event": code, "query": {"watch": "true"}}


LIST_0 = req(resourceVersion="0")
WATCH_5 = req(watch="true", resourceVersion="5")


def ids(history: list[dict[str, Any]]) -> list[str]:
    return [finding.split()[0] for finding in reflector_findings(history)]


def test_client_gos_order_passes() -> None:
    """List at "0", watch, the watch's stream ends with an ERROR 410, relist at the last
    synced rv, watch again; a 410 status on a watch request, then a watch-list relist."""
    history = [LIST_0, WATCH_5, error_event(410), req(resourceVersion="5"), WATCH_5]
    history += [req(410, watch="true", resourceVersion="5")]
    history += [req(watch="true", sendInitialEvents="true", resourceVersion="5")]
    assert ids(history) == []


def test_a_first_list_at_0_retried_before_any_watch_is_fine() -> None:
    assert ids([req(500, resourceVersion="0"), LIST_0, WATCH_5]) == []


def test_a_relist_at_0_after_a_completed_list_is_ref_1() -> None:
    assert ids([LIST_0, WATCH_5, error_event(410), LIST_0]) == ["REF-1"]
    stream_at_0 = req(watch="true", sendInitialEvents="true", resourceVersion="0")
    assert ids([LIST_0, WATCH_5, stream_at_0]) == ["REF-1"]


def test_a_watch_again_after_a_410_is_ref_3() -> None:
    assert ids([LIST_0, WATCH_5, error_event(410), WATCH_5]) == ["REF-3"]
    assert ids([LIST_0, req(410, watch="true", resourceVersion="5"), WATCH_5]) == ["REF-3"]
    # Another error (500) asks for no relist.
    assert ids([LIST_0, WATCH_5, error_event(500), WATCH_5]) == []


def test_pages_and_other_requests_do_not_count() -> None:
    page = {**req(), "query": {"resourceVersion": "0", "limit": "2", "continue": "x"}}
    other = req(path="/api/v1/namespaces", resourceVersion="0")
    post = {**LIST_0, "method": "POST"}
    assert ids([LIST_0, WATCH_5, page, other, post]) == []
    namespaced = req(path="/api/v1/namespaces/default/configmaps", resourceVersion="0")
    assert ids([LIST_0, WATCH_5, namespaced]) == ["REF-1"]


def test_a_relist_at_0_is_caught_over_the_wire(no_thread_left: None) -> None:
    lines: list[str] = []
    rc = run_wire(WireRun([*ADAPTER, "--break", "relist-at-0"], 2), lines.append)
    assert rc == EXIT_FAILED, lines
    text = " ".join(" ".join(lines).split())
    assert "REF-1 the right resourceVersion: a " in text and "[informer/REF-1/wire: new]" in text
    assert run_wire(WireRun(ADAPTER, 2), lines.append) == EXIT_OK, lines
