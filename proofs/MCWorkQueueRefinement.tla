----------------------- MODULE MCWorkQueueRefinement -----------------------
(* Refinement check of WorkQueue by AbstractWorkQueue: 2 keys, 2 workers.  *)
EXTENDS WorkQueueRefinement

MCKeys == {"a", "b"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"
=============================================================================
