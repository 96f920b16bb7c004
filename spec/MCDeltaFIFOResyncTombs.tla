----------------------- MODULE MCDeltaFIFOResyncTombs -----------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Resync queues Sync      *)
(* deltas that carry a DeletedFinalStateUnknown instead of the stored    *)
(* object. Expected: OnlyDeletesCarryTombstones violated.                *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

ResyncTombs ==
    /\ F!ProducerMayRun
    /\ \E order \in F!Orders(F!StoredKeys \ F!QueuedKeys) :
         F!SetQueue(F!EnqAll(F!Now, [i \in DOMAIN order |->
                     F!Delta("Sync", F!Tomb(order[i], store[order[i]]))]))
    /\ UNCHANGED <<populated, initialPopulationCount, synced, store>>
    /\ Wake /\ UNCHANGED closed

NextResyncTombs ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ ResyncTombs
    \/ Pop
    \/ Wait \/ Close \/ Exit

SpecResyncTombs == Init /\ [][NextResyncTombs]_vars
=============================================================================
