"""``refimpl serve``: the in-memory API server over HTTP on 127.0.0.1, until a signal
or the end of its scenario.

Prints the server's URL on the first line and the kubeconfig's path on the second, then
serves until SIGINT or SIGTERM, or (``--scenario``) until the scenario has run and the
wire has been quiet for ``--quiet-period``; shuts down cleanly (every watch ended, every
thread joined) and writes the server's final state (``--state``). ``register`` adds the
subcommand to the top-level parser (``refimpl.cli``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import ssl
import sys
import tempfile
import threading
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import IO, Any

from refimpl.apiserver import WATCH_LIST_SUPPORT, ApiServer
from refimpl.usage import (
    EXIT_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    UsageError,
    check_at_least,
)
from refimpl.wire.handlers import PumpSettings
from refimpl.wire.scenario import (
    ScenarioError,
    ScenarioOutcome,
    ScenarioRunner,
    Step,
    parse_scenario,
)
from refimpl.wire.server import WireServer
from refimpl.wire.tls import TlsUnavailable, make_certificates, server_context

__all__ = ["kubeconfig", "register", "write_kubeconfig"]

#: The names in the kubeconfig (cluster, user and context alike).
CONTEXT = "refimpl"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve the in-memory API server (ConfigMaps) over HTTP for real clients",
        description=(
            "Serve refimpl's in-memory API server on 127.0.0.1 as the Kubernetes API for "
            "ConfigMaps in core/v1 (list, watch, get, create, update, delete; discovery), "
            "with a random bearer token, over HTTP or (--tls) HTTPS. Prints the URL on "
            "the first line and the kubeconfig's path on the second; runs until SIGINT or "
            "SIGTERM. See docs/wire.md."
        ),
    )
    parser.add_argument(
        "--port", type=int, default=0, help="the port to listen on (default: 0, a free one)"
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="write the kubeconfig here (default: in a temporary directory, removed at exit)",
    )
    parser.add_argument(
        "--log",
        metavar="PATH",
        help="append one JSON line per request (method, path, query, status) (default: none)",
    )
    parser.add_argument(
        "--compaction-window",
        type=int,
        metavar="N",
        help="keep only the last N writes; older resourceVersions get 410 (default: all)",
    )
    parser.add_argument(
        "--watch-list",
        choices=WATCH_LIST_SUPPORT,
        default="watch-cache",
        help="how sendInitialEvents=true is answered (default: watch-cache)",
    )
    parser.add_argument(
        "--bookmark-interval",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="send a BOOKMARK this often on a watch that allows them; 0: never (default: 60)",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help=(
            "serve HTTPS with a CA made for this run (needs the openssl command); the "
            "kubeconfig carries the CA. client-go sends the token only over TLS"
        ),
    )
    parser.add_argument(
        "--scenario",
        metavar="FILE",
        help=(
            "run the writes and faults of this JSON-lines file, then stop once the wire "
            "has been quiet for --quiet-period (docs/wire.md; default: none, serve until "
            "SIGINT or SIGTERM)"
        ),
    )
    parser.add_argument(
        "--quiet-period",
        type=float,
        metavar="SECONDS",
        help="after the scenario's last step, stop once no request or event came this long "
        "(default: 1)",
    )
    parser.add_argument(
        "--state",
        metavar="PATH",
        help=(
            "at the end, write the server's objects as a ConfigMapList to PATH ('-': "
            "stdout, the default with --scenario; without it, none)"
        ),
    )
    parser.set_defaults(func=_serve)


def kubeconfig(url: str, token: str, ca: bytes | None = None) -> dict[str, Any]:
    """A kubeconfig for ``url`` with ``token`` and, for HTTPS, the CA certificate ``ca``
    (PEM). JSON is YAML, so every kubeconfig loader reads it."""
    cluster: dict[str, str] = {"server": url}
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: Path, url: str, token: str, ca: bytes | None = None) -> None:
    """Write the kubeconfig readable by its owner only (it holds the token)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(kubeconfig(url, token, ca), out, indent=2)
        out.write("\n")


def _check(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    check_at_least("--compaction-window", args.compaction_window, 0)
    check_at_least("--bookmark-interval", args.bookmark_interval, 0)
    check_at_least("--quiet-period", args.quiet_period, 0)
    if args.quiet_period is not None and args.scenario is None:
        raise UsageError("--quiet-period applies only with --scenario")


def _scenario(path: str | None) -> list[Step] | None:
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"--scenario: cannot read {path}: {err}") from None
    try:
        return parse_scenario(text, path)
    except ScenarioError as err:
        raise UsageError(f"--scenario: {err}") from None


