"""The docs' pictures are drawn by code from the experiments, and cannot drift.

Regenerating every picture must give files byte-identical to the committed ones in
docs/img/; every committed SVG must be one the code draws; every picture must be shown
by some chapter; and each must be well-formed SVG.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from refimpl.tour import pictures, svg

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"
SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return pictures.render_pictures()


def test_committed_pictures_are_what_the_code_draws(rendered: dict[str, str]) -> None:
    stale = []
    for name, text in rendered.items():
        path = IMG / name
        if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
            stale.append(name)
    assert not stale, (
        f"docs/img is out of date for {stale}: run `python -m refimpl.tour.pictures docs/img`"
    )


def test_no_stray_pictures(rendered: dict[str, str]) -> None:
    committed = {p.name for p in IMG.glob("*.svg")}
    assert committed == set(rendered), f"not drawn by the code: {committed - set(rendered)}"


def test_write_pictures_writes_the_same_bytes(tmp_path: Path, rendered: dict[str, str]) -> None:
    written = pictures.write_pictures(tmp_path / "img")
    assert [p.name for p in written] == list(rendered)
    for path in written:
        assert path.read_bytes() == rendered[path.name].encode("utf-8")


def test_drawing_twice_gives_the_same_text(rendered: dict[str, str]) -> None:
    assert pictures.render_pictures() == rendered


def test_every_picture_is_shown_in_a_chapter(rendered: dict[str, str]) -> None:
    docs = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    unused = [name for name in rendered if f"](img/{name})" not in docs]
    assert not unused, f"pictures no chapter shows: {unused}"


def test_pictures_are_well_formed_svg_with_a_title(rendered: dict[str, str]) -> None:
    for name, text in rendered.items():
        root = ET.fromstring(text)
        assert root.tag == f"{SVG_NS}svg", name
        title = root.find(f"{SVG_NS}title")
        assert title is not None and title.text, f"{name} has no <title>"
        assert root.findall(f".//{SVG_NS}polyline"), f"{name} draws no data"


def test_pictures_state_measured_numbers(rendered: dict[str, str]) -> None:
    retry = rendered["05-retry-delays.svg"]
    assert "retry 18: 655.36 s" in retry and "ceiling 1000 s = 16 min 40 s" in retry
    backlog = rendered["06-backlog.svg"]
    assert "9900 notifications owed" in backlog and "at most 100 keys" in backlog


# -- the writer ---------------------------------------------------------------------------


def test_fmt_is_short_and_stable() -> None:
    assert [svg.fmt(v) for v in (1.0, 1.5, 1.234, -0.001, 0.0, 12.345678)] == [
        "1",
        "1.5",
        "1.23",
        "0",
        "0",
        "12.35",
    ]
    with pytest.raises(ValueError, match="non-finite"):
        svg.fmt(float("nan"))


def test_text_is_escaped() -> None:
    doc = svg.Svg(10, 10, "a < b & c")
    doc.text(1, 1, '"x" <y>')
    root = ET.fromstring(doc.render())
    assert root.find(f"{SVG_NS}title") is not None
    texts = [t.text for t in root.iter(f"{SVG_NS}text")]
    assert texts == ['"x" <y>']


def test_axis_maps_linear_and_log() -> None:
    linear = svg.Axis(0, 10, "x", ())
    assert linear.fraction(5) == 0.5
    log = svg.Axis(0.001, 1000.0, "y", (), log=True)
    assert log.fraction(1.0) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="log axis"):
        log.fraction(0)
    with pytest.raises(ValueError, match="lo must be < hi"):
        svg.Axis(1, 1, "z", ())
    with pytest.raises(ValueError, match="lo > 0"):
        svg.Axis(0, 1, "z", (), log=True)


def test_bad_shapes_are_refused() -> None:
    doc = svg.Svg(10, 10, "t")
    with pytest.raises(ValueError, match="two points"):
        doc.polyline([(0, 0)], stroke="#000", width=1)
    with pytest.raises(ValueError, match="anchor"):
        doc.text(0, 0, "x", anchor="left")
    with pytest.raises(ValueError, match="positive size"):
        svg.Svg(0, 10, "t")
