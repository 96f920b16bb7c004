"""The release-aware reference (refimpl/eras.py): each era switch, run under two releases.

Every test drives the same protocol sequence through the reference's informer under a
release before a switch and one from it on, and shows the difference docs/invariants.md
dates. Backoff jitter comes from the reference informer's fixed seed (0), so each run
is reproducible.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from conform_helpers import run_conform

from refimpl.apierrors import Expired, TooManyRequests
from refimpl.cache.reflector import NextStep, ReflectorCore
from refimpl.cli import main
from refimpl.conformance.reference.adapter import main as reference_adapter
from refimpl.conformance.reference.dispatch import ReferenceDriver
from refimpl.conformance.reference.informer import InformerComponent
from refimpl.conformance.search.config import AdapterHandshakeError
from refimpl.conformance.search.session import check_hello, follow_release
from refimpl.eras import LATEST, NEWEST, OLDEST, SWITCHES, ReleaseError, era_of, parse_release
from refimpl.usage import EXIT_USAGE

ROOT = Path(__file__).resolve().parent.parent
INVARIANTS = (ROOT / "docs" / "invariants.md").read_text(encoding="utf-8")


def obj(name: str, rv: int) -> dict[str, Any]:
    return {"namespace": "", "name": name, "rv": str(rv), "labels": {}}


def call(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "i", "method": method, "args": args}


def advance(seconds: float) -> dict[str, Any]:
    return {"op": "advance", "seconds": seconds}


class Informer:
    """A reference informer of one release line, driven request by request."""

    def __init__(self, release: str | None, options: dict[str, Any] | None = None) -> None:
        self.driver = ReferenceDriver()
        self.driver.era = LATEST if release is None else era_of(release)
        self.rid = 0
        self.send({"op": "hello", "protocol": 2})
        self.created = self.send(
            {"op": "create", "instance": "i", "component": "informer", "options": options or {}}
        )

    def send(self, request: dict[str, Any]) -> dict[str, Any]:
        self.rid += 1
        return self.driver.handle({"id": self.rid, **request})

    def waiting(self, *requests: dict[str, Any]) -> dict[str, Any]:
        """What the informer waits for after ``requests`` (then a ``state``)."""
        for request in requests:
            assert "result" in self.send(request), request
        result = self.send(call("state"))["result"]
        assert isinstance(result, dict)
        waiting = result["waiting"]
        assert isinstance(waiting, dict)
        return waiting


START = [
    call("add_handler", name="h0", raises=False, resync=None),
    call("start"),
    call("list_reply", objects=[obj("a", 2)], rv="3"),
]


# -- the table --------------------------------------------------------------------------


def test_the_era_fields_are_the_switch_table() -> None:
    fields = [f.name for f in dataclasses.fields(LATEST)]
    assert fields == ["release", *(s.name for s in SWITCHES)]
    assert all(OLDEST < s.release <= NEWEST for s in SWITCHES)
    assert all(getattr(LATEST, s.name) for s in SWITCHES)  # today's runs: every switch on
    oldest = era_of(OLDEST)
    assert not any(getattr(oldest, s.name) for s in SWITCHES)


@pytest.mark.parametrize("switch", SWITCHES, ids=lambda s: s.name)
def test_each_switch_is_listed_beside_the_claim_it_changes(switch: Any) -> None:
    section = INVARIANTS.split(f"### {switch.invariant} ·", 1)[1].split("\n### ", 1)[0]
    assert f"`{switch.name}` (v1.{switch.release})" in section


@pytest.mark.parametrize("text", ["1.17", "v1.17", "v0.17", "0.17", "v0.17.4", " 1.17 "])
def test_a_release_line_is_written_either_way(text: str) -> None:
    assert parse_release(text) == 17
    assert era_of(text).name == "1.17"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1.16", "oldest release line refimpl models, 1.17"),
        ("v0.9", "oldest release line refimpl models, 1.17"),
        ("1.38", "newer than refimpl knows"),
        ("2.17", "not a client-go release line"),
        ("latest", "not a client-go release line"),
    ],
)
def test_releases_outside_the_table_are_refused(text: str, says: str) -> None:
    with pytest.raises(ReleaseError, match=re.escape(says)):
        era_of(text)


# -- relist_from_last_synced_rv_after_watch_410 (REF-1, v1.18) --------------------------


@pytest.mark.parametrize(
    "ending",
    [
        [call("watch_open"), call("watch_end", how="expired")],
        [call("watch_error", reason="expired")],
    ],
    ids=["stream", "request"],
)
def test_after_a_410_on_a_watch_1_17_relists_at_empty_1_18_at_the_last_rv(
    ending: list[dict[str, Any]],
) -> None:
    sequence = [*START, *ending, advance(2.0)]
    assert Informer("1.17").waiting(*sequence) == {"op": "list", "rv": ""}
    assert Informer("1.18").waiting(*sequence) == {"op": "list", "rv": "3"}
    assert Informer(None).waiting(*sequence) == {"op": "list", "rv": "3"}


# -- rewatch_after_429 (INF-9, v1.22) -----------------------------------------------------


def test_a_429_on_a_watch_request_relists_before_1_22_and_rewatches_after() -> None:
    sequence = [*START, call("watch_error", reason="too_many_requests"), advance(2.0)]
    assert Informer("1.21").waiting(*sequence) == {"op": "list", "rv": "3"}
    assert Informer("1.22").waiting(*sequence) == {"op": "watch", "rv": "3"}


def test_a_429_ending_an_open_watch_too() -> None:
    # The protocol cannot end an open watch with 429; the core decides it the same way.
    assert ReflectorCore(era=era_of("1.21")).after_watch(TooManyRequests(), 0.0) is (
        NextStep.RELIST
    )
    assert ReflectorCore(era=era_of("1.22")).after_watch(TooManyRequests(), 0.0) is (
        NextStep.BACKOFF_THEN_REWATCH
    )
    # ... and the 410 switch, on both of the core's paths.
    for step in ("after_watch", "after_watch_start_error"):
        old, new = ReflectorCore(era=era_of("1.17")), ReflectorCore(era=era_of("1.18"))
        for core in (old, new):
            core.set_last_sync_resource_version("3")
            decide = getattr(core, step)
            decide(Expired(), 0.0) if step == "after_watch" else decide(Expired())
        assert (old.relist_resource_version(), new.relist_resource_version()) == ("", "3")


# -- emit_delta_type_replaced (INF-7, v1.18) ------------------------------------------------


def test_up_to_1_17_a_relisted_change_reaches_only_handlers_due_for_resync() -> None:
    # h1 never resyncs; after the first resync check (10 s) only h0 is due. Then the
    # watch expires and the relist brings a changed object.
    sequence = [
        call("add_handler", name="h0", raises=False, resync=None),
        call("add_handler", name="h1", raises=False, resync=0),
        call("start"),
        call("list_reply", objects=[obj("a", 2)], rv="2"),
        call("watch_open"),
        advance(11.0),
        call("watch_end", how="expired"),
        advance(2.0),
    ]
    relist = call("list_reply", objects=[obj("a", 5)], rv="5")
    told = {}
    for release in ("1.17", "1.18"):
        informer = Informer(release, {"fifo": "delta", "resync": 10})
        informer.waiting(*sequence)
        answer = informer.send(relist)["result"]
        told[release] = sorted(c["handler"] for c in answer["calls"] if c["rv"] == "5")
        assert answer["cache"] == [obj("a", 5)]  # the cache has it either way
    assert told == {"1.17": ["h0"], "1.18": ["h0", "h1"]}


# -- backoff_between_passes (INF-9, v1.18) and backoff_reset_since_last_reset (v1.36) -----


def gaps_between_lists(release: str, seconds: int, step: float = 0.5) -> list[float]:
    """Seconds between successive list requests while every list fails with a 500."""
    informer = Informer(release)
    informer.waiting(*START[:2])
    asked: list[float] = []
    now = 0.0
    while now < seconds:
        if informer.waiting()["op"] == "list":
            asked.append(now)
            informer.waiting(call("list_error", reason="internal"))
        informer.waiting(advance(step))
        now += step
    return [round(b - a, 3) for a, b in itertools.pairwise(asked)]


def test_1_17_waits_one_second_between_passes_1_18_backs_off() -> None:
    old = gaps_between_lists("1.17", 60)
    assert old and set(old) == {1.0}  # wait.Until's fixed period
    new = gaps_between_lists("1.18", 60)
    assert new[0] <= 2.0 and new[4] >= 12.8  # 0.8 s doubling (jittered) towards 30 s
    assert len(new) < len(old) / 4


def test_the_backoff_restarts_while_failing_from_1_36_only() -> None:
    # Every list fails: 1.35 measures the quiet time from the last backoff, so the
    # delays stay at the cap; 1.36 restarts them 2 minutes after the last restart.
    capped = gaps_between_lists("1.35", 400, step=1.0)
    reset = gaps_between_lists("1.36", 400, step=1.0)
    assert min(capped[capped.index(max(capped)) :]) >= 30.0
    assert min(reset[reset.index(max(reset)) :]) <= 2.0


# -- real_fifo (v1.33) and atomic_fifo (v1.36): the FIFO generations ----------------------


@pytest.mark.parametrize(
    ("release", "modes"),
    [("1.32", ["delta"]), ("1.33", ["real", "delta"]), ("1.36", ["real-atomic", "real", "delta"])],
)
def test_a_release_offers_the_fifos_it_had_its_default_first(
    release: str, modes: list[str]
) -> None:
    informer = Informer(release)
    component = informer.driver.instances["i"]
    assert isinstance(component, InformerComponent)
    assert component.informer.fifo_mode == modes[0]
    hello = informer.driver.handle({"id": 0, "op": "hello", "protocol": 2})["result"]
    assert hello["components"]["informer"]["behaves_like"] == modes
    assert hello["components"]["informer"]["release"] == release
    refused = Informer("1.32", {"fifo": "real"}).created
    assert refused["error"]["kind"] == "bad_request" and "1.32" in refused["error"]["message"]


# -- the harness: the adapter's release, --release ---------------------------------------


def hello_with(**informer: Any) -> dict[str, Any]:
    caps = {"methods": ["start"], **informer}
    return {"protocol": 2, "name": "a", "version": "1", "components": {"informer": caps}}


def test_the_harness_follows_the_declared_release_and_narrows_the_fifos() -> None:
    hello = hello_with(behaves_like=["real-atomic", "real", "delta"], release="v0.30")
    assert check_hello(hello) is None
    assert follow_release(hello, None) == era_of("1.30")
    assert hello["components"]["informer"]["behaves_like"] == ["delta"]
    # --release wins over the adapter's own.
    assert follow_release(hello_with(release="1.30"), "1.17") == era_of("1.17")
    assert follow_release(hello_with(behaves_like=["delta"]), None) == LATEST
    with pytest.raises(AdapterHandshakeError, match=re.escape("none of which client-go 1.30 has")):
        follow_release(hello_with(behaves_like=["real"], release="1.30"), None)
    assert "oldest release line" in str(check_hello(hello_with(release="1.16")))


def test_conform_refuses_an_unmodelled_release_with_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        status = main(["conform", "--release", "1.16", "--", "true"])
    except SystemExit as exc:
        status = int(exc.code or 0)
    err = capsys.readouterr().err
    assert status == EXIT_USAGE, err
    assert "--release: client-go 1.16 is older than" in err and "1.17" in err
    try:
        status = main(["conform", "--release", "1.17", "--from-spec", "Informer", "--", "true"])
    except SystemExit as exc:
        status = int(exc.code or 0)
    err = capsys.readouterr().err
    assert status == EXIT_USAGE and "--release does not apply to --from-spec" in err, err


def test_the_reference_adapter_refuses_an_unmodelled_release(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert reference_adapter(["--release", "1.16"]) == 2
    assert "oldest release line refimpl models, 1.17" in capsys.readouterr().err


REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
#: Shrunk by replay only: what is asserted is which findings there are, not how short
#: Hypothesis gets them (its shrinking took half of the test's time).
SETTINGS = {
    "components": ["informer"],
    "budget": 6.0,
    "shrink_budget": 6.0,
    "quick_shrink": True,
    "seed": 3,
}


def test_a_1_17_adapter_passes_as_1_17_and_differs_from_the_newest(tmp_path: Path) -> None:
    adapter = [*REFERENCE, "--release", "1.17"]
    status, report = run_conform(adapter, **SETTINGS)
    # No answer differs. What may fail is a handler missing a notification (INF-3) or
    # then getting an update for an object it never had (INF-2): in 1.17 a relisted
    # change reached only the handlers due for resync (#86015; the
    # emit_delta_type_replaced switch), and handlers have their own resync periods.
    found = re.findall(r"^finding \d+ of \d+: (\S+)", report, re.MULTILINE)
    assert status == (1 if found else 0), report
    assert all(signature.split("/")[1] in ("INF-2", "INF-3") for signature in found), report
    saved = str(tmp_path / "found.jsonl")
    status, report = run_conform(adapter, release="1.37", save=saved, **SETTINGS)
    assert status == 1 and "informer/differs" in report, report
    # The saved finding replays against the release it was found with, not the
    # adapter's own (with which it would pass).
    status, report = run_conform(adapter, replay=saved, components=["informer"])
    assert status == 1 and "informer/differs" in report, report
