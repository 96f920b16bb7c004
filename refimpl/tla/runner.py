"""Running TLC: find java and the tools jar, run one model, read the result.

Owns nothing between calls; every run gets a fresh temporary directory for TLC's
``states/`` metadata, so nothing is written next to the specs (``-noGenerateSpecTE``
also keeps TLC's trace-exploration module out of spec/). The jar is found only through
the ``TLA2TOOLS_JAR`` environment variable (refimpl never downloads or builds it);
java through ``JAVA_HOME`` or ``PATH``. A missing jar or java raises
:class:`TlcUnavailable` with the reason and a distinct exit code for the CLI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from refimpl.tla.output import TlcResult, parse_output
from refimpl.usage import EXIT_NO_JAR, EXIT_NO_JAVA, EXIT_NOT_RUN

__all__ = [
    "EXIT_NOT_RUN",
    "EXIT_NO_JAR",
    "EXIT_NO_JAVA",
    "JAR_ENV",
    "TlcRun",
    "TlcUnavailable",
    "find_jar",
    "find_java",
    "refused",
    "run_tlc",
    "tlc_unavailable_reason",
]

#: The environment variable naming the TLA+ tools jar.
JAR_ENV = "TLA2TOOLS_JAR"
# The CLI's exit statuses when the jar / java cannot be found, and for a check that cannot
# be made (a trace that does not map): refimpl.usage, the same in every command.


class TlcUnavailable(RuntimeError):
    """TLC cannot run here; ``exit_code`` tells the CLI which piece is missing."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def refused(exc: Exception, prefix: str, *, tlc_prefix: str | None = None) -> int:
    """Report why a CLI cannot start on stderr and return its exit status:
    ``exc.exit_code`` for a :class:`TlcUnavailable` (its line starts with
    ``tlc_prefix``, by default ``prefix``), :data:`EXIT_NOT_RUN` for anything else (a
    ``ValueError``: a trace that does not map). A usage error is the caller's to raise
    first (:class:`refimpl.usage.UsageError`)."""
    if isinstance(exc, TlcUnavailable):
        print(f"{prefix if tlc_prefix is None else tlc_prefix}{exc}", file=sys.stderr)
        return exc.exit_code
    print(f"{prefix}{exc}", file=sys.stderr)
    return EXIT_NOT_RUN


def find_jar(environ: dict[str, str] | None = None) -> Path:
    """The tools jar named by ``TLA2TOOLS_JAR``; raises :class:`TlcUnavailable`."""
    env = os.environ if environ is None else environ
    value = env.get(JAR_ENV, "").strip()
    if not value:
        raise TlcUnavailable(
            f"{JAR_ENV} is not set: point it at tla2tools.jar to run TLC "
            "(the committed state graphs are replayed without it)",
            EXIT_NO_JAR,
        )
    jar = Path(value).expanduser()
    if not jar.is_file():
        raise TlcUnavailable(f"{JAR_ENV}={value} does not name a file", EXIT_NO_JAR)
    return jar


def find_java(environ: dict[str, str] | None = None) -> Path:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH; raises :class:`TlcUnavailable`."""
    env = os.environ if environ is None else environ
    home = env.get("JAVA_HOME", "").strip()
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file():
            return candidate
    found = shutil.which("java", path=env.get("PATH"))
    if found is None:
        raise TlcUnavailable(
            "java not found (set JAVA_HOME or put java on PATH; TLC needs Java 11+)",
            EXIT_NO_JAVA,
        )
    return Path(found)


@attrs.frozen
class TlcRun:
    """A finished run: the parsed result, the raw output, and the wall time."""

    result: TlcResult
    output: str
    wall_seconds: float
    command: tuple[str, ...]
    dot: str | None = None


def tlc_unavailable_reason() -> str | None:
    """Why TLC cannot run here (no jar, no java), or None when it can."""
    try:
        find_jar()
        find_java()
    except TlcUnavailable as exc:
        return str(exc)
    return None


def run_tlc(
    module: Path,
    config: Path,
    *,
    workers: str = "auto",
    dump_dot: bool = False,
    timeout: float = 900.0,
    extra_args: Sequence[str] = (),
    jar: Path | None = None,
    java: Path | None = None,
    library: Sequence[Path] = (),
) -> TlcRun:
    """Model-check ``module`` with ``config``; ``dump_dot`` also returns the state graph
    (TLC's ``-dump dot,actionlabels``) as text.

    Uses ``-fp 0`` so fingerprints (and hence dumps) repeat from run to run, and
    ``-lncheck final`` so liveness is checked once, on the whole graph, not at intervals
    of wall time (with one worker every figure then repeats).
    ``library`` lists folders searched for EXTENDed / INSTANCEd modules besides the
    module's own (TLC's ``TLA-Library``; proofs/ uses spec/ this way). Raises
    :class:`TlcUnavailable` without java or jar, ``FileNotFoundError`` for a missing
    spec, and ``subprocess.TimeoutExpired`` after ``timeout`` seconds (TLC is killed).
    """
    jar = jar if jar is not None else find_jar()
    java = java if java is not None else find_java()
    module, config = module.resolve(), config.resolve()
    for path in (module, config):
        if not path.is_file():
            raise FileNotFoundError(f"no such spec file: {path}")
    with tempfile.TemporaryDirectory(prefix="refimpl-tlc-") as tmp:
        tmpdir = Path(tmp)
        dot_path = tmpdir / "graph.dot"
        command = [str(java), "-XX:+UseParallelGC"]
        if library:
            command.append("-DTLA-Library=" + os.pathsep.join(str(p.resolve()) for p in library))
        command += [
            "-cp",
            str(jar),
            "tlc2.TLC",
            "-workers",
            workers,
            "-fp",
            "0",
            # Liveness once, on the complete graph: TLC otherwise also checks it at
            # intervals of wall time, so where a violation is found (and the state
            # count printed with it) would depend on the machine's speed.
            "-lncheck",
            "final",
            "-noGenerateSpecTE",
            "-metadir",
            str(tmpdir / "states"),
            "-config",
            str(config),
        ]
        if dump_dot:
            command += ["-dump", "dot,actionlabels", str(dot_path)]
        command += [*extra_args, str(module)]
        started = time.perf_counter()
        proc = subprocess.run(
            command,
            cwd=tmpdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        wall = time.perf_counter() - started
        dot = dot_path.read_text() if dump_dot and dot_path.is_file() else None
    result = parse_output(proc.stdout, proc.returncode)
    if result.location is not None:
        name = definition_at(result.location, [module.parent, *library])
        if name is not None:
            result = attrs.evolve(result, violated=name, violated_all=(name,))
    return TlcRun(result, proc.stdout, wall, tuple(command), dot)


_DEFINITION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\(.*\))?\s*==")


def definition_at(location: tuple[str, int, int], folders: Sequence[Path]) -> str | None:
    """``Module!Name`` of the definition containing ``(module, line, column)``.

    TLC names a violated action property (``[][A]_v``) only by its place in the
    source; this finds the top-level definition that starts at or above that line.
    """
    module, line, _ = location
    for folder in folders:
        path = folder / f"{module}.tla"
        if path.is_file():
            lines = path.read_text().splitlines()[:line]
            for text in reversed(lines):
                if m := _DEFINITION.match(text):
                    return f"{module}!{m.group(1)}"
            return None
    return None
