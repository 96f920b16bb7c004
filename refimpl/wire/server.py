"""The loopback HTTP server that puts an :class:`~refimpl.apiserver.ApiServer` on the wire.

Standard library only (``http.server``): one thread per connection, HTTP/1.1 keep-alive,
watches as chunked responses. Every request must carry the run's bearer token (a 401
Status otherwise); the server binds 127.0.0.1 only. :meth:`WireServer.stop` ends every
stream and connection and joins every thread it started, so a test can check that
nothing leaked. What a request means is ``refimpl/wire/handlers.py``'s business.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import select
import socket
import socketserver
import ssl
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any
from urllib.parse import parse_qsl, urlsplit

from refimpl.apierrors import BadRequest, InternalError
from refimpl.apiserver import ApiServer
from refimpl.clock import Clock, RealClock
from refimpl.wire.convert import ConfigMapCodec, failure_json, unauthorized_json
from refimpl.wire.faults import Fault, FaultBook, FaultError, parse_fault
from refimpl.wire.handlers import (
    DEFAULT_PUMP,
    PumpSettings,
    Reply,
    Request,
    WatchStream,
    answer,
    classify,
    error_reply,
)
from refimpl.wire.stream import Pump

__all__ = ["HOST", "WireServer"]

#: The only address served: loopback.
HOST = "127.0.0.1"
#: The largest request body read (a ConfigMap is at most 1 MiB in Kubernetes).
MAX_BODY = 3 * 1024 * 1024
#: How long a client has to complete the TLS handshake.
HANDSHAKE_TIMEOUT = 10.0
#: How long :meth:`WireServer.stop` waits for each connection thread to end.
JOIN_TIMEOUT = 5.0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    def _serve(self) -> None:
        wire = self.server.wire
        parts = urlsplit(self.path)
        self.faults: list[str] = []  # the ops of the faults this request met (the log's)
        if not wire.authorized(self.headers.get("Authorization", "")):
            self._reply(Reply(401, unauthorized_json()))
            return
        wire.faults.touch()
        request: Request | None = None
        try:
            body = self._body()
            request = Request(self.command, parts.path, dict(parse_qsl(parts.query)), body)
            result = self._faulted(request) or answer(wire.api, wire.codec, request)
        except BadRequest as err:
            result = error_reply(err)
        except Exception as err:  # the server answers; it never crashes on a request
            result = error_reply(InternalError(f"{type(err).__name__}: {err}"))
        if isinstance(result, Reply):
            self._reply(result)
        else:
            assert request is not None
            self._stream(result, request)

    def _faulted(self, request: Request) -> Reply | None:
        """The answer of an error fault waiting for this list or watch, if any."""
        kind = classify(request)
        if kind is None:
            return None
        verb, path = kind
        fault = self.server.wire.faults.take_error(
            verb, path, request.query.get("resourceVersion", "")
        )
        if fault is None:
            return None
        self.faults.append(fault.op)
        return error_reply(fault.error(), retry_after=fault.retry_after)

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                self.close_connection = True  # not read: do not reuse the connection
                raise BadRequest("chunked request bodies are not supported")
            return b""
        if not length.isdigit() or int(length) > MAX_BODY:
            self.close_connection = True
            raise BadRequest(f"bad Content-Length {length!r}")
        return self.rfile.read(int(length))

    def _reply(self, reply: Reply) -> None:
        data, content_type = reply.encoded()
        self.send_response(reply.status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _stream(self, stream: WatchStream, request: Request) -> None:
        self.close_connection = True  # one watch per connection, as the clients do
        wire = self.server.wire
        kind = classify(request)
        opened = wire.faults.open_stream(
            kind[1] if kind else request.path,
            request.query.get("resourceVersion", ""),
            watch_list=stream.watch_list,
        )
        self.faults.extend(a.fault.op for a in opened.armed)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        end = Pump(
            stream,
            wire.api,
            wire.codec,
            self._write,
            stopping=wire.stopping.is_set,
            client_gone=self._client_gone,
            book=wire.faults,
            opened=opened,
            settings=wire.pump_settings,
            clock=wire.timer,
            on_error=lambda code: wire.record({"error_event": code, "query": request.query}),
        ).run()
        if end == "cut":  # no last chunk: the client sees the connection end mid-body
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    def _write(self, data: bytes) -> None:
        self.wfile.write(data)
        self.server.wire.faults.touch()

    def _client_gone(self) -> bool:
        """The peer closed its side (a readable socket with nothing to read). Over TLS
        a readable watch connection counts as closed: a client sends nothing on it but
        its close_notify (an SSL socket cannot peek)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable and isinstance(self.connection, ssl.SSLSocket):
                return True
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (a malformed request line or header, an unknown
        method) as the API's Status, not an HTML page."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # an unparsed request line: answer as 1.0
            self.request_version = "HTTP/1.0"
        phrase = HTTPStatus(code).phrase if code in HTTPStatus._value2member_map_ else ""
        status = failure_json(code, phrase.replace(" ", ""), message or phrase)
        self._reply(Reply(code, status, {"Connection": "close"}))

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        parts = urlsplit(getattr(self, "path", ""))
        method = self.command or ""
        faults = getattr(self, "faults", [])
        self.server.wire.log_request(method, parts.path, parts.query, int(code), faults)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log (log_request) is the server's only output


