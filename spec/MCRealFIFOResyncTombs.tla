------------------------ MODULE MCRealFIFOResyncTombs -----------------------
(* Mutation of ONE action of RealFIFOClose.tla (non-atomic): Resync      *)
(* queues Sync entries that carry a DeletedFinalStateUnknown instead of  *)
(* the stored object. Expected: OnlyDeletesCarryTombstones violated.     *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2
MCAtomic == FALSE

ResyncTombs ==
    /\ F!ProducerMayRun
    /\ ~Atomic
    /\ \E order \in F!Orders(F!StoredKeys \ F!LogKeys) :
         log' = log \o [i \in DOMAIN order |-> F!Delta("Sync", F!Tomb(order[i], store[order[i]]))]
    /\ UNCHANGED <<processing, populated, initialPopulationCount, synced, store>>
    /\ Wake /\ UNCHANGED closed

NextResyncTombs ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ ResyncTombs
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ Exit

SpecResyncTombs == Init /\ [][NextResyncTombs]_vars
=============================================================================
