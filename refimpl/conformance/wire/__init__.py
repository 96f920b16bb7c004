"""``refimpl conform --wire``: the informer component over HTTP (docs/wire.md).

* ``run``: the harness: a :class:`~refimpl.wire.server.WireServer` per run, a seeded
  plan of server writes and wire faults, the checks, and the wait for convergence.
* ``reflector_checks``: REF-1 and REF-3 from the server's record of the requests.
* ``results``: distinct findings, their shrinking and client-go's label, ``--json``.
* ``shrink``: shrinking a finding's plan; plan files (``--save``, ``--replay``).
* ``adapter``: the reference's wire adapter, refimpl's own informer over
  :mod:`refimpl.wire.client` (and the broken ones the harness's tests use).
"""
