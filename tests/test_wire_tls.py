"""``refimpl serve --tls``: HTTPS with a CA made for the run (refimpl/wire/tls.py).

Skipped without the ``openssl`` command, which makes the certificates.
"""

from __future__ import annotations

import base64
import http.client
import json
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from refimpl.wire import WireServer
from refimpl.wire.cli import kubeconfig
from refimpl.wire.handlers import PumpSettings
from refimpl.wire.tls import make_certificates, server_context

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")


def _get(wire: WireServer, ca: Path, path: str) -> tuple[int, dict[str, object]]:
    context = ssl.create_default_context(cafile=str(ca))
    conn = http.client.HTTPSConnection("127.0.0.1", wire.port, timeout=10, context=context)
    conn.request("GET", path, headers={"Authorization": f"Bearer {wire.token}"})
    resp = conn.getresponse()
    answer = json.loads(resp.read())
    conn.close()
    return resp.status, answer


def test_https_with_the_runs_ca_serves_and_plain_clients_do_not_break_it(tmp_path: Path) -> None:
    certificates = make_certificates(tmp_path)
    assert not (tmp_path / "ca.key").exists()  # nothing can be signed after the run starts
    with WireServer(tls=server_context(certificates), pump_settings=PumpSettings(0.02)) as wire:
        assert wire.url.startswith("https://127.0.0.1:")
        with socket.create_connection(("127.0.0.1", wire.port), timeout=10) as plain:
            plain.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n")  # not a TLS client
            assert not plain.recv(100).startswith(b"HTTP/")
        with pytest.raises(ssl.SSLCertVerificationError):  # another CA: not trusted
            _get(wire, make_certificates(_fresh(tmp_path)).ca, "/api")
        status, answer = _get(wire, certificates.ca, "/api/v1/configmaps")
        assert (status, answer["kind"]) == (200, "ConfigMapList")
    assert wire.connection_threads() == []
    assert not [t for t in threading.enumerate() if t.name.startswith("refimpl-wire")]


def _fresh(tmp_path: Path) -> Path:
    other = tmp_path / "other"
    other.mkdir()
    return other


def test_the_kubeconfig_carries_the_ca(tmp_path: Path) -> None:
    ca = make_certificates(tmp_path).ca.read_bytes()
    (cluster,) = kubeconfig("https://127.0.0.1:1", "t", ca)["clusters"]
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == ca
    (plain,) = kubeconfig("http://127.0.0.1:1", "t")["clusters"]
    assert "certificate-authority-data" not in plain["cluster"]


def test_refimpl_serve_tls_writes_a_kubeconfig_a_client_can_verify_with(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    cmd = [sys.executable, "-m", "refimpl.cli", "serve", "--tls", "--kubeconfig", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("https://127.0.0.1:") and proc.stdout.readline().strip() == str(path)
        config = json.loads(path.read_text())
        ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
        context = ssl.create_default_context(cadata=ca.decode())
        token = config["users"][0]["user"]["token"]
        port = int(url.rsplit(":", 1)[1])
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)
        conn.request("GET", "/api/v1", headers={"Authorization": f"Bearer {token}"})
        assert json.loads(conn.getresponse().read())["kind"] == "APIResourceList"
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_serve_tls_without_openssl_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from refimpl.cli import main

    monkeypatch.setenv("PATH", "")
    assert main(["serve", "--tls"]) == 3
    assert "--tls: the openssl command is not on PATH" in capsys.readouterr().err
