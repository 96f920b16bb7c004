"""Reading TLC: its printed values, its console output and its dot dumps.

Runs without TLC: the inputs are real TLC output captured in tests/fixtures/tlc/
(cases.json lists each file with the exit code TLC returned; the toy specs beside
them reproduce the runs).
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.tla.graph import StateGraph, load_graph, parse_dot, write_graph
from refimpl.tla.manifest import Model, check_outcome
from refimpl.tla.output import Status, parse_duration, parse_output
from refimpl.tla.runner import definition_at
from refimpl.tla.values import (
    Fn,
    ModelValue,
    TlaParseError,
    Value,
    format_value,
    parse_value,
    parse_values,
    value_from_json,
    value_to_json,
)

FIXTURES = Path(__file__).parent / "fixtures" / "tlc"
CASES: dict[str, int] = json.loads((FIXTURES / "cases.json").read_text())["cases"]


def run(name: str) -> tuple[str, int]:
    return (FIXTURES / name).read_text(), CASES[name]


# -- values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("-1", -1),
        ("TRUE", True),
        ("FALSE", False),
        ('"a \\"q\\" \\\\ b"', 'a "q" \\ b'),
        ("{}", frozenset()),
        ("{{}, {1, 2}}", frozenset({frozenset(), frozenset({1, 2})})),
        ("<<>>", ()),
        ('<<"x", <<1>>>>', ("x", (1,))),
        ("[a |-> 1, b |-> {2}]", Fn({"a": 1, "b": frozenset({2})})),
        ('(3 :> <<"x">> @@ 7 :> <<>>)', Fn({3: ("x",), 7: ()})),
        ("1..3", frozenset({1, 2, 3})),
        ("M", ModelValue("M")),
        ("<< [ key |-> 1,\n     rv |-> -1 ] >>", (Fn({"key": 1, "rv": -1}),)),
    ],
)
def test_parse_value(text: str, expected: Value) -> None:
    assert parse_value(text) == expected


@pytest.mark.parametrize("text", ["{1, 2", "<<1>> 2", "[1 |-> 2]", "(1 :> )", "@", ""])
def test_parse_value_rejects_malformed_text(text: str) -> None:
    with pytest.raises(TlaParseError):
        parse_value(text)


def test_parse_values_reads_action_arguments() -> None:
    assert parse_values('"w1", 3, {"a"}') == ("w1", 3, frozenset({"a"}))
    assert parse_values("") == ()


def test_record_equals_function_on_strings() -> None:
    # In TLA+ a record is a function on strings; TLC prints both the same way.
    assert parse_value('[w1 |-> "a"]') == parse_value('("w1" :> "a")')


def test_fn_is_an_immutable_hashable_mapping() -> None:
    f = Fn({"a": 1})
    g = f.updated("a", 2)
    assert f["a"] == 1 and g["a"] == 2
    assert len({f, Fn({"a": 1}), g}) == 2
    assert not Fn({1: 2}).is_record() and f.is_record()


scalars = st.one_of(
    st.integers(-5, 5),
    st.booleans(),
    st.text(alphabet='ab "\\\n', max_size=4),
    st.sampled_from([ModelValue("m1"), ModelValue("m2")]),
)
values: st.SearchStrategy[Value] = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.frozensets(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["a", "b", "rv"]), inner, min_size=1, max_size=3).map(Fn),
        st.dictionaries(st.integers(0, 3), inner, min_size=1, max_size=3).map(Fn),
    ),
    max_leaves=10,
)


def _no_bool_int_mix(value: Value) -> bool:
    # Python's True == 1 would merge them inside a set; TLA+ never compares them.
    seen: set[type] = set()

    def walk(v: Value) -> None:
        if isinstance(v, bool | int):
            seen.add(type(v))
        elif isinstance(v, frozenset | tuple):
            for x in v:
                walk(x)
        elif isinstance(v, Fn):
            for k, x in v.items():
                walk(k)
                walk(x)

    walk(value)
    return len(seen) < 2


@settings(max_examples=200, deadline=None)
@given(values.filter(_no_bool_int_mix))
def test_print_parse_and_json_round_trip(value: Value) -> None:
    assert parse_value(format_value(value)) == value
    assert value_from_json(json.loads(json.dumps(value_to_json(value)))) == value


# -- console output -----------------------------------------------------------------


def test_pass_run() -> None:
    result = parse_output(*run("MCWorkQueue.out"))
    assert result.status is Status.PASS and result.ok
    assert (result.distinct_states, result.states_generated, result.depth) == (318, 1279, 10)
    assert result.version is not None and result.version.startswith("2026.")
    assert result.seconds is not None and result.trace == ()


def test_invariant_violation_with_wrapped_values() -> None:
    result = parse_output(*run("Values.out"))
    assert result.status is Status.INVARIANT_VIOLATED and result.violated == "Small"
    assert [s.number for s in result.trace] == [1, 2, 3]
    assert [s.action for s in result.trace] == [None, "Step", "Step"]
    assert result.trace[1].args == (1,)
    first, last = result.trace[0].state, result.trace[2].state
    assert first["n"] == -1 and first["t"] == frozenset({1, 2, 3})
    assert first["r"] == Fn({"name": 'a "quoted" \\ name', "ok": True, "m": ModelValue("M")})
    assert first["f"] == Fn({3: ("x",), 7: ()})
    queue = last["q"]
    assert isinstance(queue, tuple) and len(queue) == 2
    assert queue[1] == Fn(
        {
            "key": "k",
            "rv": 0,
            "deleted": False,
            "payload": ("a long string to make TLC wrap this line", 0),
        }
    )


def test_liveness_violation_ending_in_stuttering() -> None:
    result = parse_output(*run("MCWorkQueueDoneForgets.out"))
    assert result.status is Status.PROPERTY_VIOLATED
    assert result.violated == "DirtyKeysAreProcessed"
    assert result.distinct_states == 492 and result.depth == 14
    assert result.trace[0].action is None and result.trace[-1].action == "Stuttering"
    assert ("DoneForgets", ("w1",)) in [(s.action, s.args) for s in result.trace]
    # The key re-added in flight stays dirty after the forgetful Done, to the end.
    assert "a" in result.trace[-2].state["dirty"]  # type: ignore[operator]
    assert set(result.trace[1].state) == {
        "holding",
        "dirty",
        "stopped",
        "queue",
        "drain",
        "processing",
        "shuttingDown",
        "waiting",
        "drainer",
    }


def test_liveness_violation_as_a_lasso() -> None:
    result = parse_output(*run("Lasso.out"))
    assert result.status is Status.PROPERTY_VIOLATED and result.violated == "Reaches5"
    assert [s.state.get("x") for s in result.trace[:3]] == [0, 1, 2]
    closing = result.trace[-1]
    assert closing.back_to == 1 and closing.action == "Next" and closing.number == 4


def test_deadlock() -> None:
    result = parse_output(*run("Stuck.out"))
    assert result.status is Status.DEADLOCK and result.status.is_violation
    assert [s.state["x"] for s in result.trace] == [0, 1, 2]


def test_parse_error() -> None:
    result = parse_output(*run("Broken.out"))
    assert result.status is Status.ERROR and not result.ok
    assert result.message is not None and "Undefined" in result.message


def test_empty_output_is_an_error_not_a_pass() -> None:
    result = parse_output("", 1)
    assert result.status is Status.ERROR and result.message


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("00s", 0.0), ("01s", 1.0), ("02min 05s", 125.0), ("01h 02min", 3720.0), ("?", None)],
)
def test_parse_duration(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


# -- dot dumps and stored graphs --------------------------------------------------


def test_parse_dot_and_store_round_trip(tmp_path: Path) -> None:
    graph = parse_dot((FIXTURES / "Values.dot").read_text())
    assert len(graph.states) == 4 and graph.init == (0,)
    assert [(e.source, e.target, e.label) for e in graph.edges] == [
        (0, 1, "Step(1)"),
        (1, 2, "Step(1)"),
        (2, 3, "Step(1)"),
    ]
    assert [s["n"] for s in graph.states] == [-1, 0, 1, 2]
    assert graph.states[0]["r"] == Fn(
        {"name": 'a "quoted" \\ name', "ok": True, "m": ModelValue("M")}
    )
    path = tmp_path / "g.json.gz"
    write_graph(graph, path)
    first = path.read_bytes()
    write_graph(graph, path)
    assert path.read_bytes() == first, "graph files must be byte-for-byte repeatable"
    again: StateGraph = load_graph(path)
    assert again.states == graph.states and again.edges == graph.edges


def test_load_graph_rejects_garbage(tmp_path: Path) -> None:
    path = tmp_path / "bad.json.gz"
    path.write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="not a state graph"):
        load_graph(path)


def test_parse_dot_rejects_unlabelled_edge_targets() -> None:
    text = '1 [label="/\\\\ x = 0",style = filled]\n1 -> 2 [label="Next",color="black"];\n'
    with pytest.raises(TlaParseError, match="never labels"):
        parse_dot(text)


def test_action_property_violation_is_reported_by_place() -> None:
    result = parse_output(*run("MCWorkQueueRefinementAddInFlight.out"))
    assert result.status is Status.PROPERTY_VIOLATED
    assert result.location == ("AbstractWorkQueue", 57, 17)
    # Two workers end up holding "a": the step no abstract Take allows.
    holding = result.trace[-1].state["holding"]
    assert holding == Fn({"w1": "a", "w2": "a"})


def test_definition_at_names_the_violated_action_property() -> None:
    spec = Path(__file__).resolve().parents[1] / "spec"
    source = (spec / "AbstractWorkQueue.tla").read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.startswith("Spec =="))
    assert definition_at(("AbstractWorkQueue", line, 17), [spec]) == "AbstractWorkQueue!Spec"
    assert definition_at(("NoSuchModule", 1, 1), [spec]) is None


# -- named action and temporal property violations -----------------------------------


def test_named_action_property_violation() -> None:
    result = parse_output(*run("WrapsAction.out"))
    assert result.status is Status.PROPERTY_VIOLATED
    assert result.violated == "NeverDown" and result.violated_all == ("NeverDown",)
    assert result.location is None
    # The counter wraps from 2 back to 0: the step that breaks [][x' >= x]_x.
    assert [s.state["x"] for s in result.trace] == [0, 1, 2, 0]


def test_two_temporal_properties_violated_by_one_counterexample() -> None:
    result = parse_output(*run("WrapsTwo.out"))
    assert result.status is Status.PROPERTY_VIOLATED
    assert result.violated_all == ("Reaches5", "Reaches6")
    assert result.names_violated("Reaches6") and not result.names_violated("Reaches7")
    assert result.trace and result.trace[0].action is None


def test_three_temporal_properties_violated_by_one_counterexample() -> None:
    result = parse_output(*run("WrapsThree.out"))
    assert result.status is Status.PROPERTY_VIOLATED
    assert result.violated_all == ("Reaches5", "Reaches6", "Reaches7")


def test_single_violations_are_listed_alone() -> None:
    assert parse_output(*run("Values.out")).violated_all == ("Small",)
    assert parse_output(*run("Lasso.out")).violated_all == ("Reaches5",)


@pytest.mark.parametrize(
    ("name", "prop", "ok"),
    [
        ("WrapsAction.out", "NeverDown", True),
        ("WrapsTwo.out", "Reaches5", True),
        ("WrapsTwo.out", "Reaches6", True),
        ("WrapsThree.out", "Reaches7", True),
        ("WrapsTwo.out", "Reaches7", False),
        ("WrapsAction.out", "Reaches5", False),
    ],
)
def test_expected_violation_model_reads_named_properties(name: str, prop: str, ok: bool) -> None:
    model = Model(name="M", module="M.tla", cfg="M.cfg", expect="violation", property=prop)
    problems = check_outcome(model, parse_output(*run(name)))
    assert (problems == []) is ok, problems


def test_figures_are_compared_only_when_exact() -> None:
    result = parse_output(*run("MCWorkQueue.out"))
    model = Model(
        name="WQ", module="M.tla", cfg="M.cfg", expect="pass", distinct_states=318, depth=9
    )
    assert check_outcome(model, result) == ["depth: manifest says 9, TLC found 10"]
    assert check_outcome(model, result, exact=False) == []
    wrong = attrs.evolve(model, distinct_states=317)
    assert check_outcome(wrong, result, exact=False) == [
        "distinct_states: manifest says 317, TLC found 318"
    ]


def test_violation_figures_are_compared_when_exact() -> None:
    result = parse_output(*run("MCWorkQueueDoneForgets.out"))
    model = Model(
        name="DF",
        module="M.tla",
        cfg="M.cfg",
        expect="violation",
        property="DirtyKeysAreProcessed",
        distinct_states=492,
        depth=14,
    )
    assert check_outcome(model, result) == []
    stopped_elsewhere = attrs.evolve(model, distinct_states=500, depth=15)
    assert check_outcome(stopped_elsewhere, result) == [
        "distinct_states: manifest says 500, TLC found 492",
        "depth: manifest says 15, TLC found 14",
    ]
    assert check_outcome(stopped_elsewhere, result, exact=False) == []
