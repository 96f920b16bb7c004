"""The TLA+ side of refimpl: run TLC, read what it prints, import its state graphs, and
tie the code to the specs without TLC.

Runs nothing on import. The modules:

- :mod:`~refimpl.tla.runner` finds java and the jar named by ``TLA2TOOLS_JAR`` and runs
  one model; :mod:`~refimpl.tla.output` reads TLC's output into a
  :class:`~refimpl.tla.output.TlcResult`; :mod:`~refimpl.tla.values` reads TLA+ values;
- :mod:`~refimpl.tla.manifest` is spec/models.json; :mod:`~refimpl.tla.graph` imports
  and stores reachable state graphs (spec/graphs/);
- :mod:`~refimpl.tla.replay` replays a core over a state graph, every state and edge,
  through a refinement mapping: :mod:`~refimpl.tla.refine_workqueue`
  (spec/WorkQueue.tla), :mod:`~refimpl.tla.refine_fifo` (spec/DeltaFIFO.tla,
  spec/RealFIFO.tla), :mod:`~refimpl.tla.refine_informer` (spec/Informer.tla,
  spec/InformerAtomic.tla: its moves; the states are
  :mod:`~refimpl.tla.refine_informer_state`'s, the replay's own pieces
  :mod:`~refimpl.tla.refine_informer_parts`), :mod:`~refimpl.tla.refine_informer_resync`
  (spec/InformerResync.tla: a second listener and resync) and
  :mod:`~refimpl.tla.refine_controller`
  (spec/Controller.tla); :mod:`~refimpl.tla.mappings` says which mapping replays which
  graphed model;
- :mod:`~refimpl.tla.trace` checks simulator traces with TLC through spec/trace/
  (``refimpl spec trace``): a shared core (:mod:`~refimpl.tla.trace_core`) and one
  mapping module per spec, :mod:`~refimpl.tla.trace_workqueue`,
  :mod:`~refimpl.tla.trace_fifo` and :mod:`~refimpl.tla.trace_informer`;
- :mod:`~refimpl.tla.cli` is ``refimpl spec``.

The specs themselves live in spec/.
"""
