"""client-go's own informer against :class:`refimpl.wire.WireServer` (issue #29 item 1).

``adapters/client-go/wireprobe`` is a small Go program: a dynamic SharedInformer for
ConfigMaps built from the kubeconfig (client-go's REST client, reflector, watch-list and
watch decoder), then a create, an update and a delete through client-go's dynamic
client; plainly, and with its first watch-list cut (wire faults). Skipped unless its
binary was built (docs/wire.md says how; it needs Go and client-go's modules).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from refimpl.meta import Object
from refimpl.wire import WireServer
from refimpl.wire.cli import write_kubeconfig
from refimpl.wire.tls import make_certificates, server_context

PROBE = Path(__file__).resolve().parent.parent / "adapters/client-go/wireprobe/bin/wireprobe"


@pytest.mark.skipif(not PROBE.exists(), reason=f"{PROBE} not built (see docs/wire.md)")
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_client_go_informer_syncs_and_sees_writes_over_the_wire(
    tmp_path: Path, scheme: str
) -> None:
    # Over https the probe uses the kubeconfig as clientcmd reads it, token included;
    # over http it has to set the token itself (docs/wire.md, "Clients, HTTP and TLS").
    if scheme == "https" and shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    certificates = make_certificates(tmp_path) if scheme == "https" else None
    tls = server_context(certificates) if certificates else None
    with WireServer(tls=tls) as wire:
        assert wire.url.startswith(f"{scheme}://")
        wire.api.create(Object("x", "probe", data={"k": "v"}))
        wire.api.create(Object("y", "other"))
        kubeconfig = tmp_path / "kubeconfig"
        ca = certificates.ca.read_bytes() if certificates else None
        write_kubeconfig(kubeconfig, wire.url, wire.token, ca)
        done = subprocess.run(
            [str(PROBE), str(kubeconfig)], capture_output=True, text=True, timeout=60
        )
        served = wire.api.request_log()
    assert wire.connection_threads() == []  # the informer's watch ended with the server
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "synced 2"
    assert sorted(lines[1:3]) == ["add other/y 3", "add probe/x 2"]
    assert [line.rsplit(" ", 1)[0] for line in lines[3:]] == [
        "add probe/p",
        "update probe/p",
        "delete probe/p",
    ]
    assert served[0].verb == "watch" and served[0].send_initial_events  # watch-list


@pytest.mark.skipif(not PROBE.exists(), reason=f"{PROBE} not built (see docs/wire.md)")
@pytest.mark.parametrize(
    "fault",
    [
        {"op": "watch_list_cut"},
        {"op": "watch_cut", "after_events": 1},
        {"op": "watch_cut", "after_events": 1, "mid_line": True},
    ],
    ids=["before-end-bookmark", "between-events", "mid-line"],
)
def test_a_client_go_informer_opens_a_cut_watch_list_again(
    tmp_path: Path, fault: dict[str, object]
) -> None:
    log = io.StringIO()
    with WireServer(log=log) as wire:
        wire.api.create(Object("x", "probe", data={"k": "v"}))
        wire.api.create(Object("y", "other"))
        wire.inject(fault)
        wire.inject({"op": "list_error", "code": 500})  # met only if it fell back to a list
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, wire.url, wire.token)
        done = subprocess.run(
            [str(PROBE), str(kubeconfig)], capture_output=True, text=True, timeout=60
        )
        unused = [f.op for f in wire.faults.waiting()]
    assert wire.connection_threads() == []
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # the initial events before the cut never reached the handlers: two adds, not more
    assert lines[0] == "synced 2" and sorted(lines[1:3]) == ["add other/y 3", "add probe/x 2"]
    assert [line.split()[0] for line in lines[3:]] == ["add", "update", "delete"]
    requests = [json.loads(line) for line in log.getvalue().splitlines()][:2]
    watch_lists = ["sendInitialEvents=true" in r["query"] for r in requests]
    # client-go v0.37.2's reflector asks for a watch-list again, no list in between
    assert watch_lists == [True, True] and unused == ["list_error"]
    assert [r.get("faults") for r in requests] == [[fault["op"]], None]