class _HTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that keeps its connection threads and sockets, so that
    stopping can close every connection and join every thread."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, wire: WireServer, port: int, tls: ssl.SSLContext | None) -> None:
        self.wire = wire
        self.connections: dict[threading.Thread, socket.socket] = {}
        self.connections_lock = threading.Lock()
        super().__init__((HOST, port), _Handler)
        if tls is not None:  # the handshake runs in the connection's thread, not accept's
            self.socket = tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )

    def server_bind(self) -> None:
        # HTTPServer's own looks the host name up (socket.getfqdn), which can be slow.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = HOST, int(self.server_address[1])

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the client went away mid-answer: not the server's error
        super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._process, args=(request, client_address), name="refimpl-wire-conn"
        )
        thread.daemon = True
        with self.connections_lock:
            self.connections[thread] = request
        thread.start()

    def _process(self, request: Any, client_address: Any) -> None:
        try:
            if isinstance(request, ssl.SSLSocket):
                try:
                    request.settimeout(HANDSHAKE_TIMEOUT)
                    request.do_handshake()
                    request.settimeout(None)
                except OSError:  # ssl.SSLError included: not a TLS client, or it left
                    self.shutdown_request(request)
                    return
            self.process_request_thread(request, client_address)
        finally:
            with self.connections_lock:
                self.connections.pop(threading.current_thread(), None)


class WireServer:
    """An :class:`ApiServer` served over HTTP on 127.0.0.1.

    ``port`` 0 picks a free port (``url`` says which). ``token``: the bearer token every
    request must carry (default: a fresh random one). ``log``: a text stream that gets
    one JSON line per answered request (method, path, query, status).
    ``pump_settings``: how watch streams poll and send bookmarks. ``tls``: serve HTTPS
    with this context (``refimpl/wire/tls.py`` makes one). ``timer``: the clock that
    times delay faults (a test's :class:`~refimpl.clock.FakeClock`). Use as a context
    manager, or :meth:`start` and :meth:`stop`. :meth:`inject` adds a wire fault
    (docs/protocol.md, "Wire faults"). ``record``: keep :attr:`history`, the request
    log's entries and each ERROR event a watch stream sent (``{"error_event": code,
    "query": ...}``), in the order they happened (the wire harness's REF checks read it).
    """

    def __init__(
        self,
        api: ApiServer[Any] | None = None,
        *,
        port: int = 0,
        token: str | None = None,
        log: IO[str] | None = None,
        pump_settings: PumpSettings = DEFAULT_PUMP,
        clock: Callable[[], float] | None = None,
        tls: ssl.SSLContext | None = None,
        timer: Clock | None = None,
        record: bool = False,
    ) -> None:
        self.api: ApiServer[Any] = api if api is not None else ApiServer()
        self.faults = FaultBook()
        self.timer: Clock = timer if timer is not None else RealClock()
        self.token = token if token is not None else secrets.token_urlsafe(32)
        self.codec = ConfigMapCodec() if clock is None else ConfigMapCodec(clock)
        self.pump_settings = pump_settings
        self.stopping = threading.Event()
        self._log = log
        self._log_lock = threading.Lock()
        self._record = record
        self.history: list[dict[str, Any]] = []
        self._expected = f"Bearer {self.token}".encode()
        self._scheme = "http" if tls is None else "https"
        self._httpd = _HTTPServer(self, port, tls)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"{self._scheme}://{HOST}:{self.port}"

    def authorized(self, header: str) -> bool:
        return hmac.compare_digest(header.encode("latin-1", "replace"), self._expected)

    def log_request(
        self, method: str, path: str, query: str, status: int, faults: list[str] | None = None
    ) -> None:
        """One line of the request log; ``faults``: the ops of the faults it met."""
        entry: dict[str, Any] = {"method": method, "path": path, "query": query}
        entry["status"] = status
        if faults:
            entry["faults"] = faults
        self.record({**entry, "query": dict(parse_qsl(query))})
        self.log(entry)

    def record(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` to :attr:`history` (when recording)."""
        if self._record:
            with self._log_lock:
                self.history.append(entry)

    def log(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` to the request log as one JSON line (if there is a log)."""
        if self._log is None:
            return
        with self._log_lock:
            self._log.write(json.dumps(entry) + "\n")
            self._log.flush()

    def inject(self, fault: Fault | object) -> int:
        """Add a wire fault, given as a :class:`Fault` or as its JSON request (checked:
        :class:`FaultError` says what is wrong). A ``compact`` acts at once; a fault for
        the next requests waits for them; one for the open streams is armed on each,
        and fires after the events already written (``after_events`` counts from
        there). Returns how many open streams it was armed on."""
        checked = fault if isinstance(fault, Fault) else parse_fault(fault)
        if checked.op != "compact":
            return self.faults.add(checked, int(self.api.resource_version))
        with self.api.locked() as core:
            target = int(checked.rv) if checked.rv is not None else core.rv
            if target > core.rv:
                raise FaultError(f"compact: rv {target} is newer than the newest, {core.rv}")
            core.compact(target)
        return 0

    def start(self) -> WireServer:
        """Serve in a background thread; returns self."""
        if self._thread is not None:
            raise RuntimeError("the server was already started")
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="refimpl-wire"
        )
        self._thread.start()
        return self

    def connection_threads(self) -> list[threading.Thread]:
        """The threads serving a connection now (a finished test expects none)."""
        with self._httpd.connections_lock:
            return list(self._httpd.connections)

    def stop(self) -> None:
        """End every watch stream and connection, join every thread, free the port.
        Idempotent."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
        # Watch streams see ``stopping`` at their next poll and end their bodies cleanly;
        # give them that long before the sockets are shut (idle keep-alives never end).
        deadline = time.monotonic() + 2 * self.pump_settings.poll + 0.5
        while self.faults.open_streams() and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._httpd.connections_lock:
            open_connections = list(self._httpd.connections.items())
        for _, sock in open_connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked on keep-alive
        for thread, _ in open_connections:
            thread.join(JOIN_TIMEOUT)
        self._httpd.server_close()

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
