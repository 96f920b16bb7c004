"""Conformance testing: drive another implementation and the reference side by side.

An *adapter* is a child process that speaks the driver protocol (JSON lines on its
stdin/stdout, :mod:`refimpl.conformance.protocol`, documented in ``docs/protocol.md``).
``refimpl conform -- COMMAND`` starts it, generates operation sequences with Hypothesis
(:mod:`refimpl.conformance.search.machines`), sends each operation to the adapter and to the
in-process reference (:mod:`refimpl.conformance.reference.dispatch`), and reports the first
disagreement as a shrunk, numbered, replayable sequence (:mod:`refimpl.conformance.search.run`).
Nothing here blocks on the thing under test without a timeout
(:mod:`refimpl.conformance.process`).
"""

from refimpl.conformance.protocol import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION"]
