"""docs/invariants.md is a catalogue people cite; this keeps it true.

The catalogue is parsed into entries (``### ID · title`` plus ``- **Field:** value``
lines). Checked: every entry has every field and a known status; IDs are unique and
well-formed; every test it names exists (file, function/class, method); every TLA+
operator it names is defined in spec/ or proofs/, unless marked *(planned)* -- and a
planned one that now exists must lose the mark; every tour claim it names exists; and
every invariant ID mentioned anywhere in the repository is catalogued.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import attrs
import pytest

from refimpl.tour import chapters

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "docs" / "invariants.md"

PREFIXES = ("WQ", "DQ", "RL", "FIFO", "RF", "IDX", "INF", "REF", "CTRL")
ID_RE = re.compile(r"(?<![A-Za-z0-9_-])(?:" + "|".join(PREFIXES) + r")-[0-9]+(?![0-9A-Za-z_])")
HEADING_RE = re.compile(r"^### (\S+) · (.+)$")
FIELD_RE = re.compile(r"^- \*\*([^*]+):\*\* (.*)$")
TEST_REF_RE = re.compile(r"`(tests/[\w/]+\.py)::([\w:]+)`(\s*\*\(planned\)\*)?")
TLA_REF_RE = re.compile(r"`(\w+)!(\w+)`(\s*\*\(planned\)\*)?")
CLAIM_REF_RE = re.compile(r"`([0-9]{2}\.[a-z0-9-]+)`")
FIELDS = ("Promise", "TLA+", "Tests", "client-go", "Broken by", "Status")
STATUSES = ("checked", "planned", "retired")
#: Where IDs may be mentioned (and so must be catalogued).
SCANNED = [
    ("refimpl", "*.py"),
    ("spec", "*.tla"),
    ("spec", "*.cfg"),
    ("proofs", "*.tla"),
    ("proofs", "*.py"),
    ("tests", "*.py"),
    ("docs", "*.md"),
    ("benchmarks", "*.py"),
]


@attrs.frozen
class Entry:
    id: str
    title: str
    line: int
    fields: dict[str, str]

    @property
    def text(self) -> str:
        return "\n".join(self.fields.values())


def parse_catalogue(text: str) -> list[Entry]:
    entries: list[Entry] = []
    current: tuple[str, str, int] | None = None
    fields: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        heading = HEADING_RE.match(line)
        if heading or line.startswith("## "):
            if current is not None:
                entries.append(Entry(*current, fields))
            current, fields = None, {}
            if heading:
                current = (heading.group(1), heading.group(2), number)
            continue
        field = FIELD_RE.match(line)
        if field and current is not None:
            name = field.group(1)
            assert name not in fields, f"invariants.md:{number}: {name} given twice"
            fields[name] = field.group(2)
    if current is not None:
        entries.append(Entry(*current, fields))
    return entries


@functools.cache
def entries() -> list[Entry]:
    return parse_catalogue(CATALOGUE.read_text(encoding="utf-8"))


@functools.cache
def defined_names(path: Path) -> dict[str, set[str]]:
    """Top-level names of a Python file -> the method names (for classes) or {}."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names[node.name] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            }
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = set()
    return names


def missing_test(file: str, name: str) -> str | None:
    """None if ``file::name`` (name = ``func``, ``Class`` or ``Class::method``) exists,
    else what is missing."""
    path = ROOT / file
    if not path.is_file():
        return f"no file {file}"
    parts = name.split("::")
    if len(parts) > 2:
        return f"{file}::{name}: at most Class::method"
    names = defined_names(path)
    if parts[0] not in names:
        return f"{file} defines no {parts[0]}"
    if len(parts) == 2 and parts[1] not in names[parts[0]]:
        return f"{file}: {parts[0]} has no method {parts[1]}"
    return None


def tla_defines(module: str, operator: str) -> bool | None:
    """True/False if ``module`` exists (in spec/ or proofs/) and does/doesn't define
    ``operator``, itself or through a module it EXTENDS (as ``Informer`` has the
    properties of ``InformerCommon``); None if there is no such module."""
    for folder in ("spec", "proofs"):
        path = ROOT / folder / f"{module}.tla"
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            pattern = rf"^[ \t]*{re.escape(operator)}[ \t]*(\([^)]*\))?[ \t]*=="
            if re.search(pattern, text, re.MULTILINE):
                return True
            extends = re.search(r"^EXTENDS\s+(\w+(?:\s*,\s*\w+)*)", text, re.MULTILINE)
            names = re.split(r"\s*,\s*", extends.group(1)) if extends else []
            return any(tla_defines(name, operator) for name in names)
    return None


@functools.cache
def claim_ids() -> frozenset[str]:
    return frozenset(c.id for ch in chapters() for exp in ch.experiments for c in exp.run())


# -- the catalogue's own shape ---------------------------------------------------------


def test_catalogue_parses_into_entries_of_every_prefix_family() -> None:
    found = {e.id.split("-")[0] for e in entries()}
    assert {"WQ", "DQ", "RL"} <= found, found
    assert len(entries()) >= 30


def test_ids_are_well_formed_and_unique() -> None:
    seen: dict[str, int] = {}
    for e in entries():
        assert ID_RE.fullmatch(e.id), f"invariants.md:{e.line}: malformed ID {e.id!r}"
        assert e.id not in seen, f"{e.id} defined at lines {seen[e.id]} and {e.line}"
        seen[e.id] = e.line


