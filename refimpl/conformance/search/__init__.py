"""The random search: Hypothesis generates requests, the adapter and the reference answer.

- :mod:`~refimpl.conformance.search.machines`: the generators for the pieces (queues,
  store, FIFOs); :mod:`~refimpl.conformance.search.informer_machine`: the generator that
  plays the API server for the ``informer`` component;
- :mod:`~refimpl.conformance.search.compare`: the adapter's answer against the reference's;
- :mod:`~refimpl.conformance.search.invariants` and
  :mod:`~refimpl.conformance.search.informer_invariants`: docs/invariants.md checked on the
  adapter's answers alone;
- :mod:`~refimpl.conformance.search.run`: the run loop, the minimizer and replay;
- :mod:`~refimpl.conformance.search.report`: the numbered trace, the failure report and
  saved traces.
"""
