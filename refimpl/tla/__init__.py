"""The TLA+ side of refimpl: run TLC, read what it prints, import its state graphs.

Runs nothing on import. :mod:`~refimpl.tla.runner` finds java and the jar named by
``TLA2TOOLS_JAR`` and runs one model; :mod:`~refimpl.tla.output` reads TLC's output
into a :class:`~refimpl.tla.output.TlcResult`; :mod:`~refimpl.tla.values` reads TLA+
values; :mod:`~refimpl.tla.graph` imports and stores reachable state graphs;
:mod:`~refimpl.tla.manifest` is spec/models.json; :mod:`~refimpl.tla.cli` is
``refimpl spec``. The specs themselves live in spec/.
"""
