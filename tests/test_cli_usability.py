"""The ``refimpl`` command as a user meets it: help for every option, output that pipes.

Issue 13, item 5: ``--json`` must print JSON only, a reader that leaves early
(``| head``) must not cause a traceback, and every option must say what it does and
what it defaults to.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Iterator

import pytest
from cli_helpers import REFIMPL, refimpl

from refimpl.cli import EXIT_BROKEN_PIPE, build_parser


def _parsers(
    parser: argparse.ArgumentParser, path: str = "refimpl"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def _options() -> Iterator[tuple[str, argparse.Action]]:
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(
                action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
            ):
                continue
            yield path, action


def _name(action: argparse.Action) -> str:
    return "/".join(action.option_strings) or str(action.metavar or action.dest)


def test_every_option_has_help() -> None:
    missing = [f"{path} {_name(a)}" for path, a in _options() if not (a.help or "").strip()]
    assert not missing, missing


def _in_required_group(parser: argparse.ArgumentParser, action: argparse.Action) -> bool:
    groups = parser._mutually_exclusive_groups
    return any(g.required and action in g._group_actions for g in groups)


def test_every_option_that_takes_a_value_says_its_default() -> None:
    # A flag (store_true/false) has no default to state: absent means off. Everything
    # that takes a value says what happens without it, even when that is "none" or "the
    # scenario's"; so do optional positionals ("default: all").
    silent = []
    for path, parser in _parsers(build_parser()):
        for a in parser._actions:
            if isinstance(
                a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
            ):
                continue
            takes_value = a.nargs != 0 if a.option_strings else a.nargs in ("*", "?")
            if not takes_value or a.required or _in_required_group(parser, a):
                continue
            if a.nargs == argparse.REMAINDER:
                continue
            if "default" not in (a.help or ""):
                silent.append(f"{path} {_name(a)}: {a.help}")
    assert not silent, "\n".join(silent)


def test_faults_heavy_is_explained() -> None:
    helps = [a.help or "" for path, a in _options() if "--faults" in a.option_strings]
    assert helps and all("heavy" in h and "5" in h for h in helps), helps


def test_sim_run_json_prints_json_only() -> None:
    done = refimpl("sim", "run", "informer", "--seed", "1", "--json")
    data = json.loads(done.stdout)  # the whole of stdout, not its last line
    assert data["seed"] == 1 and data["scenario"] == "informer"
    assert data["violations"] == [] and done.returncode == 0, done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("sim", "run", "informer", "--seed", "1", "--verbose"),
        ("sim", "list"),
        ("spec", "list"),
        ("tour", "--list"),
        ("conform", "--protocol"),
    ],
)
def test_closed_pipe_ends_quietly(args: tuple[str, ...]) -> None:
    # The reader goes away before the first line (``| head -0``): every write fails.
    proc = subprocess.Popen(
        [*REFIMPL, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert proc.returncode == EXIT_BROKEN_PIPE, (proc.returncode, err)


def test_tour_tables_fit_100_columns_and_cut_nothing() -> None:
    from refimpl.tour import Claim
    from refimpl.tour.cli import _table

    long = "update:a@4, update:b@5, update:a@6, delete:a(tombstone), add:a@7"
    rows = [
        Claim(
            "x.1", "a claim whose text is longer than any terminal is wide " * 2, long, long, True
        ),
        Claim("x.2", "short", "5 ms", "5 ms", False),
    ]
    table = _table(rows)
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 100, table
    assert "…" not in table
    # Each value can be read back whole from its column (wrapped, not cut).
    start = lines[0].index("measured")
    end = lines[0].index("expected")
    column = " ".join(line[start:end].strip() for line in lines[2:] if line[start:end].strip())
    assert long in column and column.endswith("5 ms"), column


def test_tour_output_fits_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    from refimpl.cli import main

    assert main(["tour", "00", "02"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "…" not in out


def test_spec_list_fits_100_columns_and_cuts_no_description(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from refimpl.cli import main
    from refimpl.tla.manifest import default_spec_dir, load_manifest

    assert main(["spec", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 100, "\n".join(lines)
    start = lines[0].index("about")
    column = " ".join(line[start:].strip() for line in lines[2:])
    for model in load_manifest(default_spec_dir()):
        assert " ".join(model.about.split()) in column, model.about


def test_a_table_row_of_the_wrong_length_is_refused() -> None:
    from refimpl.textable import table

    with pytest.raises(ValueError, match="2 cells for 3 headers"):
        table(("a", "b", "c"), [("1", "2")])


def test_a_table_never_splits_a_name() -> None:
    from refimpl.textable import table

    name = "InformerAtomicRewatchSkipsLonger"
    text = "a description long enough to need more than one line " * 3
    lines = table(("model", "about"), [(name, text)], width=60).splitlines()
    assert max(len(line) for line in lines) <= 60
    assert lines[2].startswith(name + "  ")


def test_every_help_fits_100_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    # argparse wraps to $COLUMNS; a terminal 100 wide must see every help whole.
    monkeypatch.setenv("COLUMNS", "100")
    wide = [
        f"{path}: {line}"
        for path, parser in _parsers(build_parser())
        for line in parser.format_help().splitlines()
        if len(line) > 100
    ]
    assert not wide, "\n".join(wide)


def test_a_simulator_summary_fits_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    from refimpl.cli import main

    assert main(["sim", "run", "informer", "--seed", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The replay command is meant to be copied whole, so it may be longer.
    wide = [line for line in lines if len(line) > 100 and not line.startswith("replay: ")]
    assert not wide, "\n".join(wide)


def test_a_table_wraps_text_between_words() -> None:
    from refimpl.textable import table

    rows = [("M", "violates AbstractWorkQueue!Spec", "property violated AbstractWorkQueue!Spec")]
    out = table(("model", "expected", "TLC says"), rows, width=40)
    assert "AbstractWorkQueue!Spec" in out.split(), out
    assert out.count("AbstractWorkQueue!Spec") == 2, out


def test_tour_runs_a_chapter_named_twice_once(capsys: pytest.CaptureFixture[str]) -> None:
    # `tour 1 1` ran chapter 01 twice (and `tour 01 1` too: the numbers are zero-filled)
    from refimpl.cli import main

    assert main(["tour", "--list", "1", "01", "00", "1"]) == 0
    numbers = [
        line.split()[0] for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()
    ]
    assert numbers == ["01", "00"]
