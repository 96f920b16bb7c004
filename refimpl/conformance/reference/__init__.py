"""The reference side: what answers for refimpl when an adapter is checked.

Every request the harness sends to an adapter it also carries out here, on refimpl's own
cores, so the two answers can be compared. Nothing here blocks or reads the wall clock.

- :mod:`~refimpl.conformance.reference.dispatch`: ``ReferenceDriver``, one request in,
  one answer out, dispatched by ``op`` and by component; ``Parts``, what it is built
  from; ``reference_methods``, the methods each component's handler table carries out;
- :mod:`~refimpl.conformance.reference.workqueue`: ``queue``, ``delaying_queue``,
  ``rate_limiting_queue`` and ``rate_limiter``, and the limiters built from a spec;
- :mod:`~refimpl.conformance.reference.cache`: ``store``, ``delta_fifo``, ``real_fifo``;
- :mod:`~refimpl.conformance.reference.informer`: the whole informer on a scripted
  lister-watcher;
- :mod:`~refimpl.conformance.reference.adapter`: the reference as an adapter process
  (``python -m refimpl.conformance.reference.adapter``).
"""
