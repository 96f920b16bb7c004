"""Reachable state graphs: read from TLC's dot dump, stored as compact JSON, hashed.

A :class:`StateGraph` is what ties the specs to the code in CI, where there is no TLC:
every reachable state (a variable map), the initial states, and every transition
``(from, to, action, args)``. :func:`parse_dot` reads ``-dump dot,actionlabels``
output; :func:`write_graph` stores ``spec/graphs/<Model>.json.gz`` deterministically
(states ordered by BFS depth then text, gzip without a timestamp), so regenerating an
unchanged spec changes no byte. :func:`spec_hash` covers the MC module, its cfg and
every spec module they EXTEND or INSTANCE, so a test can tell a stale graph.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from refimpl.tla.output import parse_state
from refimpl.tla.values import (
    TlaParseError,
    Value,
    format_value,
    parse_values,
    value_from_json,
    value_to_json,
)

__all__ = [
    "Edge",
    "State",
    "StateGraph",
    "load_graph",
    "parse_dot",
    "spec_files",
    "spec_hash",
    "without_comments",
    "write_graph",
]

#: A state as a hashable, sorted tuple of (variable, value) pairs.
State = tuple[tuple[str, Value], ...]


@attrs.frozen
class Edge:
    source: int
    target: int
    action: str
    args: tuple[Value, ...] = ()

    @property
    def label(self) -> str:
        """``Action(arg, ...)`` as TLC prints it."""
        if not self.args:
            return self.action
        return f"{self.action}({', '.join(format_value(a) for a in self.args)})"


@attrs.frozen
class StateGraph:
    """States are indexed 0..n-1; ``states[i]`` maps variable names to values."""

    variables: tuple[str, ...]
    states: tuple[Mapping[str, Value], ...]
    init: tuple[int, ...]
    edges: tuple[Edge, ...]
    spec_hash: str = ""
    spec_files: tuple[str, ...] = ()

    def key(self, index: int) -> State:
        return freeze_state(self.states[index])

    def index(self) -> dict[State, int]:
        """State -> its index, for looking up a successor computed elsewhere."""
        return {freeze_state(s): i for i, s in enumerate(self.states)}

    def successors(self) -> list[list[Edge]]:
        out: list[list[Edge]] = [[] for _ in self.states]
        for edge in self.edges:
            out[edge.source].append(edge)
        return out


def freeze_state(state: Mapping[str, Value]) -> State:
    return tuple(sorted(state.items()))


_NODE = re.compile(r'^(-?\d+) \[label="((?:[^"\\]|\\.)*)"(.*)\]$')
_EDGE = re.compile(r'^(-?\d+) -> (-?\d+) \[label="((?:[^"\\]|\\.)*)"')
_LABEL = re.compile(r"^([A-Za-z_][A-Za-z0-9_!]*)(?:\((.*)\))?$", re.DOTALL)


def _dot_unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append("\n" if nxt == "n" else nxt)
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_dot(text: str) -> StateGraph:
    """Read TLC's ``-dump dot,actionlabels`` file (initial states are the filled nodes).

    Raises :class:`TlaParseError` on a node label or edge label it cannot read.
    """
    nodes: dict[int, dict[str, Value]] = {}
    initial: list[int] = []
    raw_edges: set[tuple[int, int, str, tuple[Value, ...]]] = set()
    for line in text.splitlines():
        line = line.strip().rstrip(";")
        if m := _EDGE.match(line):
            label = _dot_unescape(m.group(3))
            lm = _LABEL.match(label)
            if lm is None:
                raise TlaParseError(f"cannot read the action label {label!r}")
            args = parse_values(lm.group(2) or "")
            raw_edges.add((int(m.group(1)), int(m.group(2)), lm.group(1), args))
        elif m := _NODE.match(line):
            fp = int(m.group(1))
            if fp not in nodes:
                nodes[fp] = parse_state(_dot_unescape(m.group(2)).splitlines())
            if "style = filled" in m.group(3):
                initial.append(fp)
    missing = {fp for e in raw_edges for fp in e[:2] if fp not in nodes}
    if missing:
        raise TlaParseError(f"dot dump has edges to {len(missing)} states it never labels")
    return _canonical(nodes, initial, raw_edges)


def _canonical(
    nodes: Mapping[Any, Mapping[str, Value]],
    initial: Iterable[Any],
    raw_edges: Iterable[tuple[Any, Any, str, tuple[Value, ...]]],
) -> StateGraph:
    """Renumber states by BFS depth from the initial states, then by printed text."""
    text = {k: json.dumps(_state_json(v), sort_keys=True) for k, v in nodes.items()}
    succ: dict[Any, list[Any]] = {k: [] for k in nodes}
    edges = list(raw_edges)
    for src, dst, _, _ in edges:
        succ[src].append(dst)
    depth: dict[Any, int] = {}
    todo: deque[Any] = deque()
    for k in sorted(set(initial), key=text.__getitem__):
        depth[k] = 0
        todo.append(k)
    while todo:
        k = todo.popleft()
        for nxt in succ[k]:
            if nxt not in depth:
                depth[nxt] = depth[k] + 1
                todo.append(nxt)
    order = sorted(nodes, key=lambda k: (depth.get(k, 1 << 30), text[k]))
    number = {k: i for i, k in enumerate(order)}
    variables = tuple(sorted({v for s in nodes.values() for v in s}))
    graph_edges = sorted(
        (Edge(number[s], number[d], a, args) for s, d, a, args in edges),
        key=lambda e: (e.source, e.target, e.label),
    )
    return StateGraph(
        variables=variables,
        states=tuple(dict(nodes[k]) for k in order),
        init=tuple(sorted(number[k] for k in set(initial))),
        edges=tuple(graph_edges),
    )


def _state_json(state: Mapping[str, Value]) -> dict[str, Any]:
    return {name: value_to_json(value) for name, value in state.items()}


def spec_files(module: Path, config: Path, library: Iterable[Path] = ()) -> list[Path]:
    """The cfg, the MC module and every module it EXTENDS or INSTANCEs (transitively)
    found in its own folder or in ``library``. Standard modules are not included."""
    folders = [module.parent, *library]
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        path = todo.pop()
        if path.name in seen:
            continue
        seen[path.name] = path
        source = _strip_comments(path.read_text())
        names = re.findall(r"\bEXTENDS\s+(\w+(?:\s*,\s*\w+)*)", source)
        names += re.findall(r"\bINSTANCE\s+(\w+)", source)
        for group in names:
            for name in re.split(r"[\s,]+", group.strip()):
                found = [f / f"{name}.tla" for f in folders if (f / f"{name}.tla").is_file()]
                if name and found:
                    todo.append(found[0])
    return sorted([config, *seen.values()], key=lambda p: p.name)


def _strip_comments(source: str) -> str:
    source = re.sub(r"\(\*.*?\*\)", " ", source, flags=re.DOTALL)
    return re.sub(r"\\\*[^\n]*", " ", source)


def spec_hash(files: Iterable[Path]) -> str:
    """sha256 over (file name, text without comments) of ``files``, in name order.

    TLC ignores comments, so a comment edit never makes a graph stale and does not
    change the hash; every other edit does (see :func:`without_comments`).
    """
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0")
        text = path.read_bytes().decode("utf-8").replace("\r\n", "\n")
        digest.update(without_comments(text).encode() + b"\0")
    return digest.hexdigest()


def without_comments(text: str) -> str:
    """TLA+ (or TLC config) text with its comments blanked out: ``(* ... *)``, which
    nest, and ``\\*`` to the end of the line, outside string literals. Each comment
    character becomes a space, so the columns of the code around it stay where they
    are (TLA+ reads the alignment of ``/\\`` and ``\\/`` lists); then lines lose
    their trailing blanks and lines left empty are dropped."""
    out: list[str] = []
    depth = 0
    in_string = False
    i = 0
    while i < len(text):
        pair = text[i : i + 2]
        ch = text[i]
        if depth:
            if pair == "(*":
                depth += 1
                out.append("  ")
                i += 2
            elif pair == "*)":
                depth -= 1
                out.append("  ")
                i += 2
            else:
                out.append(ch if ch == "\n" else " ")
                i += 1
        elif in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            in_string = ch != '"'
            i += 1
        elif pair == "(*":
            depth = 1
            out.append("  ")
            i += 2
        elif pair == "\\*":
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            out.append(" " * (end - i))
            i = end
        else:
            in_string = ch == '"'
            out.append(ch)
            i += 1
    lines = (line.rstrip() for line in "".join(out).split("\n"))
    return "\n".join(line for line in lines if line)


def write_graph(graph: StateGraph, path: Path) -> None:
    """Store the graph as gzip'd JSON, byte-for-byte repeatable."""
    data = {
        "spec_hash": graph.spec_hash,
        "spec_files": list(graph.spec_files),
        "vars": list(graph.variables),
        "init": list(graph.init),
        "states": [_state_json(s) for s in graph.states],
        "edges": [
            [e.source, e.target, e.action, [value_to_json(a) for a in e.args]] for e in graph.edges
        ],
    }
    body = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(body, compresslevel=9, mtime=0))


