"""The random search: Hypothesis generates requests, the adapter and the reference answer.

Modules, in layers: each imports only modules listed before it.

- :mod:`~refimpl.conformance.search.config`: what a run is asked and gives back
  (``Config``, ``Step``, ``Failure``, ``ComponentResult``, exit statuses) and the
  exceptions that end an example or a run;
- :mod:`~refimpl.conformance.search.compare`: the adapter's answer against the reference's;
- :mod:`~refimpl.conformance.search.outcome`: the run's results as JSON (``--json``);
- :mod:`~refimpl.conformance.search.history`: what an honest API server and reflector
  send (``--inputs realistic``), the check that a trace still looks so, and the rare
  informer shapes;
- :mod:`~refimpl.conformance.search.report`: the numbered trace, the failure report and
  saved traces;
- :mod:`~refimpl.conformance.search.invariants` and
  :mod:`~refimpl.conformance.search.informer_invariants`: docs/invariants.md checked on the
  adapter's answers alone;
- :mod:`~refimpl.conformance.search.session`: the adapter for the length of a run
  (``RunContext``) and one generated sequence (``Example``: each request sent to both
  sides, compared, checked, recorded);
- :mod:`~refimpl.conformance.search.generation`: one generated example as a Hypothesis
  test (``create``, steps, teardown), each choice drawn straight from its choice sequence;
- :mod:`~refimpl.conformance.search.machines`: the generator for the pieces (queues,
  store, FIFOs), one table of operations per kind read by one generator class;
  :mod:`~refimpl.conformance.search.informer_machine`: the generator that plays the API
  server for the ``informer`` component, its table of actions read the same way;
- :mod:`~refimpl.conformance.search.replay`: a trace replayed on the adapter (for the
  minimizer, to confirm a failure, ``--replay``);
- :mod:`~refimpl.conformance.search.minimize`: the replay-based minimizer, its passes
  listed in the order they run;
- :mod:`~refimpl.conformance.search.triage`: each finding's trace replayed on the peer
  and on client-go's adapter, and labelled (``client-go does the same``, ...);
- :mod:`~refimpl.conformance.search.run`: the run loop (``run``, ``run_component``) and
  the summary line.
"""
