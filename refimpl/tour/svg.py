"""A tiny SVG writer for the docs' pictures: shapes, text and a two-axis chart.

Holds a list of elements and renders them to text; no dependencies, no clock, no
randomness. The output is a pure function of the calls made, with every number
written to at most two decimals, so regenerating a picture from the same experiment
gives byte-identical files (``tests/test_docs_pictures.py`` relies on that). Not part
of the ported machinery: it only draws what :mod:`refimpl.tour` measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

import attrs

__all__ = ["Axis", "Chart", "Svg", "fmt"]

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"


def fmt(value: float) -> str:
    """A coordinate as short, stable text: at most two decimals, no ``-0``."""
    if not math.isfinite(value):
        raise ValueError(f"cannot draw a non-finite coordinate: {value!r}")
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


class Svg:
    """An SVG document built element by element (drawn in call order)."""

    def __init__(self, width: int, height: int, title: str, description: str = "") -> None:
        if width <= 0 or height <= 0:
            raise ValueError(f"an SVG needs a positive size, got {width}x{height}")
        self.width = width
        self.height = height
        self.title = title
        self.description = description
        self._body: list[str] = []

    def _add(self, tag: str, attrs_: dict[str, str], text: str | None = None) -> None:
        rendered = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs_.items())
        if text is None:
            self._body.append(f"<{tag} {rendered}/>")
        else:
            self._body.append(f"<{tag} {rendered}>{escape(text)}</{tag}>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str = "none") -> None:
        self._add(
            "rect",
            {"x": fmt(x), "y": fmt(y), "width": fmt(w), "height": fmt(h), "fill": fill}
            | ({"stroke": stroke} if stroke != "none" else {}),
        )

    def line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        stroke: str = "#444",
        width: float = 1,
        dash: str | None = None,
    ) -> None:
        attributes = {
            "x1": fmt(x1),
            "y1": fmt(y1),
            "x2": fmt(x2),
            "y2": fmt(y2),
            "stroke": stroke,
            "stroke-width": fmt(width),
        }
        if dash is not None:
            attributes["stroke-dasharray"] = dash
        self._add("line", attributes)

    def polyline(self, points: Sequence[tuple[float, float]], stroke: str, width: float) -> None:
        if len(points) < 2:
            raise ValueError("a polyline needs at least two points")
        self._add(
            "polyline",
            {
                "points": " ".join(f"{fmt(x)},{fmt(y)}" for x, y in points),
                "fill": "none",
                "stroke": stroke,
                "stroke-width": fmt(width),
                "stroke-linejoin": "round",
            },
        )

    def circle(self, cx: float, cy: float, r: float, fill: str) -> None:
        self._add("circle", {"cx": fmt(cx), "cy": fmt(cy), "r": fmt(r), "fill": fill})

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float = 12,
        anchor: str = "start",
        fill: str = "#222",
        bold: bool = False,
        rotate: bool = False,
    ) -> None:
        if anchor not in ("start", "middle", "end"):
            raise ValueError(f"text anchor must be start, middle or end, got {anchor!r}")
        attributes = {"x": fmt(x), "y": fmt(y), "font-size": fmt(size), "fill": fill}
        if anchor != "start":
            attributes["text-anchor"] = anchor
        if bold:
            attributes["font-weight"] = "bold"
        if rotate:
            attributes["transform"] = f"rotate(-90 {fmt(x)} {fmt(y)})"
        self._add("text", attributes, text)

    def render(self) -> str:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
            f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" '
            f'role="img" font-family={quoteattr(FONT)}>'
        )
        lines = [head, f"<title>{escape(self.title)}</title>"]
        if self.description:
            lines.append(f"<desc>{escape(self.description)}</desc>")
        lines.append(f'<rect width="{self.width}" height="{self.height}" fill="#fff"/>')
        lines.extend(self._body)
        lines.append("</svg>")
        return "\n".join(lines) + "\n"


@attrs.frozen
class Axis:
    """A data range mapped onto a pixel range; ``log`` uses a base-10 scale."""

    lo: float
    hi: float
    label: str
    ticks: tuple[tuple[float, str], ...]
    log: bool = False

    def __attrs_post_init__(self) -> None:
        if not self.lo < self.hi:
            raise ValueError(f"axis {self.label!r}: lo must be < hi, got {self.lo}, {self.hi}")
        if self.log and self.lo <= 0:
            raise ValueError(f"axis {self.label!r}: a log axis needs lo > 0, got {self.lo}")

    def fraction(self, value: float) -> float:
        """Where ``value`` lies on the axis, 0.0 at ``lo`` and 1.0 at ``hi``."""
        if self.log:
            if value <= 0:
                raise ValueError(f"axis {self.label!r}: cannot place {value} on a log axis")
            return (math.log10(value) - math.log10(self.lo)) / (
                math.log10(self.hi) - math.log10(self.lo)
            )
        return (value - self.lo) / (self.hi - self.lo)


class Chart:
    """An x/y chart: frame, grid, ticks, axis labels, then series and notes on top."""

    LEFT, RIGHT, TOP, BOTTOM = 78, 24, 44, 56

    def __init__(
        self, width: int, height: int, title: str, x: Axis, y: Axis, description: str = ""
    ) -> None:
        self.svg = Svg(width, height, title, description)
        self.x = x
        self.y = y
        self.x0, self.x1 = self.LEFT, width - self.RIGHT
        self.y0, self.y1 = height - self.BOTTOM, self.TOP  # y grows upwards
        self._frame(title)

    def px(self, x: float) -> float:
        return self.x0 + self.x.fraction(x) * (self.x1 - self.x0)

    def py(self, y: float) -> float:
        return self.y0 + self.y.fraction(y) * (self.y1 - self.y0)

    def _frame(self, title: str) -> None:
        svg = self.svg
        svg.text(self.x0, 24, title, size=15, bold=True)
        for value, label in self.y.ticks:
            y = self.py(value)
            svg.line(self.x0, y, self.x1, y, stroke="#e4e4e4")
            svg.text(self.x0 - 8, y + 4, label, size=11, anchor="end", fill="#555")
        for value, label in self.x.ticks:
            x = self.px(value)
            svg.line(x, self.y0, x, self.y0 + 5, stroke="#888")
            svg.text(x, self.y0 + 19, label, size=11, anchor="middle", fill="#555")
        svg.line(self.x0, self.y0, self.x1, self.y0, stroke="#888")
        svg.line(self.x0, self.y0, self.x0, self.y1, stroke="#888")
        svg.text((self.x0 + self.x1) / 2, self.y0 + 42, self.x.label, anchor="middle")
        svg.text(20, (self.y0 + self.y1) / 2, self.y.label, anchor="middle", rotate=True)

    def series(
        self,
        points: Sequence[tuple[float, float]],
        color: str,
        width: float = 2,
        dots: bool = False,
    ) -> None:
        pixels = [(self.px(x), self.py(y)) for x, y in points]
        self.svg.polyline(pixels, stroke=color, width=width)
        if dots:
            for x, y in pixels:
                self.svg.circle(x, y, 3, fill=color)

    def hline(self, y: float, color: str, label: str = "") -> None:
        py = self.py(y)
        self.svg.line(self.x0, py, self.x1, py, stroke=color, width=1.5, dash="6 4")
        if label:
            self.svg.text(self.x0 + 6, py - 6, label, size=11, fill=color)

    def note(
        self, x: float, y: float, text: str, color: str = "#222", anchor: str = "start"
    ) -> None:
        """Text placed at data coordinates (``y`` is the baseline)."""
        self.svg.text(self.px(x), self.py(y), text, size=11, anchor=anchor, fill=color)

    def render(self) -> str:
        return self.svg.render()