def test_every_entry_has_every_field_and_a_known_status() -> None:
    for e in entries():
        missing = [f for f in FIELDS if not e.fields.get(f, "").strip()]
        assert not missing, f"{e.id} (invariants.md:{e.line}) lacks {missing}"
        status = e.fields["Status"].strip()
        assert status in STATUSES, f"{e.id}: status {status!r} not one of {STATUSES}"


def test_checked_entries_name_at_least_one_test() -> None:
    for e in entries():
        if e.fields["Status"].strip() != "checked":
            continue
        refs = [m for m in TEST_REF_RE.finditer(e.fields["Tests"]) if not m.group(3)]
        assert refs, f"{e.id} is 'checked' but names no existing test"


def test_workqueue_families_are_fully_checked() -> None:
    for e in entries():
        if e.id.split("-")[0] in ("WQ", "DQ", "RL"):
            assert e.fields["Status"].strip() == "checked", f"{e.id} should be checked"


# -- references out of the catalogue ----------------------------------------------------


def test_named_tests_exist_and_planned_ones_do_not_yet() -> None:
    problems: list[str] = []
    for e in entries():
        for m in TEST_REF_RE.finditer(e.text):
            file, name, planned = m.group(1), m.group(2), bool(m.group(3))
            missing = missing_test(file, name)
            if planned and missing is None:
                problems.append(f"{e.id}: {file}::{name} now exists; drop '(planned)'")
            elif not planned and missing is not None:
                problems.append(f"{e.id}: {missing}")
    assert not problems, "\n".join(problems)


def test_named_tla_operators_exist_and_planned_ones_do_not_yet() -> None:
    problems: list[str] = []
    for e in entries():
        for m in TLA_REF_RE.finditer(e.fields["TLA+"]):
            module, operator, planned = m.group(1), m.group(2), bool(m.group(3))
            defined = tla_defines(module, operator)
            if planned and defined:
                problems.append(f"{e.id}: {module}!{operator} now exists; drop '(planned)'")
            elif not planned and not defined:
                where = "no module" if defined is None else "no definition"
                problems.append(f"{e.id}: {module}!{operator}: {where} in spec/ or proofs/")
    assert not problems, "\n".join(problems)


def test_named_claims_exist() -> None:
    known = claim_ids()
    problems = [
        f"{e.id}: no tour claim {m.group(1)}"
        for e in entries()
        for m in CLAIM_REF_RE.finditer(e.text)
        if m.group(1) not in known
    ]
    assert not problems, "\n".join(problems)


# -- references into the catalogue ------------------------------------------------------


def mentioned_ids() -> dict[str, list[str]]:
    """Every invariant ID mentioned in the repository -> where (file:line)."""
    found: dict[str, list[str]] = {}
    for folder, pattern in SCANNED:
        for path in sorted((ROOT / folder).rglob(pattern)):
            if ".venv" in path.parts or path == CATALOGUE:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for m in ID_RE.finditer(line):
                    where = f"{path.relative_to(ROOT)}:{number}"
                    found.setdefault(m.group(0), []).append(where)
    return found


def test_every_mentioned_id_is_catalogued() -> None:
    catalogued = {e.id for e in entries()}
    unknown = {i: where for i, where in mentioned_ids().items() if i not in catalogued}
    assert not unknown, "IDs used but not in docs/invariants.md:\n" + "\n".join(
        f"  {i}: {', '.join(where[:5])}" for i, where in sorted(unknown.items())
    )


# -- the checker can fail ---------------------------------------------------------------

SAMPLE = """\
## WQ — sample

### WQ-1 · A promise

- **Promise:** words.
- **TLA+:** `WorkQueue!NoDuplicatesInQueue`, `WorkQueue!NotYet` *(planned)*
- **Tests:** `tests/test_workqueue_core.py::QueueCoreMachine::no_item_twice_in_queue`
- **client-go:** words.
- **Broken by:** words.
- **Status:** checked

### WQ-2 · Another

- **Promise:** words.
"""


def test_parser_reads_fields_and_stops_at_sections() -> None:
    parsed = parse_catalogue(SAMPLE)
    assert [e.id for e in parsed] == ["WQ-1", "WQ-2"]
    assert parsed[0].fields["Status"] == "checked"
    assert "Status" not in parsed[1].fields


@pytest.mark.parametrize(
    ("file", "name", "ok"),
    [
        ("tests/test_workqueue_core.py", "QueueCoreMachine::no_item_twice_in_queue", True),
        ("tests/test_workqueue_core.py", "TestQueueCoreMachine", True),
        ("tests/test_workqueue_core.py", "QueueCoreMachine::no_such_invariant", False),
        ("tests/test_workqueue_core.py", "test_no_such_test", False),
        ("tests/no_such_file.py", "test_anything", False),
    ],
)
def test_test_lookup_can_fail(file: str, name: str, ok: bool) -> None:
    assert (missing_test(file, name) is None) == ok


def test_tla_lookup_can_fail() -> None:
    assert tla_defines("WorkQueue", "NoDuplicatesInQueue") is True
    assert tla_defines("WorkQueue", "Get") is True  # an action with a parameter
    assert tla_defines("WorkQueue", "NoSuchOperator") is False
    assert tla_defines("NoSuchModule", "Anything") is None
    # Through EXTENDS: Informer.tla has InformerCommon.tla's properties, not its own.
    assert tla_defines("Informer", "Converges") is True
    assert tla_defines("Informer", "NoSuchOperator") is False


def test_id_pattern_ignores_lookalikes() -> None:
    text = "see WQ-3 and RF-4; not RealFIFO-only, XWQ-1, WQ-, or WQ-1a"
    assert ID_RE.findall(text) == ["WQ-3", "RF-4"]
