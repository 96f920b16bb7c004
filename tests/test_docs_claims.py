"""Docs and experiments cannot drift: every number the chapters state is measured.

The convention (docs/README.md): a measured value is written exactly as the tour prints
it, in a code span, immediately followed by its claim ID -- `` `1000 s` [claim 05.ceiling] ``.
This test runs every experiment of the tour, reads every ``[claim ID]`` in docs/*.md
(outside fenced code and code spans) and fails when an ID is unknown, when the marker is
not preceded by a code span, when that span differs from the measured value, or when a
chapter's claim is never cited in that chapter's file.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import attrs
import pytest

from refimpl.tour import Claim, chapters

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

MARKER_RE = re.compile(r"\[claim ([^\]]*)\]")
CLAIM_ID_RE = re.compile(r"[0-9]{2}\.[a-z0-9][a-z0-9-]*")
CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")


@attrs.frozen
class Citation:
    file: str
    line: int
    claim_id: str
    #: The code span right before the marker, or None when there is none.
    stated: str | None


def paragraphs(text: str) -> list[tuple[int, str]]:
    """(first line number, text joined by spaces) for each paragraph outside fences."""
    out: list[tuple[int, str]] = []
    lines: list[str] = []
    start = 0
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            if lines:
                out.append((start, " ".join(lines)))
                lines = []
            continue
        if not stripped:
            if lines:
                out.append((start, " ".join(lines)))
                lines = []
            continue
        if not lines:
            start = number
        lines.append(stripped)
    if lines:
        out.append((start, " ".join(lines)))
    return out


def citations_in(text: str, file: str) -> list[Citation]:
    found: list[Citation] = []
    for line, paragraph in paragraphs(text):
        last_span: str | None = None
        position = 0
        # Walk the paragraph as alternating text and code spans; markers count only in
        # text, and only the code span that ends right before a marker states its value.
        for span in [*CODE_SPAN_RE.finditer(paragraph), None]:
            end = span.start() if span is not None else len(paragraph)
            plain = paragraph[position:end]
            for marker in MARKER_RE.finditer(plain):
                before = plain[: marker.start()]
                stated = last_span if before.strip() == "" else None
                found.append(Citation(file, line, marker.group(1), stated))
                last_span = None
            if plain.strip():
                last_span = None
            if span is not None:
                last_span = span.group(2).strip() if span.group(1) == "`" else span.group(2)
                position = span.end()
    return found


@functools.cache
def claims_by_chapter() -> dict[str, dict[str, Claim]]:
    return {
        chapter.number: {c.id: c for exp in chapter.experiments for c in exp.run()}
        for chapter in chapters()
    }


@functools.cache
def all_claims() -> dict[str, Claim]:
    return {cid: c for claims in claims_by_chapter().values() for cid, c in claims.items()}


def doc_files() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


@functools.cache
def all_citations() -> list[Citation]:
    return [
        c for path in doc_files() for c in citations_in(path.read_text(encoding="utf-8"), path.name)
    ]


def chapter_file(number: str) -> Path | None:
    matches = sorted(DOCS.glob(f"{number}-*.md"))
    return matches[0] if len(matches) == 1 else None


# -- the rule ---------------------------------------------------------------------------


def test_the_docs_cite_claims() -> None:
    assert len(all_citations()) >= 50, "suspiciously few [claim ...] markers in docs/"


def test_every_cited_claim_exists() -> None:
    known = all_claims()
    unknown = [
        f"{c.file}:{c.line}: [claim {c.claim_id}] is not a claim of any experiment"
        for c in all_citations()
        if c.claim_id not in known
    ]
    assert not unknown, "\n".join(unknown)


def test_every_marker_follows_the_measured_value() -> None:
    known = all_claims()
    problems: list[str] = []
    for c in all_citations():
        claim = known.get(c.claim_id)
        if claim is None:
            continue  # reported by test_every_cited_claim_exists
        if c.stated is None:
            problems.append(
                f"{c.file}:{c.line}: [claim {c.claim_id}] must follow the measured value "
                f"in backticks: `{claim.measured}` [claim {c.claim_id}]"
            )
        elif c.stated != claim.measured:
            problems.append(
                f"{c.file}:{c.line}: [claim {c.claim_id}] states `{c.stated}` but the "
                f"experiment measured `{claim.measured}`"
            )
    assert not problems, "\n".join(problems)


def test_cited_claims_hold() -> None:
    known = all_claims()
    failing = sorted(
        {c.claim_id for c in all_citations() if c.claim_id in known and not known[c.claim_id].ok}
    )
    assert not failing, f"the docs cite claims that do not hold: {failing}"


@pytest.mark.parametrize("number", [chapter.number for chapter in chapters()])
def test_every_claim_of_a_chapter_is_cited_in_it(number: str) -> None:
    path = chapter_file(number)
    assert path is not None, f"chapter {number} has experiments but no single docs/{number}-*.md"
    cited = {c.claim_id for c in citations_in(path.read_text(encoding="utf-8"), path.name)}
    uncited = sorted(set(claims_by_chapter()[number]) - cited)
    assert not uncited, f"{path.name} never cites: {', '.join(uncited)}"


def test_claim_ids_are_well_formed() -> None:
    bad = [cid for cid in all_claims() if not CLAIM_ID_RE.fullmatch(cid)]
    assert not bad, bad


# -- the parser can tell ---------------------------------------------------------------

SAMPLE = """\
Retries wait at most `1000 s` [claim 05.ceiling], then
again `1000 s`  [claim 05.ceiling].
Bare [claim 05.retry-1] and `5 ms` then words [claim 05.retry-2].
Two in a row: `a` [claim 04.x] [claim 04.y].

```markdown
`9 s` [claim 99.in-a-fence]
```

In a code span: `[claim 99.in-a-span]` is an example.
Wrapped `5
ms` is not a span across lines but a paragraph joins them: `10 ms` [claim 05.retry-2]
"""


def test_parser_pairs_markers_with_the_span_before_them() -> None:
    got = [(c.claim_id, c.stated, c.line) for c in citations_in(SAMPLE, "sample.md")]
    assert got == [
        ("05.ceiling", "1000 s", 1),
        ("05.ceiling", "1000 s", 1),
        ("05.retry-1", None, 1),
        ("05.retry-2", None, 1),
        ("04.x", "a", 1),
        ("04.y", None, 1),
        ("05.retry-2", "10 ms", 10),
    ]


def test_a_wrong_number_is_reported() -> None:
    claim = all_claims()["05.ceiling"]
    (citation,) = citations_in("waits `999 s` [claim 05.ceiling]", "x.md")
    assert citation.stated != claim.measured
    (citation,) = citations_in(f"waits `{claim.measured}` [claim 05.ceiling]", "x.md")
    assert citation.stated == claim.measured
