"""Spec-driven walks: follow every edge of a TLA+ model's state graph in an adapter.

- :mod:`~refimpl.conformance.walks.mapping`: how each spec action becomes protocol
  requests and what its answers must be (one mapping per graphed model);
- :mod:`~refimpl.conformance.walks.walker`: the walk itself, the planner and
  ``refimpl conform --from-spec``.
"""
