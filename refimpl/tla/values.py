"""TLA+ values as TLC prints them, read into Python values and written back.

Owns no state. Covers the subset the specs in spec/ use: integers, strings, booleans,
sets ``{..}``, sequences ``<<..>>``, records ``[a |-> 1]``, functions
``(k :> v @@ ...)``, intervals ``1..3`` and model values. Python forms: ``int``,
``str``, ``bool``, ``frozenset``, ``tuple``, :class:`Fn` (records and functions: in TLA+
a record *is* a function on strings) and :class:`ModelValue`. Everything is hashable,
so states can be dictionary keys.

A JSON form (for the committed state graphs) keeps the distinctions JSON lacks:
sequences are arrays, records are objects, and sets, other functions and model values
are tagged objects ``{"$set": [...]}``, ``{"$fn": [[k, v], ...]}``, ``{"$mv": name}``
(``$`` cannot start a TLA+ field name, so a tag never collides with a record).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeAlias

import attrs

__all__ = [
    "Fn",
    "ModelValue",
    "TlaParseError",
    "Value",
    "format_value",
    "parse_value",
    "parse_values",
    "value_from_json",
    "value_to_json",
]


@attrs.frozen(order=True)
class ModelValue:
    """A TLC model value: equal only to itself, printed as its bare name."""

    name: str

    def __str__(self) -> str:
        return self.name


Value: TypeAlias = "int | str | bool | frozenset[Value] | tuple[Value, ...] | Fn | ModelValue"


class Fn(Mapping["Value", "Value"]):
    """An immutable, hashable TLA+ function (a record when every key is a string)."""

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[Any, Value] | None = None) -> None:
        self._items: dict[Value, Value] = dict(items or {})
        self._hash: int | None = None

    def __getitem__(self, key: Value) -> Value:
        return self._items[key]

    def __iter__(self) -> Iterator[Value]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Fn):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        return f"Fn({self._items!r})"

    def is_record(self) -> bool:
        """True when TLC would print this as a record: non-empty, all keys field names."""
        return bool(self._items) and all(
            isinstance(k, str) and _FIELD.fullmatch(k) for k in self._items
        )

    def updated(self, key: Value, value: Value) -> Fn:
        """``[f EXCEPT ![key] = value]`` (or a new key)."""
        items = dict(self._items)
        items[key] = value
        return Fn(items)


class TlaParseError(ValueError):
    """The text is not a TLA+ value in the subset this module reads."""


_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<int>-?\d+)
      | (?P<op><<|>>|\|->|:>|@@|\.\.|[{}\[\](),])
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise TlaParseError(f"cannot read a TLA+ value at {text[pos : pos + 20]!r}")
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> str | None:
        j = self.i + ahead
        return self.tokens[j][1] if j < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise TlaParseError(f"unexpected end of TLA+ value in {self.text!r}")
        tok = self.tokens[self.i]
        if expected is not None and (tok[0] != "op" or tok[1] != expected):
            raise TlaParseError(f"expected {expected!r}, found {tok[1]!r} in {self.text!r}")
        self.i += 1
        return tok

    def items(self, close: str) -> list[Value]:
        values: list[Value] = []
        if self.peek() == close:
            self.take(close)
            return values
        while True:
            values.append(self.value())
            if self.peek() == ",":
                self.take(",")
                continue
            self.take(close)
            return values

    def value(self) -> Value:
        kind, text = self.take()
        result: Value
        if kind == "str":
            result = _unescape(text[1:-1])
        elif kind == "int":
            result = int(text)
        elif kind == "ident":
            if text == "TRUE":
                result = True
            elif text == "FALSE":
                result = False
            else:
                result = ModelValue(text)
        elif text == "{":
            result = frozenset(self.items("}"))
        elif text == "<<":
            result = tuple(self.items(">>"))
        elif text == "[":
            result = self.record()
        elif text == "(":
            result = self.function()
        else:
            raise TlaParseError(f"unexpected {text!r} in TLA+ value {self.text!r}")
        if self.peek() == "..":
            self.take("..")
            high = self.value()
            if not isinstance(result, int) or not isinstance(high, int):
                raise TlaParseError(f"an interval needs integer bounds: {self.text!r}")
            return frozenset(range(result, high + 1))
        return result

    def record(self) -> Fn:
        fields: dict[Value, Value] = {}
        if self.peek() == "]":
            self.take("]")
            return Fn(fields)
        while True:
            kind, name = self.take()
            if kind != "ident":
                raise TlaParseError(f"expected a field name, found {name!r} in {self.text!r}")
            self.take("|->")
            fields[name] = self.value()
            if self.peek() == ",":
                self.take(",")
                continue
            self.take("]")
            return Fn(fields)

    def function(self) -> Fn:
        pairs: dict[Value, Value] = {}
        while True:
            key = self.value()
            self.take(":>")
            pairs[key] = self.value()
            if self.peek() == "@@":
                self.take("@@")
                continue
            self.take(")")
            return Fn(pairs)


def parse_value(text: str) -> Value:
    """Read one TLA+ value printed by TLC (whitespace and line breaks are ignored)."""
    parser = _Parser(text)
    result = parser.value()
    if parser.i != len(parser.tokens):
        raise TlaParseError(f"trailing text after a TLA+ value: {text!r}")
    return result


def parse_values(text: str) -> tuple[Value, ...]:
    """Read a comma-separated list of values, e.g. an action's arguments ``"a", 2``."""
    parser = _Parser(text)
    if not parser.tokens:
        return ()
    values = [parser.value()]
    while parser.peek() == ",":
        parser.take(",")
        values.append(parser.value())
    if parser.i != len(parser.tokens):
        raise TlaParseError(f"trailing text after TLA+ values: {text!r}")
    return tuple(values)


