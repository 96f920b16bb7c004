------------------------ MODULE MCDeltaFIFONoReplaced ------------------------
(* MCDeltaFIFO with EmitDeltaTypeReplaced off: a relist queues Sync       *)
(* deltas, as client-go's DeltaFIFO did before 1.18 and still does for a  *)
(* caller that leaves the option off.                                     *)
EXTENDS DeltaFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1, 2}
MCMaxQueued == 2
MCEmitDeltaTypeReplaced == FALSE
=============================================================================
