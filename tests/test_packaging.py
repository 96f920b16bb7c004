"""The installed package works as well as the checkout (issue 13, item 1).

The wheel carries spec/ as ``refimpl/_spec`` (pyproject.toml); the slow test builds it,
installs it into a fresh virtualenv in a temporary folder (so neither the checkout nor its
spec/ is on the path) and runs the commands a new user runs first.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from refimpl.conformance.search.config import EXIT_USAGE
from refimpl.tla.graph import load_graph
from refimpl.tla.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[1]
SPEC_SUFFIXES = {".tla", ".cfg", ".json", ".gz", ".txt"}


def _spec_files() -> set[str]:
    """The spec/ files a wheel must carry (not TLC's scratch output, which git ignores)."""
    out = subprocess.run(
        ["git", "ls-files", "spec"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return {
        line.removeprefix("spec/")
        for line in out.stdout.splitlines()
        if Path(line).suffix in SPEC_SUFFIXES
    }


def test_pyproject_lists_every_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = {p for p in config["packages"] if not p.startswith(("refimpl._spec", "refimpl._docs"))}
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "refimpl").rglob("__init__.py")
    }
    assert listed == on_disk
    assert config["package-dir"] == {"refimpl._spec": "spec", "refimpl._docs": "docs"}
    # Every folder under spec/ is a package to setuptools; one not listed is warned about.
    spec_folders = {".".join(("refimpl._spec", *Path(f).parent.parts)) for f in _spec_files()}
    assert spec_folders == {p for p in config["packages"] if p.startswith("refimpl._spec")}


def test_the_wheel_is_configured_to_carry_the_protocol() -> None:
    # `refimpl conform --protocol` reads refimpl/_docs/protocol.md in an installed wheel.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"]["refimpl._docs"] == "docs"
    assert "refimpl._docs" in config["packages"]
    assert config["package-data"]["refimpl._docs"] == ["protocol.md"]


def test_conform_protocol_prints_the_protocol_whatever_else_is_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Issue 27: `conform --help` sent an installed user to docs/protocol.md, a file only
    # a clone has; --protocol prints it (like --help, other arguments do not matter).
    expected = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    for argv in (["--protocol"], ["--budget", "5", "--protocol", "--", "true"]):
        with pytest.raises(SystemExit) as exc:
            _conform(argv)
        assert exc.value.code == 0
        out, err = capsys.readouterr()
        assert out == expected and err == ""


def test_conform_help_names_docs_protocol_only_beside_protocol(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        _conform(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--protocol" in text
    # Each mention of the file says it is a clone's, next to the option that prints it.
    for at in [m.start() for m in re.finditer(r"docs/protocol\.md", text)]:
        near = text[max(0, at - 120) : at + 120]
        assert "in a clone" in near and "--protocol" in near, near


def test_a_missing_graph_is_called_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"state graph missing \(no such file\)"):
        load_graph(tmp_path / "WorkQueue.json.gz")


def test_a_missing_manifest_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from refimpl.cli import main

    with pytest.raises(FileNotFoundError, match="missing or incomplete"):
        load_manifest(tmp_path)
    assert main(["spec", "list", "--spec-dir", str(tmp_path)]) == 2
    assert "no model manifest at" in capsys.readouterr().err


def test_conform_without_hypothesis_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # makes `import hypothesis` fail
    status = _conform(["--budget", "1", "--", sys.executable, "-c", "pass"])
    assert status == EXIT_USAGE
    err = capsys.readouterr().err
    # installs that work: refimpl is on no package index, so no `pip install refimpl[...]`
    assert "pip install hypothesis" in err and "pip install '.[conform]'" in err, err
    assert "'refimpl[conform]'" not in err


def _conform(argv: list[str]) -> int:
    from refimpl.cli import main

    return main(["conform", *argv])


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_the_wheel_installed_outside_the_checkout_runs_the_first_commands(
    tmp_path: Path,
) -> None:
    # Build the wheel (no deps) and install it with the `conform` extra into a venv that has
    # no pip of its own: this interpreter's pip installs into it (--python), the
    # dependencies pinned by constraints.txt, from PyPI or pip's cache.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    dist = tmp_path / "dist"
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", "-w", str(dist), str(ROOT)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    # Issue 27: the build printed three "Package ... would be ignored" warnings (a data
    # folder of spec/ missing from `packages`), and `make tour`'s editable install too.
    assert "warning" not in (built.stdout + built.stderr).lower(), built.stdout + built.stderr
    (wheel,) = dist.glob("refimpl-*.whl")
    carried = {
        name.removeprefix("refimpl/_spec/")
        for name in zipfile.ZipFile(wheel).namelist()
        if name.startswith("refimpl/_spec/")
    }
    assert _spec_files() <= carried
    protocol = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    carried_protocol = zipfile.ZipFile(wheel).read("refimpl/_docs/protocol.md")
    assert carried_protocol.decode("utf-8") == protocol
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    python = venv / "bin" / "python"
    constraints = str(ROOT / "constraints.txt")
    install = ["install", "--quiet", "-c", constraints, f"{wheel}[conform]"]
    _run([*pip, "--python", str(python), *install], tmp_path, env)
    work = tmp_path / "work"  # no spec/ here: the installed copy must be found
    work.mkdir()
    where = _run([str(python), "-c", "import refimpl; print(refimpl.__file__)"], work, env)
    assert str(ROOT) not in where
    refimpl = str(venv / "bin" / "refimpl")
    assert re.search(r"\b(\d+) of \1 claims agree", _run([refimpl, "tour"], work, env))
    assert "WorkQueueRefinement" in _run([refimpl, "spec", "list"], work, env)
    assert "1/1 graphs replayed without a mismatch" in _run(
        [refimpl, "spec", "replay", "WorkQueue"], work, env
    )
    assert "violations: 0" in _run([refimpl, "sim", "run", "informer", "--seed", "1"], work, env)
    assert _run([refimpl, "conform", "--protocol"], work, env) == protocol
    adapter = [str(python), "-m", "refimpl.conformance.reference.adapter"]
    report = _run([refimpl, "conform", "--budget", "5", "--", *adapter], work, env)
    assert "PASS" in report and "FAIL" not in report


def test_mypy_finds_the_editable_install_from_another_folder(tmp_path: Path) -> None:
    """The Makefile installs with editable_mode=compat: a path .pth mypy can follow."""
    (tmp_path / "user.py").write_text(
        "from refimpl.workqueue import Queue\n\nqueue: Queue[str] = Queue()\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
