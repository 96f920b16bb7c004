"""A certificate authority and a server certificate for one run of ``refimpl serve``.

Some clients send credentials only over TLS (client-go's ``tools/clientcmd``
``ClientConfig`` reads a user's token only for a TLS server; docs/wire.md). Python's
standard library serves TLS but cannot make certificates, so this module runs the
``openssl`` command: a CA valid for two days, and a certificate for 127.0.0.1 (an IP
subjectAltName, which Go's verifier requires) signed by it. No new Python dependency.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import attrs

__all__ = ["Certificates", "TlsUnavailable", "make_certificates", "server_context"]

_CURVE = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


class TlsUnavailable(RuntimeError):
    """The ``openssl`` command is missing or failed."""


@attrs.frozen
class Certificates:
    """Paths of the run's CA certificate and the server's key and certificate (PEM)."""

    ca: Path
    key: Path
    certificate: Path


def _openssl(*args: str) -> None:
    try:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)
    except subprocess.CalledProcessError as err:
        raise TlsUnavailable(f"openssl {args[0]} failed: {err.stderr.decode().strip()}") from None
    except OSError as err:
        raise TlsUnavailable(f"cannot run openssl: {err}") from None


def make_certificates(folder: Path, host: str = "127.0.0.1") -> Certificates:
    """Make a fresh CA and a certificate for ``host`` (an IP address) in ``folder``."""
    if shutil.which("openssl") is None:
        raise TlsUnavailable("the openssl command is not on PATH")
    ca_key, ca = folder / "ca.key", folder / "ca.crt"
    key, csr, crt = folder / "server.key", folder / "server.csr", folder / "server.crt"
    extensions = folder / "server.ext"
    _openssl(
        "req", "-x509", *_CURVE, "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=refimpl serve CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    _openssl("req", "-new", *_CURVE, "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={host}")
    extensions.write_text(
        f"subjectAltName=IP:{host}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
    )
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-out", str(crt), "-days", "2", "-extfile", str(extensions),
    )  # fmt: skip
    ca_key.unlink()  # nothing is signed after this
    return Certificates(ca, key, crt)


def server_context(certificates: Certificates) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certificates.certificate, certificates.key)
    return context
