------------------------- MODULE MCInformerResync -------------------------
(* Model of InformerResync.tla: one key, two server writes, one resync     *)
(* check: enough for a handler not due at a check, then a relist that      *)
(* changes the object (kubernetes PR #86015).                              *)
EXTENDS InformerResync

MCKeys == {"a"}
MCMaxRV == 2
MCMaxResyncs == 1
=============================================================================
