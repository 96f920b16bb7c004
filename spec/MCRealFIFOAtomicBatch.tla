------------------------- MODULE MCRealFIFOAtomicBatch -------------------------
(* Model: MCRealFIFOAtomic with room for 2 queued entries, so that          *)
(* TakeBatch (atomic PopBatch) is taken and BatchIsWellFormed has batches   *)
(* to check; in MCRealFIFOAtomic one queued entry leaves TakeBatch never    *)
(* enabled.  Checked by TLC, no graph.                                      *)
EXTENDS RealFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1}
MCMaxQueued == 2
MCAtomic == TRUE
=============================================================================
