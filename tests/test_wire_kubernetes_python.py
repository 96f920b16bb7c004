"""kubernetes-python (the official Python client) against :class:`refimpl.wire.WireServer`.

Its kubeconfig loader, REST client and ``watch.Watch`` stream decoder list ConfigMaps and
watch a create, an update and a delete, over ``http://`` and over ``https://`` with the
run's CA. Skipped unless the kubernetes-python adapter's virtualenv was built
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
