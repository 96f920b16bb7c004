"""The adapter as a child process, guarded against everything it might do wrong.

Owns the child, two reader threads (stdout lines, stderr tail) and the request counter.
Every wait is bounded: a request gets ``timeout`` seconds for its response line; a line
longer than :data:`~refimpl.conformance.protocol.MAX_LINE_BYTES` stops reading; EOF,
a crash, garbage, a wrong id or a malformed response each raise an
:class:`AdapterFailure` subclass that says what happened and shows the child's last
stderr. The child runs in its own process group so ``close`` can end it and anything it
started, by that group's id.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, TextIO

from refimpl.conformance.interrupt import check as check_interrupted
from refimpl.conformance.protocol import MAX_LINE_BYTES, check_response, encode

__all__ = [
    "AdapterCrashed",
    "AdapterFailure",
    "AdapterHung",
    "AdapterProcess",
    "ProtocolViolation",
]

STDERR_TAIL_BYTES = 8192


class AdapterFailure(Exception):
    """The adapter did not answer within the protocol (exit status 2)."""

    what = "adapter failure"

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.stderr_tail = stderr_tail

    def describe(self) -> str:
        text = f"{self.what}: {self.message}"
        if self.stderr_tail.strip():
            tail = self.stderr_tail.rstrip()[-2000:]
            text += "\n  adapter stderr (last lines):\n    " + "\n    ".join(tail.splitlines())
        return text


class AdapterCrashed(AdapterFailure):
    what = "adapter crashed"


class AdapterHung(AdapterFailure):
    what = "adapter hung"


class ProtocolViolation(AdapterFailure):
    what = "protocol violation"


class AdapterProcess:
    """One running adapter. ``request`` sends a message and returns its checked response;
    ``send`` and ``receive`` split it, so requests can be sent ahead of their answers
    (docs/protocol.md, "Requests sent ahead"): answers come back in request order."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 5.0,
        max_line: int = MAX_LINE_BYTES,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        log: TextIO | None = None,
    ) -> None:
        if not argv:
            raise ValueError("no adapter command given")
        self.argv = list(argv)
        self.timeout = timeout
        self.max_line = max_line
        self._env = env
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = bytearray()
        self._eof = False
        self._stdout_fd = -1
        self._stderr = bytearray()
        self._stderr_lock = threading.Lock()
        self._stderr_reader: threading.Thread | None = None
        self._next_id = 0
        #: Requests written or queued whose answers are not read yet: (id, op), oldest first.
        self._outstanding: deque[tuple[int, Any]] = deque()
        self._outbox = bytearray()
        #: How many of the oldest outstanding answers nobody will read (:meth:`abandon`).
        self._abandoned = 0
        #: Writing to the adapter failed: it closed its stdin (or died).
        self._stdin_closed = False
        #: A failure to read an abandoned answer, read early (:meth:`drop_answers`):
        #: the next :meth:`receive` raises it, as it would have met it.
        self._owed_failure: AdapterFailure | None = None
        self.requests_sent = 0
        #: If set, every line sent ("> ") and received ("< ") is written here.
        self.log = log

    # -- lifecycle
    def start(self) -> None:
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
                env=self._env,
                cwd=self._cwd,
            )
        except OSError as exc:
            raise AdapterCrashed(f"cannot start {self.argv[0]!r}: {exc}") from None
        self._buf = bytearray()
        self._eof = False
        self._stderr = bytearray()
        self._outstanding.clear()
        self._outbox = bytearray()
        self._abandoned = 0
        self._stdin_closed = False
        self._owed_failure = None
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._stdout_fd = self._proc.stdout.fileno()
        self._stderr_reader = threading.Thread(
            target=self._read_stderr, args=(self._proc.stderr,), daemon=True
        )
        self._stderr_reader.start()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def close(self) -> None:
        """End the child: EOF on stdin, then SIGTERM, then SIGKILL to its group."""
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        self._owed_failure = None
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            for sig, grace in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, sig)
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # Whatever the child left in its group (it was started in a new session).
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> AdapterProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- readers
    def _read_line(self, deadline: float) -> tuple[str, bytes]:
        """The next stdout line, read in this thread (no hand-off latency).

        Returns ``("line", bytes)``, ``("eof", partial)``, ``("too_long", head)`` or
        ``("timeout", partial)``; never waits past ``deadline``.
        """
        buf = self._buf
        while True:
            nl = buf.find(b"\n")
            if nl >= 0:
                if nl > self.max_line:
                    return "too_long", bytes(buf[:200])
                line = bytes(buf[:nl])
                del buf[: nl + 1]
                return "line", line
            if len(buf) > self.max_line:
                return "too_long", bytes(buf[:200])
            if self._eof:
                return "eof", bytes(buf)
            check_interrupted()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", bytes(buf)
            # In slices, so that an interrupt is acted on while an adapter thinks.
            ready, _, _ = select.select([self._stdout_fd], [], [], min(remaining, 0.25))
            if not ready:
                continue
            try:
                chunk = os.read(self._stdout_fd, 65536)
            except OSError:
                chunk = b""
            if chunk:
                buf += chunk
            else:
                self._eof = True

    def _read_stderr(self, stream: Any) -> None:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._stderr_lock:
                self._stderr += chunk
                if len(self._stderr) > STDERR_TAIL_BYTES:
                    del self._stderr[: len(self._stderr) - STDERR_TAIL_BYTES]

    def stderr_tail(self) -> str:
        with self._stderr_lock:
            return self._stderr.decode("utf-8", "replace")

    # -- requests
    def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send ``message`` (an ``id`` is assigned) and return the validated response.

        Answers still owed to requests sent before (:meth:`send`) are read and dropped
        first: whoever sent them gave up on them (their example ended)."""
        check_interrupted()
        self.abandon()
        self.send(message)
        return self.receive(timeout)

    @property
    def outstanding(self) -> int:
        """Requests sent whose answers have not been received."""
        return len(self._outstanding)

    def send(self, message: dict[str, Any]) -> int:
        """Queue ``message`` for the adapter without waiting for its answer; returns
        its id. It is written at the next :meth:`flush` or :meth:`receive`."""
        check_interrupted()
        if self._proc is None or self._proc.stdin is None:
            raise AdapterCrashed("adapter is not running")
        rid = self._next_id
        self._next_id += 1
        line = encode({"id": rid, **message})
        if self.log is not None:
            self.log.write("> " + line.decode())
        self._outbox += line
        self._outstanding.append((rid, message.get("op")))
        self.requests_sent += 1
        return rid

    def flush(self) -> None:
        """Write every queued request in one go (one wake-up of the adapter)."""
        proc = self._proc
        if not self._outbox:
            return
        if proc is None or proc.stdin is None:
            raise AdapterCrashed("adapter is not running")
        try:
            view = memoryview(self._outbox)
            while view:  # a raw pipe may take part of a long write
                view = view[proc.stdin.write(view) or 0 :]
        except (BrokenPipeError, OSError):
            # The adapter stopped reading, maybe after answering some of the requests
            # written before: reading on gives those answers, then says what happened
            # at the right request.
            self._stdin_closed = True
        finally:
            self._outbox = bytearray()

    def abandon(self) -> None:
        """Nobody will read the answers owed so far: :meth:`receive` drops them."""
        self._abandoned = len(self._outstanding)

    def drop_answers(self, loud: int) -> bool:
        """Read and drop now every answer owed (:meth:`abandon` leaves that to the next
        :meth:`receive`). The first ``loud`` (after those abandoned before) are read as
        that receive would: a failure to read one is raised by it. The others answer
        requests that belong to nobody: they are forgotten (the next requests take
        their ids again); False if one could not be read (start the adapter again)."""
        loud += self._abandoned
        owed = len(self._outstanding)
        self._abandoned = 0
        self._next_id -= owed - loud
        self.requests_sent -= owed - loud
        for n in range(owed):
            try:
                self._receive(None)
            except AdapterFailure as exc:
                self._abandoned = len(self._outstanding)
                if n < loud:
                    self._owed_failure = exc
                return n < loud
        return True

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        """The validated answer to the oldest request sent and not yet answered (or
        abandoned)."""
        failure, self._owed_failure = self._owed_failure, None
        if failure is not None:
            raise failure
        while self._abandoned:
            self._abandoned -= 1
            self._receive(timeout)
        return self._receive(timeout)

    def _receive(self, timeout: float | None) -> dict[str, Any]:
        if not self._outstanding:
            raise ValueError("no request is waiting for an answer")
        self.flush()
        rid, op = self._outstanding.popleft()
        limit = self.timeout if timeout is None else timeout
        kind, payload = self._read_line(time.monotonic() + limit)
        if kind == "timeout":
            raise AdapterHung(
                f"no response to request id {rid} ({op}) within {limit:g} s",
                self.stderr_tail(),
            ) from None
        if kind == "eof":
            partial = f" after a partial line {payload[:200]!r}" if payload else ""
            closed = "stdin and stdout" if self._stdin_closed else "stdout"
            raise self._exited(f"{closed} closed{partial} while waiting for request id {rid}")
        if kind == "too_long":
            raise ProtocolViolation(
                f"response line longer than {self.max_line} bytes (starts {payload[:80]!r})",
                self.stderr_tail(),
            )
        if self.log is not None:
            self.log.write("< " + payload.decode("utf-8", "replace") + "\n")
        text = payload[:-1] if payload.endswith(b"\r") else payload
        try:
            response = json.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ProtocolViolation(
                f"response to request id {rid} is not a JSON line: {payload[:200]!r}",
                self.stderr_tail(),
            ) from None
        problem = check_response(response, rid)
        if problem is not None:
            raise ProtocolViolation(f"{problem} (line: {payload[:200]!r})", self.stderr_tail())
        assert isinstance(response, dict)
        return response

    def _exited(self, what: str) -> AdapterCrashed:
        # An adapter that died of the same signal (one that shares it, or a wrapper that
        # forwards it) is the interrupt, not a crash to report.
        check_interrupted()
        proc = self._proc
        code: int | None = None
        if proc is not None:
            deadline = time.monotonic() + 1.0
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            code = proc.poll()
        if code is None:
            status = "still running"
        elif code < 0:
            status = f"killed by signal {-code}"
        else:
            status = f"exit status {code}"
        if code is not None and self._stderr_reader is not None:
            # Its last words may still be in the pipe: read to its end (bounded: a
            # process the adapter started may hold the pipe open).
            self._stderr_reader.join(timeout=1.0)
        return AdapterCrashed(f"{what} ({status})", self.stderr_tail())
