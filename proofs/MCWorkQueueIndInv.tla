------------------------- MODULE MCWorkQueueIndInv -------------------------
(* Inductive-invariant checks of WorkQueue with 2 keys and 2 workers:      *)
(* MCWorkQueueIndInvBase.cfg (initiation), MCWorkQueueIndInvStep.cfg       *)
(* (consecution).                                                          *)
EXTENDS WorkQueueIndInv

MCKeys == {"a", "b"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"
=============================================================================