class _SharedValues:
    """:func:`value_from_json` once per distinct value. A graph's tens of thousands of
    states hold a few thousand distinct values, and converting each occurrence was most
    of a load; a value is immutable, so states can share one."""

    def __init__(self) -> None:
        self._seen: dict[str, Value] = {}

    def value(self, data: Any) -> Value:
        if isinstance(data, bool | int | str):
            return data
        # repr of decoded JSON (dicts, lists, str, int, bool) tells values apart and is
        # cheaper than converting them; equal values written differently just miss.
        text = repr(data)
        found = self._seen.get(text)
        if found is None:
            found = self._seen[text] = value_from_json(data)
        return found


def load_graph(path: Path) -> StateGraph:
    """Read a graph written by :func:`write_graph`.

    FileNotFoundError if there is no such file (say so: a missing graph is an install or
    path problem, not a malformed one), ValueError if the file is not a graph.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: state graph missing (no such file)") from None
    try:
        data = json.loads(gzip.decompress(raw))
        shared = _SharedValues()
        states = tuple({name: shared.value(v) for name, v in s.items()} for s in data["states"])
        edges = tuple(
            Edge(int(s), int(d), str(a), tuple(shared.value(x) for x in args))
            for s, d, a, args in data["edges"]
        )
        graph = StateGraph(
            variables=tuple(data["vars"]),
            states=states,
            init=tuple(int(i) for i in data["init"]),
            edges=edges,
            spec_hash=str(data["spec_hash"]),
            spec_files=tuple(data.get("spec_files", ())),
        )
    except (OSError, EOFError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a state graph written by refimpl ({exc})") from exc
    n = len(states)
    bad = [e for e in graph.edges if not (0 <= e.source < n and 0 <= e.target < n)]
    if bad:
        raise ValueError(f"{path}: {len(bad)} edges point outside the {len(states)} states")
    return graph