def _sort_key(value: Value) -> tuple[int, str]:
    # Any total order works for printing; TLC's own order is not needed for equality.
    return (0 if isinstance(value, bool) else 1, format_value(value))


def format_value(value: Value) -> str:
    """Print a value in TLC's syntax (sets and functions in a canonical order)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        body = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{body}"'
    if isinstance(value, ModelValue):
        return value.name
    if isinstance(value, frozenset):
        return "{" + ", ".join(format_value(v) for v in sorted(value, key=_sort_key)) + "}"
    if isinstance(value, tuple):
        return "<<" + ", ".join(format_value(v) for v in value) + ">>"
    if isinstance(value, Fn):
        keys = sorted(value, key=_sort_key)
        if not keys:
            return "<<>>"
        if value.is_record():
            return "[" + ", ".join(f"{k} |-> {format_value(value[k])}" for k in keys) + "]"
        pairs = (f"{format_value(k)} :> {format_value(value[k])}" for k in keys)
        return "(" + " @@ ".join(pairs) + ")"
    raise TypeError(f"not a TLA+ value: {type(value).__name__}: {value!r}")


def value_to_json(value: Value) -> Any:
    """The JSON form (see the module docstring); sets and functions in canonical order."""
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, ModelValue):
        return {"$mv": value.name}
    if isinstance(value, frozenset):
        return {"$set": [value_to_json(v) for v in sorted(value, key=_sort_key)]}
    if isinstance(value, tuple):
        return [value_to_json(v) for v in value]
    if isinstance(value, Fn):
        keys = sorted(value, key=_sort_key)
        if value.is_record():
            return {str(k): value_to_json(value[k]) for k in keys}
        return {"$fn": [[value_to_json(k), value_to_json(value[k])] for k in keys]}
    raise TypeError(f"not a TLA+ value: {type(value).__name__}: {value!r}")


def value_from_json(data: Any) -> Value:
    """Inverse of :func:`value_to_json`."""
    if isinstance(data, bool | int | str):
        return data
    if isinstance(data, list):
        return tuple(value_from_json(v) for v in data)
    if isinstance(data, dict):
        if len(data) == 1:
            ((tag, body),) = data.items()
            if tag == "$set":
                return frozenset(value_from_json(v) for v in body)
            if tag == "$fn":
                return Fn({value_from_json(k): value_from_json(v) for k, v in body})
            if tag == "$mv":
                return ModelValue(str(body))
        return Fn({str(k): value_from_json(v) for k, v in data.items()})
    raise TypeError(f"not the JSON form of a TLA+ value: {json.dumps(data)[:80]}")
