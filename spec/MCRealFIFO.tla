---------------------------- MODULE MCRealFIFO ----------------------------
(* Model: 2 keys, resource versions 1..2, at most 2 queued entries before  *)
(* producers wait; Atomic = FALSE; with Close (RealFIFOClose.tla).         *)
EXTENDS RealFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1, 2}
MCMaxQueued == 2
MCAtomic == FALSE
=============================================================================
