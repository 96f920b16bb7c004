"""docs/ links only to things that exist, and says so when something is only planned.

Checked for every docs/*.md: each relative link or image resolves to a file in the
repository, and a ``#fragment`` to a heading of the target (GitHub's heading IDs); each
chapter file links the tour module of its chapter and at least one spec/ module; and a
file mentioned in code as *planned* (`` `spec/X.tla` (planned) ``) does not exist yet --
once it does, the mention must become a link.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refimpl.tour import Chapter, chapters

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DOC_FILES = sorted(DOCS.glob("*.md"))

LINK_RE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
PLANNED_RE = re.compile(r"`((?:spec|proofs|refimpl|tests)/[\w./-]+)` \(planned\)")
FENCE_RE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE_RE.sub("", path.read_text(encoding="utf-8"))
    return {github_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def links(path: Path) -> list[str]:
    text = FENCE_RE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # a link inside a code span is not a link
    return [m.group(1) for m in LINK_RE.finditer(text)]


def broken_links(doc: Path) -> list[str]:
    """Each relative link or image of ``doc`` that does not resolve to a file in the
    repository (or, with a ``#fragment``, to a heading of a Markdown target), and why."""
    broken: list[str] = []
    for target in links(doc):
        if re.match(r"^[a-z]+:", target):
            continue  # an absolute URL: not checked offline
        file_part, _, fragment = target.partition("#")
        resolved = (doc.parent / file_part).resolve() if file_part else doc
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {resolved.name}")
    return broken


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path) -> None:
    broken = broken_links(doc)
    assert not broken, f"{doc.name}:\n" + "\n".join(broken)


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: p.name)
def test_planned_files_do_not_exist_yet(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    arrived = [m.group(1) for m in PLANNED_RE.finditer(text) if (ROOT / m.group(1)).exists()]
    assert not arrived, f"{doc.name}: now exist, make them links: {arrived}"


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c.number)
def test_chapter_links_its_experiments_and_a_spec(chapter: Chapter) -> None:
    number = chapter.number
    module = chapter.module.rsplit(".", 1)[-1]
    (doc,) = DOCS.glob(f"{number}-*.md")
    targets = links(doc)
    assert f"../refimpl/tour/{module}.py" in targets, f"{doc.name} does not link {module}.py"
    assert any(t.startswith("../spec/") for t in targets), f"{doc.name} links no spec module"


def test_slugs_match_githubs_rules() -> None:
    assert github_slug("WQ-4 · No lost re-add") == "wq-4--no-lost-re-add"
    assert github_slug("WQ — the work queue") == "wq--the-work-queue"
    assert github_slug("`len()` counts the waiting line only") == "len-counts-the-waiting-line-only"


def test_the_adapter_page_is_the_first_link_of_check_your_implementation() -> None:
    # Issue 27: the adapter guide was the last section of docs/conformance.md; the README's
    # "Check your implementation" sends a newcomer to docs/adapters.md before anything else.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Check your implementation\n", 1)[1].split("\n## ", 1)[0]
    first = re.search(r"\]\(([^)]+)\)", section)
    assert first is not None and first[1] == "docs/adapters.md", section[:400]
