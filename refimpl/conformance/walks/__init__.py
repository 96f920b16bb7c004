"""Spec-driven walks: follow every edge of a TLA+ model's state graph in an adapter.

Modules, from the entry point down:

- :mod:`~refimpl.conformance.walks.run`: ``refimpl conform --from-spec``: load a
  model's graph, the handshake, :func:`~refimpl.conformance.walks.run.drive` one walk,
  print the verdicts and give the exit status;
- :mod:`~refimpl.conformance.walks.report`: what a walk reports (coverage, the first
  deviation and its path, the verdict);
- :mod:`~refimpl.conformance.walks.walker`: the walker: the steps of one run, the
  belief while an open order is undecided, the sweep, shortening a deviation's path;
- :mod:`~refimpl.conformance.walks.planner`: the planner: covering walks (a directed
  Chinese postman with reset) from a minimum-cost flow and an Euler circuit;
- :mod:`~refimpl.conformance.walks.drivable`: a graph's drivable steps indexed for
  search, and which edges a walk has taken;
- :mod:`~refimpl.conformance.walks.models`: ``SPEC_MAPPINGS``, every walked model by name;
- the request mappings, how each spec action becomes protocol requests and what its
  answers must be: :mod:`~refimpl.conformance.walks.spec_mapping` (the shared shape,
  ``SpecMapping``, and shared parts), :mod:`~refimpl.conformance.walks.workqueue_mapping`,
  :mod:`~refimpl.conformance.walks.fifo_mapping`,
  :mod:`~refimpl.conformance.walks.informer_mapping`,
  :mod:`~refimpl.conformance.walks.informer_resync_mapping`,
  :mod:`~refimpl.conformance.walks.indexer_mapping`.
"""
