"""The ``refimpl`` command line: help, tour selection and exit codes."""

from __future__ import annotations

import pytest

from refimpl.cli import main


def test_help_lists_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "tour" in capsys.readouterr().out


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 3
    err = capsys.readouterr().err
    assert err.startswith("usage: refimpl") and "no command given" in err


def test_tour_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tour", "--list"]) == 0
    out = capsys.readouterr().out
    assert "merge-while-busy" in out and "backoff-ceiling" in out


def test_tour_one_chapter_prints_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tour", "5"]) == 0
    out = capsys.readouterr().out
    assert "Chapter 05" in out and "Chapter 04" not in out
    assert "1000 s" in out and "claims agree" in out


def test_tour_unknown_chapter_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tour", "99"]) == 3
    assert "no chapter 99" in capsys.readouterr().err


def test_tour_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["tour", "06", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r["ok"] for r in rows)
    assert {"06.direct-growth", "06.queue-1"} <= {r["id"] for r in rows}
