---------------------------- MODULE MCDeltaFIFO ----------------------------
(* Model: 2 keys, resource versions 1..2, at most 2 queued deltas before   *)
(* producers wait; with Close (DeltaFIFOClose.tla); a relist queues      *)
(* Replaced deltas (EmitDeltaTypeReplaced, client-go 1.18+).              *)
EXTENDS DeltaFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1, 2}
MCMaxQueued == 2
MCEmitDeltaTypeReplaced == TRUE
=============================================================================
