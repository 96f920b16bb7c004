"""One generated example as a Hypothesis test: ``create``, steps, then the teardown.

The search's two generators (:mod:`~refimpl.conformance.search.machines` and
:mod:`~refimpl.conformance.search.informer_machine`) subclass :class:`Generator`, and
:func:`as_test` turns one into a ``@given(st.data())`` test whose every run is one
example. Each choice is drawn straight from the test's choice sequence
(``data.conjecture_data``): Hypothesis' ``RuleBasedStateMachine`` spent most of the
harness's time per step choosing the rule, making a fresh ``st.data()`` object and
keeping each draw for its printout, none of which the search uses (a finding's report is
its trace). As in Hypothesis' own stateful runner, each step is one span with a rare stop
coin before it, so its shrinker drops whole steps and cuts an example short. Ports
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.internal.conjecture.data import ConjectureData

__all__ = ["Generator", "as_test"]

T = TypeVar("T")

#: The span label of one step (any constant: the shrinker compares labels).
STEP_LABEL = 0x5EA5C4
#: The chance that an example stops before a step (Hypothesis' stateful runner's): nearly
#: every example runs all its steps, and shrinking can turn the coin to stop early.
STOP_CHANCE = 2**-16


class Generator:
    """A generator of examples. :func:`as_test` builds one per example (``__init__``
    begins the example), calls :meth:`create` with ``create_args`` as drawn, then
    :meth:`step` up to ``steps - 1`` times (``create`` counts as a step), then
    :meth:`teardown`, also after a failure."""

    #: What ``create`` is called with (keyword arguments).
    create_args: ClassVar[st.SearchStrategy[dict[str, Any]]]

    def __init__(self, data: ConjectureData) -> None:
        self.data = data

    def draw(self, source: st.SearchStrategy[T] | list[T]) -> T:
        """A value of ``source``: a strategy's, or one of a list's elements (see
        :meth:`choose`)."""
        if isinstance(source, list):
            return self.choose(source)
        return self.data.draw(source)

    def choose(self, options: Sequence[T]) -> T:
        """One of ``options``, as ``st.sampled_from(options)`` would draw it (shrinking
        towards the first) without a strategy's overhead."""
        return options[self.data.draw_integer(0, len(options) - 1)]

    def coin(self) -> bool:
        """True or False, as ``st.booleans()`` would draw it."""
        return self.data.draw_boolean()

    def create(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    def step(self) -> None:
        raise NotImplementedError

    def teardown(self) -> None:
        raise NotImplementedError


def as_test(generator: type[Generator], steps: int) -> Callable[[], None]:
    """The Hypothesis test (to decorate with settings and a seed, then call) whose runs
    are ``generator``'s examples of at most ``steps`` steps, ``create`` included."""
    create_args = generator.create_args

    @given(st.data())
    def example(data: st.DataObject) -> None:
        choices = data.conjecture_data
        machine = generator(choices)
        try:
            machine.create(**choices.draw(create_args))
            for _ in range(steps - 1):
                choices.start_span(STEP_LABEL)
                stop = choices.draw_boolean(p=STOP_CHANCE)
                if not stop:
                    machine.step()
                choices.stop_span()
                if stop:
                    break
        finally:
            machine.teardown()

    return example
