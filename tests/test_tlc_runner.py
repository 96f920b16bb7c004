"""The TLC runner and ``refimpl spec`` without TLC: lookup errors, exit codes, outcomes.

Nothing here runs java; the TLC-backed checks are in test_tlc_models.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from refimpl.tla import cli
from refimpl.tla.manifest import Model, check_outcome, load_manifest, save_manifest
from refimpl.tla.output import Status, TlcResult
from refimpl.tla.runner import (
    EXIT_NO_JAR,
    EXIT_NO_JAVA,
    TlcUnavailable,
    find_jar,
    find_java,
)

SPEC = Path(__file__).resolve().parents[1] / "spec"


def test_missing_jar_variable_is_a_clear_error() -> None:
    with pytest.raises(TlcUnavailable, match="TLA2TOOLS_JAR is not set") as exc:
        find_jar({})
    assert exc.value.exit_code == EXIT_NO_JAR


def test_jar_variable_naming_nothing(tmp_path: Path) -> None:
    with pytest.raises(TlcUnavailable, match="does not name a file") as exc:
        find_jar({"TLA2TOOLS_JAR": str(tmp_path / "nope.jar")})
    assert exc.value.exit_code == EXIT_NO_JAR
    jar = tmp_path / "tla2tools.jar"
    jar.write_bytes(b"")
    assert find_jar({"TLA2TOOLS_JAR": str(jar)}) == jar


def test_missing_java_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TlcUnavailable, match="java not found") as exc:
        find_java({"PATH": str(tmp_path)})
    assert exc.value.exit_code == EXIT_NO_JAVA
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    assert find_java({"JAVA_HOME": str(home), "PATH": ""}) == home / "bin" / "java"


def _main(argv: list[str]) -> int:
    from refimpl.cli import main

    return main(argv)


@pytest.mark.parametrize("action", ["check", "export"])
def test_cli_exit_codes_without_jar_or_java(
    action: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TLA2TOOLS_JAR", raising=False)
    # The jar is looked up after java: without both, either message is right.
    assert _main(["spec", action, "--spec-dir", str(SPEC)]) in (EXIT_NO_JAR, EXIT_NO_JAVA)
    assert "TLA2TOOLS_JAR" in capsys.readouterr().err or shutil.which("java") is None
    jar = tmp_path / "tla2tools.jar"
    jar.write_bytes(b"")
    monkeypatch.setenv("TLA2TOOLS_JAR", str(jar))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert _main(["spec", action, "--spec-dir", str(SPEC)]) == EXIT_NO_JAVA
    assert "java not found" in capsys.readouterr().err


def test_cli_rejects_unknown_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["spec", "check", "--spec-dir", str(SPEC), "NoSuchModel"]) == 3
    assert "no model NoSuchModel" in capsys.readouterr().err


def test_cli_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["spec", "list", "--spec-dir", str(SPEC)]) == 0
    out = capsys.readouterr().out
    for model in load_manifest(SPEC):
        assert model.name in out


def test_models_not_by_default_run_only_when_named(tmp_path: Path) -> None:
    small = Model("Small", "MCS.tla", "MCS.cfg", "pass")
    large = Model("Large", "MCL.tla", "MCL.cfg", "pass", default=False)
    assert cli.by_default([small, large]) == [small]
    assert cli.select([small, large], ["Large"]) == [large]
    save_manifest(tmp_path, [small, large])
    text = (tmp_path / "models.json").read_text()
    assert text.count('"default"') == 1 and '"default": false' in text
    assert load_manifest(tmp_path) == [small, large]
    with pytest.raises(ValueError, match="checked by default"):
        Model("G", "MCG.tla", "MCG.cfg", "pass", graph="graphs/G.json.gz", default=False)


def _result(status: Status, violated: str | None = None, states: int = 10) -> TlcResult:
    return TlcResult(status, 0, violated=violated, distinct_states=states, depth=3)


def test_pass_model_outcomes() -> None:
    model = Model("M", "MCM.tla", "MCM.cfg", "pass", distinct_states=10, depth=3)
    assert check_outcome(model, _result(Status.PASS)) == []
    assert check_outcome(model, _result(Status.PASS, states=11)) == [
        "distinct_states: manifest says 10, TLC found 11"
    ]
    (problem,) = check_outcome(model, _result(Status.INVARIANT_VIOLATED, "Inv"))
    assert "expected pass" in problem and "Inv" in problem


def test_expected_failure_passes_only_on_its_own_violation() -> None:
    model = Model("M", "MCM.tla", "MCM.cfg", "violation", property="Live")
    assert check_outcome(model, _result(Status.PROPERTY_VIOLATED, "Live")) == []
    assert check_outcome(model, _result(Status.PASS)) != []
    assert check_outcome(model, _result(Status.PROPERTY_VIOLATED, "Other")) != []
    assert check_outcome(model, _result(Status.ERROR)) != []


def test_manifest_rejects_bad_entries() -> None:
    with pytest.raises(ValueError, match="expect must be"):
        Model("M", "a", "b", "maybe")
    with pytest.raises(ValueError, match="must name its property"):
        Model("M", "a", "b", "violation")
