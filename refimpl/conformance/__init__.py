"""Conformance testing: drive another implementation and the reference side by side.

An *adapter* is a child process that speaks the driver protocol (JSON lines on its
stdin/stdout, documented in ``docs/protocol.md``). Nothing here blocks on the thing
under test without a timeout. The modules, by job:

- the protocol and the adapter process, which every other part uses:
  :mod:`~refimpl.conformance.protocol` (message shapes, component methods, checks; no
  I/O) and :mod:`~refimpl.conformance.process` (the child process, every wait bounded);
- :mod:`refimpl.conformance.reference`: what answers for refimpl, every request carried
  out on refimpl's own cores (``ReferenceDriver``), and the reference as an adapter
  process (``python -m refimpl.conformance.reference.adapter``);
- :mod:`refimpl.conformance.search`: ``refimpl conform``'s random search: the
  generators (declared tables read by one Hypothesis-driven generator per kind), the
  comparison and the invariant checks, the session with the adapter, the minimizer,
  replay and the reports;
- :mod:`refimpl.conformance.walks`: ``refimpl conform --from-spec``: the walk along
  every edge of a TLA+ model's state graph, the planner, and one request mapping per
  spec;
- :mod:`refimpl.conformance.wire`: ``refimpl conform --wire``: the informer over HTTP
  against a :class:`~refimpl.wire.server.WireServer` the harness owns, and the
  reference's wire adapter;
- :mod:`refimpl.conformance.peers`: ``refimpl peers``: the peer manifests, building and
  checking each peer, and rendering docs/peers.md;
- :mod:`~refimpl.conformance.cli`: the ``refimpl conform`` command line.

Imports point down that list: peers use wire, walks and search, wire uses search, walks and
search use the reference, everything uses the protocol; no cycle (tests/test_layering.py).
"""

from refimpl.conformance.protocol import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION"]
