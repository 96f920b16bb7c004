----------------------- MODULE MCDeltaFIFOResyncQueued ----------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Resync queues a Sync    *)
(* delta for every stored key, also for keys that already have deltas    *)
(* queued (syncKeyLocked without its check). Expected:                   *)
(* ResyncSkipsQueuedKeys violated.                                       *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

ResyncQueued ==
    /\ F!ProducerMayRun
    /\ \E order \in F!Orders(F!StoredKeys) :
         F!SetQueue(F!EnqAll(F!Now, [i \in DOMAIN order |->
                     F!Delta("Sync", F!Obj(order[i], store[order[i]]))]))
    /\ UNCHANGED <<populated, initialPopulationCount, synced, store>>
    /\ Wake /\ UNCHANGED closed

NextResyncQueued ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ ResyncQueued
    \/ Pop
    \/ Wait \/ Close \/ Exit

SpecResyncQueued == Init /\ [][NextResyncQueued]_vars
=============================================================================
