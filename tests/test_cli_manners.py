"""The ``refimpl`` command's manners (issue 27), for every command but ``conform``: a
usage error exits 3 with that subcommand's usage and one error line on stderr, nothing
on stdout, and no traceback; a value nothing would use is a usage error too.

The rules are written once, in :data:`refimpl.usage.RULES`, which ``refimpl --help``
prints. ``conform`` and ``peers`` check their own arguments (their own tests); here only
that an unknown option gets their usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from refimpl.cli import main
from refimpl.usage import EXIT_USAGE, RULES

#: (argv, the usage it must print, a piece of the error line). ``{missing}``: a file
#: that does not exist; ``{unwritable}``: a path under a regular file (not writable
#: even as root); ``{file}``: a readable file.
CASES = [
    ([], "refimpl", "no command given"),
    (["nosuch"], "refimpl", "invalid choice"),
    (["tour", "99"], "refimpl tour", "no chapter 99"),
    (["tour", "--bogus"], "refimpl tour", "unrecognized arguments: --bogus"),
    (["tour", "--pictures", "{unwritable}", "03"], "refimpl tour", "takes no CHAPTER"),
    (["tour", "--pictures", "{unwritable}"], "refimpl tour", "cannot write"),
    (["spec"], "refimpl spec", "required: ACTION"),
    (["spec", "list", "--bogus"], "refimpl spec list", "unrecognized arguments"),
    (["spec", "trace", "{missing}"], "refimpl spec trace", "cannot read"),
    (["spec", "trace"], "refimpl spec trace", "give a trace file or --sim"),
    (["spec", "trace", "--sim", "nosuch"], "refimpl spec trace", "no such scenario"),
    (["spec", "trace", "{file}", "--seed", "3"], "refimpl spec trace", "only for --sim"),
    (["spec", "trace", "--sim", "informer", "--steps", "-5"], "refimpl spec trace", "--steps"),
    (["spec", "trace", "--sim", "informer", "--fifo", "x"], "refimpl spec trace", "--fifo"),
    (["spec", "replay", "--show", "-1"], "refimpl spec replay", "--show must be >= 0"),
    (["spec", "replay", "NoSuchModel"], "refimpl spec replay", "no model NoSuchModel"),
    (["spec", "replay", "EdgeVsLevelEdge"], "refimpl spec replay", "no committed graph"),
    (["spec", "check", "NoSuchModel"], "refimpl spec check", "no model NoSuchModel"),
    (["spec", "check", "--workers", "abc"], "refimpl spec check", "--workers"),
    (["spec", "check", "--record", "--workers", "2"], "refimpl spec check", "--record"),
    (["spec", "export", "NoSuchModel"], "refimpl spec export", "no model NoSuchModel"),
    (["sim"], "refimpl sim", "give an action"),
    (["sim", "run", "nosuch"], "refimpl sim run", "unknown scenario"),
    (["sim", "run", "informer", "--bogus"], "refimpl sim run", "unrecognized arguments"),
    (["sim", "run", "informer", "--steps", "-5"], "refimpl sim run", "--steps must be >= 0"),
    (["sim", "run", "informer", "--faults", "bogus=3"], "refimpl sim run", "unknown fault"),
    (["sim", "run", "informer", "--faults", "crash=x"], "refimpl sim run", "integer"),
    (["sim", "run", "informer", "--objects", "-3"], "refimpl sim run", "--objects must be"),
    (["sim", "run", "informer", "--shrink-runs", "-1"], "refimpl sim run", "--shrink-runs"),
    (["sim", "run", "informer", "--trace", "{unwritable}"], "refimpl sim run", "--trace"),
    (["sim", "run", "informer", "--json", "--verbose"], "refimpl sim run", "--verbose"),
    (["sim", "run", "informer", "--fifo", "delta", "--no-batch"], "refimpl sim run", "batch"),
    (["sim", "replay", "informer"], "refimpl sim replay", "one of the arguments"),
    (["sim", "replay", "informer", "--choices", "1,x,3"], "refimpl sim replay", "integers"),
    (["sim", "replay", "informer", "--choices", "1,-2"], "refimpl sim replay", ">= 0"),
    (
        ["sim", "replay", "informer", "--choices-file", "{missing}"],
        "refimpl sim replay",
        "--choices-file",
    ),
    (["sim", "replay", "informer", "--seed", "1", "--state-at", "0"], "refimpl sim replay", "1"),
    (["sim", "list", "extra"], "refimpl sim list", "unrecognized arguments"),
    (
        ["sim", "replay", "informer", "--choices-file", "{binary}"],
        "refimpl sim replay",
        "not a text file",
    ),
    (["sim", "run", "informer", "--trace", "{folder}"], "refimpl sim run", "--trace"),
    (["spec", "trace", "{binary}"], "refimpl spec trace", "not a text file"),
    (["spec", "trace", "{file}", "--keep", "{file}"], "refimpl spec trace", "not a folder"),
    (["spec", "list", "--spec-dir", "{file}"], "refimpl spec list", "not a folder"),
    (["spec", "list", "--spec-dir", "{missing}"], "refimpl spec list", "no such folder"),
    (["spec", "replay", "--spec-dir", "{missing}"], "refimpl spec replay", "no such folder"),
    (["sim", "run", "informer", "--steps", "99999999999"], "refimpl sim run", "at most"),
    # conform and peers have parsers of their own; an unknown option is still reported
    # with the usage of the subcommand it was given to (it showed the top-level one).
    (["conform", "--bogus", "--", "true"], "refimpl conform", "unrecognized arguments"),
    (["peers", "--bogus"], "refimpl peers", "unrecognized arguments"),
    # conform: files named on the command line are checked before the search (a --save
    # folder that did not exist ended a whole search in a traceback, its counterexample
    # unprinted), and no value is accepted that nothing uses
    (["conform", "--save", "{unwritable}", "--", "true"], "refimpl conform", "--save"),
    (["conform", "--log", "{folder}", "--", "true"], "refimpl conform", "--log"),
    (["conform", "--json", "{unwritable}", "--", "true"], "refimpl conform", "--json"),
    (["conform", "--replay", "{missing}", "--", "true"], "refimpl conform", "--replay"),
    (["conform", "--option", "nosuch=1", "--", "true"], "refimpl conform", "nosuch"),
    (["conform", "--skip", "nosuch", "--", "true"], "refimpl conform", "nosuch"),
    (["conform", "--budget", "0", "--", "true"], "refimpl conform", "--budget"),
    (
        ["conform", "--from-spec", "WorkQueue", "--component", "store", "--", "true"],
        "refimpl conform",
        "--component",
    ),
    # nothing to check is no "0 ok, 0 failed" (it exited 0), nor a status-1 failure
    (["peers", "--root", "{missing}"], "refimpl peers", "no adapters/ folder"),
    (["peers", "--root", "{folder}"], "refimpl peers", "no adapters/ folder"),
    (["peers", "nosuchpeer"], "refimpl peers", "no peer.json for nosuchpeer"),
]

#: Cases whose error comes only once the run is under way: a choice out of range, a
#: step beyond the run. The timeline printed so far stays on stdout.
AFTER_OUTPUT = [
    (["sim", "replay", "informer", "--choices", "99999,99999"], "refimpl sim replay", "99999"),
    (
        ["sim", "replay", "informer", "--seed", "1", "--steps", "5", "--state-at", "99999"],
        "refimpl sim replay",
        "--state-at 99999",
    ),
]


def _argv(argv: list[str], tmp_path: Path) -> list[str]:
    readable = tmp_path / "readable.jsonl"
    readable.write_text("{}\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    paths = {
        "{binary}": str(binary),
        "{folder}": str(tmp_path),
        "{missing}": str(tmp_path / "nonexistent.jsonl"),
        "{unwritable}": str(blocker / "out"),
        "{file}": str(readable),
    }
    return [paths.get(a, a) for a in argv]


def _status(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        return int(exc.code or 0)


@pytest.mark.parametrize(("argv", "usage", "says"), CASES + AFTER_OUTPUT)
def test_a_usage_error_exits_3_with_its_commands_usage_on_stderr(
    argv: list[str],
    usage: str,
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = _status(_argv(argv, tmp_path))  # anything else raised fails the test
    out, err = capsys.readouterr()
    assert status == EXIT_USAGE, (status, err)
    assert err.startswith(f"usage: {usage} "), err
    lines = err.strip().splitlines()
    assert lines[-1].startswith(f"{usage}: error: ") and says in lines[-1], err
    assert "Traceback" not in err
    if (argv, usage, says) in CASES:
        assert out == "", out
    assert "error" not in out.lower(), out


def test_skip_raises_is_no_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --help documents 'raises' for the informer (no handler that throws), and the
    # pinned peer checks use it; the --skip check refused it as no protocol method.
    status = _status(["conform", "--skip", "raises", "--component", "informer", "--", "true"])
    err = capsys.readouterr().err
    assert status != EXIT_USAGE, err
    assert "--skip" not in err, err


def test_option_limiter_is_no_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # A limiter is a create option the rate limiters' search draws (pinned peer checks
    # fix one); the --option check knew only the FIFOs' options.
    limiter = 'limiter={"name":"default_controller"}'
    argv = ["conform", "--component", "rate_limiter", "--option", limiter, "--", "true"]
    status = _status(argv)
    err = capsys.readouterr().err
    assert status != EXIT_USAGE, err
    assert "--option" not in err, err


def test_the_rules_are_the_top_level_helps_epilog(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert RULES in out
    assert "3    usage error" in RULES and "4    inconclusive" in RULES


def test_every_subcommand_has_a_description(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 27: spec list/check/export and sim list/replay had none in their --help.
    import argparse

    from refimpl.cli import build_parser

    def walk(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
        found = [parser]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found += walk(sub)
        return found

    missing = [p.prog for p in walk(build_parser()) if not (p.description or "").strip()]
    assert not missing, missing


#: Adapters that fail before the handshake ends (issue 27's list), and what is said.
#: Refuses hello at protocol 2 and at the protocol 1 the harness then offers.
REFUSE = "; ".join(
    f'read l; echo \'{{"id":{n},"error":{{"kind":"unsupported","message":"no"}}}}\'' for n in (0, 1)
)
FAILING_ADAPTERS = [
    (["false"], "adapter crashed"),  # exits at once
    (["/nonexistent/adapter"], "cannot start"),  # missing
    (["sh", "-c", "echo garbage; sleep 3"], "not a JSON line"),
    (["sleep", "5"], "adapter hung"),
    (["sh", "-c", REFUSE], "handshake refused"),
]


@pytest.mark.parametrize(("adapter", "says"), FAILING_ADAPTERS)
def test_conform_says_its_adapter_failed_on_stderr(
    adapter: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # `refimpl conform ... > report` showed nothing on the terminal: the message went
    # to stdout
    assert main(["conform", "--startup-timeout", "1", "--", *adapter]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "the adapter failed to start" in err and says in err, (out, err)


def test_tour_list_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 27: `tour --json --list` printed the text list, --json ignored.
    assert main(["tour", "--json", "--list"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all({"chapter", "experiment", "title"} <= set(row) for row in rows)


def _conform_on_a_full_disk(
    monkeypatch: pytest.MonkeyPatch, writer: str, option: str, path: Path
) -> int:
    """``refimpl conform`` (seed 1) against a broken queue, ``option`` naming ``path``,
    with search/run.py's ``writer`` failing as on a full disk; the exit status. One
    finding, shrunk by replay only: the save and the report are what is tested, and
    Hypothesis' shrinking of two findings took 15 s of the run."""
    import refimpl.conformance.search.run as search_run

    def full_disk(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(search_run, writer, full_disk)
    adapter = Path(__file__).resolve().parents[1] / "adapters" / "broken" / "adapter.py"
    broken = [sys.executable, str(adapter), "--bug", "done-forgets-requeue"]
    argv = ["conform", "--component", "queue", "--seed", "1", "--budget", "5"]
    argv += ["--max-findings", "1", "--quick-shrink"]
    argv += ["--client-go", "none", "--no-progress", option, str(path)]
    return main([*argv, "--", *broken])


def test_a_finding_is_printed_before_a_save_that_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 27: a --save that could not be written ended the run in a traceback, the
    # counterexample unprinted. The folder is checked at the start; a write that still
    # fails (a full disk) is said after the report, which stands.
    status = _conform_on_a_full_disk(monkeypatch, "save_findings", "--save", tmp_path / "t.jsonl")
    out = capsys.readouterr().out
    assert status == 1, out
    finding, saved = out.index("replay on a fresh adapter"), out.index("could not save")
    assert finding < saved and "No space left on device" in out[saved:], out


def test_the_spec_group_says_which_actions_need_the_jar(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 27: `refimpl spec --help` said the group needs TLA2TOOLS_JAR; list and
    # replay do not, and run without it.
    with pytest.raises(SystemExit):
        main(["spec", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "check, export and trace run TLC: they need TLA2TOOLS_JAR" in text, text
    assert "list and replay need neither" in text, text
    monkeypatch.delenv("TLA2TOOLS_JAR", raising=False)
    assert main(["spec", "list"]) == 0
    assert "WorkQueue" in capsys.readouterr().out


def test_a_json_file_that_fails_to_write_at_the_end_is_said_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 27: --json's folder is checked at the start, but the write at the end may
    # still fail (a full disk); that ended the run in a traceback after the report.
    status = _conform_on_a_full_disk(monkeypatch, "write_json", "--json", tmp_path / "r.json")
    captured = capsys.readouterr()
    assert status == 1, captured.out
    assert "replay on a fresh adapter" in captured.out
    assert "could not write" in captured.err and "No space left" in captured.err
