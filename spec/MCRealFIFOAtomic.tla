---------------------------- MODULE MCRealFIFOAtomic ----------------------------
(* Model: 2 keys, resource versions 1..2, at most 1 queued entry before   *)
(* producers wait (one more may be in flight); Atomic = TRUE; with Close. *)
EXTENDS RealFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1, 2}
MCMaxQueued == 1
MCAtomic == TRUE
=============================================================================