def _open_log(stack: ExitStack, path: str | None) -> IO[str] | None:
    if path is None:
        return None
    try:
        return stack.enter_context(open(path, "a", encoding="utf-8"))
    except OSError as err:
        raise UsageError(f"--log: cannot write {path}: {err.strerror}") from None


def _temporary_folder(stack: ExitStack) -> Path:
    folder = tempfile.mkdtemp(prefix="refimpl-serve-")
    stack.callback(shutil.rmtree, folder, ignore_errors=True)
    return Path(folder)


def _tls(stack: ExitStack, wanted: bool) -> tuple[ssl.SSLContext | None, bytes | None]:
    """The server's TLS context and the CA certificate, or ``(None, None)``."""
    if not wanted:
        return None, None
    try:
        certificates = make_certificates(_temporary_folder(stack))
    except TlsUnavailable as err:
        raise UsageError(f"--tls: {err}") from None
    return server_context(certificates), certificates.ca.read_bytes()


def _serve(args: argparse.Namespace) -> int:
    _check(args)
    steps = _scenario(args.scenario)
    state = args.state if args.state is not None else ("-" if steps is not None else None)
    with ExitStack() as stack:
        log = _open_log(stack, args.log)
        state_out = _open_state(stack, state)
        api: ApiServer[Any] = ApiServer(
            compaction_window=args.compaction_window, watch_list=args.watch_list
        )
        settings = PumpSettings(bookmark_interval=args.bookmark_interval)
        tls, ca = _tls(stack, args.tls)
        try:
            server = WireServer(api, port=args.port, log=log, pump_settings=settings, tls=tls)
        except OSError as err:
            raise UsageError(f"--port: cannot listen on {args.port}: {err.strerror}") from None
        given = args.kubeconfig
        path = Path(given) if given else _temporary_folder(stack) / "kubeconfig"
        try:
            write_kubeconfig(path, server.url, server.token, ca)
        except OSError as err:
            server.stop()
            raise UsageError(f"--kubeconfig: cannot write {path}: {err.strerror}") from None
        stop, received = threading.Event(), list[str]()
        _on_signals(stack, stop, received)
        stack.callback(server.stop)
        server.start()
        print(server.url)
        print(path, flush=True)
        quiet = 1.0 if args.quiet_period is None else args.quiet_period
        outcome = _run(server, steps, stop, quiet)
        server.stop()
        if state_out is not None:
            _write_state(server, state_out)
        if received:
            print(f"stopped on {received[0]}", file=sys.stderr)
        if outcome is not None:
            where = f"line {outcome.line}: " if outcome.line else ""
            print(f"scenario {outcome.how}: {where}{outcome.message}", file=sys.stderr)
            return _EXIT.get(outcome.how, EXIT_OK)
    return EXIT_OK


#: The exit status of a scenario's outcome (finished or stopped: 0).
_EXIT = {"failed": EXIT_FAILED, "timed-out": EXIT_INCONCLUSIVE}


def _run(
    server: WireServer, steps: list[Step] | None, stop: threading.Event, quiet: float
) -> ScenarioOutcome | None:
    """Serve until ``stop`` is set (a signal), running the scenario meanwhile if there
    is one (its end sets ``stop``)."""
    outcome: list[ScenarioOutcome] = []
    thread = None
    if steps is not None:
        runner = ScenarioRunner(server, steps, quiet_period=quiet)

        def run() -> None:
            outcome.append(runner.run(stop))
            stop.set()

        thread = threading.Thread(target=run, name="refimpl-wire-scenario")
        thread.start()
    while not stop.wait(0.5):  # a timed wait lets the main thread run signal handlers
        pass
    if thread is not None:
        thread.join()
    return outcome[0] if outcome else None


def _open_state(stack: ExitStack, path: str | None) -> IO[str] | None:
    """Where the final state goes, opened now so that a bad path is a usage error."""
    if path is None:
        return None
    if path == "-":
        return sys.stdout
    try:
        return stack.enter_context(open(path, "w", encoding="utf-8"))
    except OSError as err:
        raise UsageError(f"--state: cannot write {path}: {err.strerror}") from None


def _write_state(server: WireServer, out: IO[str]) -> None:
    """The server's objects at its newest resourceVersion, as ``GET
    /api/v1/configmaps`` answers them (a ConfigMapList), on one line."""
    result = server.api.list()
    document = server.codec.list_json(result, result.items)
    out.write(json.dumps(document, separators=(",", ":")) + "\n")
    out.flush()


def _on_signals(stack: ExitStack, stop: threading.Event, received: list[str]) -> None:
    """SIGINT and SIGTERM set ``stop`` and note their name in ``received`` (the handlers
    before are restored on exit)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        received.append(signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        previous = signal.signal(signum, handler)
        stack.callback(signal.signal, signum, previous)
