"""kubernetes-python (the official Python client) against :class:`refimpl.wire.WireServer`.

Its kubeconfig loader, REST client and ``watch.Watch`` stream decoder list ConfigMaps and
watch a create, an update and a delete, over ``http://`` and over ``https://`` with the
run's CA; then meet each wire fault (docs/protocol.md, "Wire faults"). Skipped unless
the kubernetes-python adapter's virtualenv was built
(``make -C adapters/kubernetes-python build``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from refimpl.meta import Object
from refimpl.wire import WireServer
from refimpl.wire.cli import write_kubeconfig
from refimpl.wire.tls import make_certificates, server_context

PYTHON = Path(__file__).resolve().parent.parent / "adapters/kubernetes-python/.venv/bin/python"

#: Lists, then watches from the list's resourceVersion while a thread writes; prints one
#: line per event and stops at the DELETED one.
PROBE = """
import sys, threading
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
listed = v1.list_config_map_for_all_namespaces()
print("listed", *[i.metadata.name for i in listed.items])
w = watch.Watch()

def writes():
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="p"), data={"k": "1"})
    v1.create_namespaced_config_map("probe", body)
    body.data = {"k": "2"}
    v1.replace_namespaced_config_map("p", "probe", body)
    v1.delete_namespaced_config_map("p", "probe")

threading.Thread(target=writes).start()
rv = listed.metadata.resource_version
for ev in w.stream(v1.list_config_map_for_all_namespaces, resource_version=rv, timeout_seconds=20):
    print(ev["type"], ev["object"].metadata.name, ev["object"].data["k"])
    if ev["type"] == "DELETED":
        w.stop()
"""


@pytest.mark.skipif(not PYTHON.exists(), reason=f"{PYTHON} not built")
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_kubernetes_python_lists_and_watches_over_the_wire(tmp_path: Path, scheme: str) -> None:
    if scheme == "https" and shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    certificates = make_certificates(tmp_path) if scheme == "https" else None
    tls = server_context(certificates) if certificates else None
    with WireServer(tls=tls) as wire:
        wire.api.create(Object("x", "probe", data={"k": "v"}))
        kubeconfig = tmp_path / "kubeconfig"
        ca = certificates.ca.read_bytes() if certificates else None
        write_kubeconfig(kubeconfig, wire.url, wire.token, ca)
        done = subprocess.run(
            [str(PYTHON), "-c", PROBE, str(kubeconfig)], capture_output=True, text=True, timeout=60
        )
    assert wire.connection_threads() == []
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["listed x", "ADDED p 1", "MODIFIED p 2", "DELETED p 2"]


#: Runs one request per line of stdin (the test injects the fault first) and prints what
#: the client made of it, then "done".
FAULT_PROBE = """
import sys
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
every = v1.list_config_map_for_all_namespaces

def show(**options):
    try:
        for ev in watch.Watch().stream(every, timeout_seconds=5, **options):
            print(ev["type"], ev["raw_object"]["metadata"].get("name", ""))
        print("end")
    except client.rest.ApiException as err:
        print("ApiException", err.status)
    except Exception as err:
        print(type(err).__name__)

for step in sys.stdin:
    step = step.strip()
    if step == "list":
        try:
            print("listed", len(every().items))
        except client.rest.ApiException as err:
            print("ApiException", err.status, err.headers.get("Retry-After"))
    elif step == "watch":
        show(resource_version="1")
    elif step == "watch-list":
        show(send_initial_events=True, resource_version_match="NotOlderThan",
             allow_watch_bookmarks=True)
    print("done", flush=True)
"""

#: Each fault, the request that meets it, and what kubernetes-python 37.0.2 makes of it
#: (its ``watch.Watch.stream`` with ``timeout_seconds``, which turns off its own re-watch).
FAULTS: list[tuple[dict[str, object], str, list[str]]] = [
    ({"op": "list_error", "code": 429, "retry_after": 1}, "list", ["listed 2"]),
    ({"op": "list_error", "code": 500}, "list", ["ApiException 500 None"]),
    ({"op": "watch_error", "code": 410}, "watch", ["ApiException 410"]),
    (
        {"op": "watch_error", "code": 410, "as": "event", "after_events": 1},
        "watch",
        ["ADDED x", "ApiException 410"],
    ),
    ({"op": "watch_end", "after_events": 1}, "watch", ["ADDED x", "end"]),
    ({"op": "watch_cut", "after_events": 1}, "watch", ["ADDED x", "ProtocolError"]),
    (
        {"op": "watch_cut", "after_events": 1, "mid_line": True},
        "watch",
        ["ADDED x", "ProtocolError"],
    ),
    # the half line is dropped without a word: the stream just ends
    ({"op": "watch_partial_line", "after_events": 1}, "watch", ["ADDED x", "end"]),
    ({"op": "watch_list_cut"}, "watch-list", ["ADDED x", "ADDED y", "ProtocolError"]),
]


@pytest.mark.skipif(not PYTHON.exists(), reason=f"{PYTHON} not built")
def test_kubernetes_python_meets_each_wire_fault(tmp_path: Path) -> None:
    with WireServer() as wire:
        wire.api.create(Object("x", "probe", data={"k": "v"}))
        wire.api.create(Object("y", "probe", data={"k": "v"}))
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, wire.url, wire.token)
        probe = subprocess.Popen(
            [str(PYTHON), "-c", FAULT_PROBE, str(kubeconfig)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert probe.stdin is not None and probe.stdout is not None
        seen = []
        try:
            for fault, request, _ in FAULTS:
                wire.inject(fault)
                probe.stdin.write(request + "\n")
                probe.stdin.flush()
                lines = list(iter(probe.stdout.readline, "done\n"))
                seen.append([line.strip() for line in lines])
                assert wire.faults.waiting() == [], fault
        finally:
            probe.stdin.close()
            probe.wait(30)
    assert wire.connection_threads() == []
    assert seen == [expected for _, _, expected in FAULTS]
    assert wire.faults.lists == 3  # urllib3 retried the 429 after its Retry-After, alone
