"""``refimpl serve --scenario`` (``refimpl/wire/scenario.py``): a malformed file is a
usage error naming its line; the runner waits for the client (a watch open, requests
answered) and for its clock (a :class:`FakeClock` here, so no test sleeps to let time
pass), and reports how it ended; the command writes the server's final state. Each
in-process test checks that no thread outlives it.
"""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from refimpl.clock import FakeClock
from refimpl.wire import WireServer
from refimpl.wire.handlers import PumpSettings
from refimpl.wire.scenario import (
    ScenarioError,
    ScenarioOutcome,
    ScenarioRunner,
    parse_scenario,
)

CMS = "/api/v1/configmaps"
CREATE_A = '{"op": "create", "namespace": "ns", "name": "a", "data": {"k": "1"}}'


def _eventually(holds: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + 5
    while not holds() and time.monotonic() < deadline:
        time.sleep(0.01)
    return holds()


@pytest.fixture
def no_leak() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    assert _eventually(lambda: set(threading.enumerate()) <= before)


# -- the file -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (f"{CREATE_A}\n{{bad", "s.jsonl:2: not JSON"),
        (f"# writes\n\n{CREATE_A}\n" + '{"op": "craete"}', "s.jsonl:4: op must be one of"),
        ('{"op": "delete", "namespace": "ns"}', "s.jsonl:1: delete needs name"),
        ('{"op": "create", "namespace": "ns", "name": "a", "data": {"k": 1}}', ":1: data must"),
        ('{"op": "delete", "namespace": "n", "name": "a", "uid": "u"}', ":1: delete takes no uid"),
        ('{"op": "watch_cut", "seconds": 1}', "s.jsonl:1: watch_cut takes no seconds"),
        (f'{CREATE_A[:-1]}, "after": -1}}', "s.jsonl:1: after must be a finite number >= 0"),
        (f'{CREATE_A[:-1]}, "wait": {{"lists": 0}}}}', ":1: wait.lists must be an integer >= 1"),
        (f'{CREATE_A[:-1]}, "wait": {{"soon": 1}}}}', ":1: wait: unknown condition 'soon'"),
        (f'{CREATE_A[:-1]}, "wait": {{"watching": {{"rv": "1"}}}}}}', ":1: wait.watching takes"),
        (f'{CREATE_A[:-1]}, "wait": {{"watching": {{"path": "x"}}}}}}', ":1: wait.watching: path"),
        ("[1, 2]", "s.jsonl:1: a step is a JSON object"),
    ],
)
def test_a_malformed_scenario_names_its_line(text: str, says: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.jsonl")
    assert says in str(caught.value)


def test_a_scenario_reads_writes_faults_and_when_they_run() -> None:
    steps = parse_scenario(
        f"# comment\n{CREATE_A}\n"
        '{"op": "update", "namespace": "ns", "name": "a", "labels": {"x": "y"}, '
        '"wait": {"watching": {"path": "/api/v1/configmaps"}}, "after": 2, "timeout": 9}\n'
        '{"op": "watch_cut", "target": "open", "mid_line": true, "wait": {"watches": 2}}\n',
        "s",
    )
    assert [(s.line, s.op, s.after, s.timeout) for s in steps] == [
        (2, "create", 0.0, 60.0),
        (3, "update", 2.0, 9.0),
        (4, "watch_cut", 0.0, 60.0),
    ]
    assert steps[1].wait is not None and steps[1].wait.path == CMS and steps[1].data is None
    assert steps[2].fault is not None and steps[2].fault.mid_line
    assert steps[2].wait is not None and steps[2].wait.watches == 2


def test_the_scenario_shown_in_docs_wire_md_is_well_formed() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "wire.md").read_text()
    block = docs.split("```jsonl\n", 1)[1].split("```", 1)[0]
    steps = parse_scenario(block, "docs/wire.md")
    assert [s.op for s in steps] == [
        "create",
        "create",
        "update",
        "list_error",
        "watch_cut",
        "delete",
        "create",
    ]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--scenario", "MISSING"], "--scenario: cannot read"),
        (["--scenario", "BAD"], "BAD:2: not JSON"),
        (["--quiet-period", "2"], "--quiet-period applies only with --scenario"),
        (["--scenario", "GOOD", "--quiet-period", "-1"], "--quiet-period"),
        (["--scenario", "GOOD", "--quiet-period", "nan"], "--quiet-period must be >= 0, not nan"),
        (["--scenario", "GOOD", "--state", "/dev/null/x"], "--state: cannot write"),
    ],
)
def test_serve_refuses_a_bad_scenario_with_exit_3(
    tmp_path: Path, args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from refimpl.cli import main

    (tmp_path / "BAD").write_text(f"{CREATE_A}\n{{\n")
    (tmp_path / "GOOD").write_text(f"{CREATE_A}\n")
    args = [str(tmp_path / a) if a in ("MISSING", "BAD", "GOOD") else a for a in args]
    assert main(["serve", *args]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: refimpl serve") and says in err


# -- the runner -----------------------------------------------------------------------


class Run:
    """A runner on a fake clock in a thread, against a server of its own."""

    def __init__(self, text: str, quiet_period: float = 1.0) -> None:
        self.clock = FakeClock()
        self.wire = WireServer(pump_settings=PumpSettings(poll=0.02), timer=self.clock).start()
        self.runner = runner = ScenarioRunner(
            self.wire,
            parse_scenario(text),
            clock=self.clock,
            quiet_period=quiet_period,
            poll=0.01,
        )
        self.stop = threading.Event()
        self.outcome: list[ScenarioOutcome] = []
        self.thread = threading.Thread(target=lambda: self.outcome.append(runner.run(self.stop)))
        self.thread.start()

    def end(self) -> ScenarioOutcome:
        self.thread.join(10)
        self.wire.stop()
        assert not self.thread.is_alive()
        return self.outcome[0]

    def watch(self, path: str) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", self.wire.port, timeout=10)
        conn.request("GET", path, headers={"Authorization": f"Bearer {self.wire.token}"})
        return conn.getresponse()


def _event(resp: http.client.HTTPResponse) -> tuple[str, str, dict[str, str]]:
    event = json.loads(resp.readline())
    meta = event["object"]["metadata"]
    return event["type"], meta.get("name", ""), event["object"].get("data", {})


def test_a_step_waits_for_a_watch_then_for_its_clock(no_leak: None) -> None:
    run = Run(
        f"{CREATE_A}\n"
        '{"op": "update", "namespace": "ns", "name": "a", "data": {"k": "2"}, '
        '"wait": {"watching": {}}, "after": 5}\n'
        '{"op": "watch_end", "target": "open"}\n'
    )
    assert _eventually(lambda: run.wire.api.objects() != {})
    rv = run.wire.api.resource_version
    run.clock.step(100)  # no watch yet: the update waits whatever the clock says
    assert run.wire.api.resource_version == rv
    assert run.runner.at == (2, "wait")
    resp = run.watch(f"{CMS}?watch=true&resourceVersion={rv}")
    assert _eventually(lambda: run.runner.at == (2, "after"))
    run.clock.step(4.9)
    time.sleep(0.05)
    assert run.wire.api.resource_version == rv  # 5 s after the watch opened, not before
    run.clock.step(0.1)
    assert _event(resp) == ("MODIFIED", "a", {"k": "2"})
    assert resp.readline() == b""  # the step after it ended the open watch
    resp.close()
    assert _eventually(lambda: run.runner.at == (0, "quiet"))
    assert run.thread.is_alive()  # the quiet period runs on the fake clock
    run.clock.step(1)
    outcome = run.end()
    assert outcome == ScenarioOutcome("finished", 0, "3 steps run, then quiet")


def test_a_step_can_wait_for_a_number_of_lists(no_leak: None) -> None:
    run = Run(f'{CREATE_A[:-1]}, "wait": {{"lists": 2}}}}\n', quiet_period=0)
    for lists in (1, 2):
        conn = http.client.HTTPConnection("127.0.0.1", run.wire.port, timeout=10)
        conn.request("GET", CMS, headers={"Authorization": f"Bearer {run.wire.token}"})
        assert json.loads(conn.getresponse().read())["items"] == []
        conn.close()
        assert run.wire.faults.lists == lists
    assert run.end().how == "finished"
    assert list(run.wire.api.objects()) == ["ns/a"]


def test_a_wait_that_never_holds_times_out_on_the_clock(no_leak: None) -> None:
    run = Run('# c\n{"op": "compact", "wait": {"watching": {}}, "timeout": 10}\n')
    assert _eventually(lambda: run.runner.at == (2, "wait"))
    run.clock.step(9.9)
    assert run.thread.is_alive()
    run.clock.step(0.1)
    outcome = run.end()
    assert (outcome.how, outcome.line) == ("timed-out", 2)
    assert outcome.message == "waited 10 s for a watch to be open; it never held"


def test_a_refused_write_fails_the_scenario_at_its_line(no_leak: None) -> None:
    run = Run(f'{CREATE_A}\n{{"op": "delete", "namespace": "ns", "name": "b"}}\n{CREATE_A}\n')
    outcome = run.end()
    assert (outcome.how, outcome.line) == ("failed", 2)
    assert outcome.message.startswith("delete ns/b: NotFound")
    assert list(run.wire.api.objects()) == ["ns/a"]


def test_stopping_a_waiting_scenario_says_so(no_leak: None) -> None:
    run = Run('{"op": "compact", "wait": {"watches": 1}}\n')
    run.stop.set()
    assert run.end() == ScenarioOutcome("stopped", 1, "stopped while waiting")


# -- the command ----------------------------------------------------------------------


def _serve(tmp_path: Path, scenario: str, *extra: str) -> tuple[subprocess.Popen[str], str, str]:
    (tmp_path / "s.jsonl").write_text(scenario)
    cmd = [sys.executable, "-m", "refimpl.cli", "serve", "--scenario", str(tmp_path / "s.jsonl")]
    proc = subprocess.Popen(
        [*cmd, "--log", str(tmp_path / "log"), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url, kubeconfig = proc.stdout.readline().strip(), proc.stdout.readline().strip()
    token = json.loads(Path(kubeconfig).read_text())["users"][0]["user"]["token"]
    return proc, url, token


def _get(url: str, token: str, path: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=10)
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    return conn.getresponse()


def _apply(cache: dict[str, Any], event: dict[str, Any]) -> None:
    """A watch event into a cache of list items (which carry no kind or apiVersion)."""
    item = {k: v for k, v in event["object"].items() if k not in ("kind", "apiVersion")}
    key = f"{item['metadata']['namespace']}/{item['metadata']['name']}"
    if event["type"] == "DELETED":
        cache.pop(key)
    else:
        cache[key] = item


SCENARIO = "\n".join(
    [
        CREATE_A,
        '{"op": "create", "namespace": "ns", "name": "b", "wait": {"watching": {}}}',
        '{"op": "update", "namespace": "ns", "name": "a", "data": {"k": "2"}}',
        '{"op": "delete", "namespace": "ns", "name": "b"}',
        '{"op": "watch_end", "target": "open"}',
    ]
)


def test_serve_runs_a_scenario_then_prints_the_final_state(tmp_path: Path) -> None:
    proc, url, token = _serve(tmp_path, SCENARIO, "--quiet-period", "0.3")
    try:
        listed = json.loads(_get(url, token, CMS).read())
        cache = {f"ns/{i['metadata']['name']}": i for i in listed["items"]}
        rv = listed["metadata"]["resourceVersion"]
        stream = _get(url, token, f"{CMS}?watch=true&resourceVersion={rv}")
        while line := stream.readline():  # until the scenario's watch_end
            _apply(cache, json.loads(line))
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "scenario finished: 5 steps run, then quiet" in err
    state = json.loads(out)
    assert state["kind"] == "ConfigMapList"
    final = {f"{i['metadata']['namespace']}/{i['metadata']['name']}": i for i in state["items"]}
    assert final == cache and final["ns/a"]["data"] == {"k": "2"}
    log = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    assert [e["step"] for e in log if "step" in e] == [1, 2, 3, 4, 5]


def test_sigterm_mid_scenario_still_writes_the_state(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    scenario = f'{CREATE_A}\n{{"op": "compact", "wait": {{"watches": 5}}}}\n'
    proc, _, _ = _serve(tmp_path, scenario, "--state", str(state))
    try:
        assert _eventually(lambda: "step" in (tmp_path / "log").read_text())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert (proc.returncode, out) == (0, "")
    assert "stopped on SIGTERM" in err and "scenario stopped: line 2" in err
    assert [i["metadata"]["name"] for i in json.loads(state.read_text())["items"]] == ["a"]


def test_a_scenario_that_fails_exits_1_and_one_that_times_out_exits_4(tmp_path: Path) -> None:
    failing = '{"op": "delete", "namespace": "ns", "name": "nope"}\n'
    proc, _, _ = _serve(tmp_path, failing)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 1 and "scenario failed: line 1: delete ns/nope: NotFound" in err
    waiting = '{"op": "compact", "wait": {"watching": {}}, "timeout": 0.2}\n'
    proc, _, _ = _serve(tmp_path, waiting)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 4 and "scenario timed-out: line 1" in err
    assert json.loads(out)["items"] == []
