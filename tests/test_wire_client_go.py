"""client-go's own informer against :class:`refimpl.wire.WireServer` (issue #29 item 1).

``adapters/client-go/wireprobe`` is a small Go program: a dynamic SharedInformer for
ConfigMaps built from the kubeconfig (client-go's REST client, reflector, watch-list and
watch decoder), then a create, an update and a delete through client-go's dynamic
client. Skipped unless its binary was built (docs/wire.md says how; it needs Go and
client-go's modules).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from refimpl.meta import Object
from refimpl.wire import WireServer
from refimpl.wire.cli import write_kubeconfig

PROBE = Path(__file__).resolve().parent.parent / "adapters/client-go/wireprobe/bin/wireprobe"


@pytest.mark.skipif(not PROBE.exists(), reason=f"{PROBE} not built (see docs/wire.md)")
def test_a_client_go_informer_syncs_and_sees_writes_over_the_wire(tmp_path: Path) -> None:
    with WireServer() as wire:
        wire.api.create(Object("x", "probe", data={"k": "v"}))
        wire.api.create(Object("y", "other"))
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, wire.url, wire.token)
        done = subprocess.run(
            [str(PROBE), str(kubeconfig)], capture_output=True, text=True, timeout=60
        )
        served = wire.api.request_log()
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
