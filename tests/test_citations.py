"""Every reference in the repository resolves inside the repository.

The project cites docs/invariants.md IDs (WQ-5, FIFO-3, ...), client-go files and
functions, and its own docs. An outside semantics document that users do not have was
once cited by section number; no tracked file may cite it again, by file name or as
"semantics N.N" / "semantics section N".

There is no exemption: the spec/*.tla comments that once cited it were rewritten (the
committed graphs' hash ignores comments, refimpl/tla/graph.py ``spec_hash``).

Also: every relative markdown link in a tracked .md file resolves to a file (and a
``#fragment`` to a heading), and every ``docs/...md``, ``spec/...`` or ``proofs/...``
path mentioned in code, docstrings or docs names a file or folder that exists (unless it
is marked *(planned)*).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from test_docs_links import broken_links

ROOT = Path(__file__).resolve().parent.parent
SKIP_PARTS = {"node_modules", ".venv", ".git", "__pycache__", ".hypothesis"}

# Built from pieces so this file does not cite what it forbids.
_OUTSIDE = "semantics"
CITATION_RE = re.compile(
    rf"{_OUTSIDE}\.md|\b{_OUTSIDE},?\s+(?:section\s+|§\s*)?\d+(?:\.\d+)?|{_OUTSIDE}\s+§",
    re.IGNORECASE,
)

#: spec files whose comments may still cite it, and how many lines do: none any more
#: (the graphs' hash ignores comments, so they could be fixed without a re-export).
HASHED_SPEC_CITATIONS: dict[str, int] = {}

PATH_RE = re.compile(r"(?<![\w/.-])(?:\.\./)*((?:docs|spec|proofs)/[\w./-]*[\w/])")
CODE_SUFFIXES = {".py", ".md", ".go", ".mjs", ".js", ".ts", ".tla", ".cfg", ".toml", ".txt"}


def tracked_files() -> list[Path]:
    """The files git tracks (or, outside a checkout, every file), minus vendored trees."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
        paths = [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in ROOT.rglob("*") if p.is_file()]
    return sorted(
        p for p in paths if p.is_file() and not SKIP_PARTS.intersection(p.relative_to(ROOT).parts)
    )


def text_of(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


FILES = tracked_files()
TEXTS = {p: t for p in FILES if (t := text_of(p)) is not None}


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def citations(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if CITATION_RE.search(line)]


def test_the_pattern_catches_the_old_forms_and_spares_the_word() -> None:
    doc = f"{_OUTSIDE}.md"
    for cited in (
        f"({doc} section 11.2)",
        f"{doc} 1.9 mistake 7",
        f"exclusivity ({_OUTSIDE} 11.2)",
        f"(see {_OUTSIDE.capitalize()} 4.3)",
        f"{_OUTSIDE} section 4",
        f"{_OUTSIDE} §8.6",
    ):
        assert citations(cited), cited
    for plain in (
        f"x/time/rate reservation {_OUTSIDE}), max-of",
        f"Glue, not {_OUTSIDE}:",
        f"def test_list_resource_version_{_OUTSIDE}() -> None:",
        f"the real FakeClock's {_OUTSIDE}. A run",
    ):
        assert not citations(plain), plain


def test_no_tracked_file_cites_the_outside_document() -> None:
    found: dict[str, list[str]] = {}
    for path, text in TEXTS.items():
        lines = citations(text)
        if lines:
            found[rel(path)] = lines
    unexpected = {
        name: lines
        for name, lines in found.items()
        if len(lines) != HASHED_SPEC_CITATIONS.get(name, 0)
    }
    gone = sorted(set(HASHED_SPEC_CITATIONS) - set(found))
    report = "\n".join(f"{name}: {line}" for name, lines in unexpected.items() for line in lines)
    assert not unexpected, (
        "cite docs/invariants.md IDs, the client-go file/function or the project's docs "
        f"instead:\n{report}"
    )
    assert not gone, f"no longer cite it, drop them from HASHED_SPEC_CITATIONS: {gone}"


MARKDOWN = [p for p in TEXTS if p.suffix == ".md"]


@pytest.mark.parametrize("doc", MARKDOWN, ids=rel)
def test_markdown_links_resolve(doc: Path) -> None:
    broken = broken_links(doc)
    assert not broken, f"{rel(doc)}:\n" + "\n".join(broken)


def mentioned_paths(text: str) -> list[str]:
    """``docs/``, ``spec/`` and ``proofs/`` paths named in ``text``, minus placeholders
    (``spec/MC*.tla``, ``docs/NN-*.md``, ``spec/<name>``) and files marked *(planned)*."""
    out: list[str] = []
    for m in PATH_RE.finditer(text):
        after = text[m.end() : m.end() + 14]
        if re.match(r"[\w.-]*[*{<$]", after) or "(planned)" in after:
            continue
        out.append(m.group(1).rstrip("."))
    return out


def test_mentioned_paths_are_found() -> None:
    assert mentioned_paths("see docs/invariants.md, spec/WorkQueue.tla.") == [
        "docs/invariants.md",
        "spec/WorkQueue.tla",
    ]
    assert mentioned_paths("[x](../docs/protocol.md) and `spec/MC*.tla`") == ["docs/protocol.md"]
    assert mentioned_paths("`spec/Later.tla` (planned)") == []
    assert mentioned_paths("adapters/x/spec/y and refimpl/tla/spec.py") == []
    assert mentioned_paths("a claim is never cited in `docs/NN-*.md`") == []


def resolves(mention: str) -> bool:
    """The path exists, or names a file by its stem: ``docs/01`` for a chapter
    (``docs/01-level-not-edge.md``), ``proofs/MCX`` for a module (``proofs/MCX.tla``)."""
    path = ROOT / mention
    if path.exists():
        return True
    parent = path.parent
    return parent.is_dir() and any(
        p.name.startswith((f"{path.name}.", f"{path.name}-")) for p in parent.iterdir()
    )


def test_a_stem_resolves_and_a_typo_does_not() -> None:
    assert resolves("docs/01") and resolves("proofs/MCWorkQueueRefinementAddInFlight")
    assert not resolves("docs/99") and not resolves("spec/NoSuchModule.tla")


# This file is left out: it names missing paths on purpose, as examples.
SELF = Path(__file__).resolve()


@pytest.mark.parametrize(
    "path", [p for p in TEXTS if p.suffix in CODE_SUFFIXES and p != SELF], ids=rel
)
def test_mentioned_repository_paths_exist(path: Path) -> None:
    missing = sorted({p for p in mentioned_paths(TEXTS[path]) if not resolves(p)})
    assert not missing, f"{rel(path)} names files that do not exist: {missing}"
