-------------------- MODULE MCRealFIFOTombstonesStoredOnly --------------------
(* Mutation of ONE action of RealFIFOClose.tla (non-atomic): the relist   *)
(* tombstones only keys the store holds, so a key that is queued (added,  *)
(* not yet processed), not stored and not listed gets no tombstone and    *)
(* survives the relist -- the RealFIFO form of the DeltaFIFO bug          *)
(* kubernetes PR #115620 fixed.                                           *)
(* Expected: RelistLeavesListedKeys violated.                             *)
EXTENDS RealFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1}
MCMaxQueued == 2
MCAtomic == FALSE

ReplaceStoredOnly(l) ==
    /\ F!ProducerMayRun
    /\ \E order \in F!Orders(F!StoredKeys \ F!Listed(l)) :
         LET newLog == log
                 \o [i \in DOMAIN order |->
                       F!Delta("Deleted", F!Tomb(order[i], store[order[i]]))]
                 \o [i \in DOMAIN l |-> F!Delta("Replaced", l[i])]
         IN log' = newLog /\ F!FirstPopulation(newLog)
    /\ UNCHANGED <<processing, store, closed>>
    /\ Wake

NextRealFIFOTombstonesStoredOnly ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : ReplaceStoredOnly(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ Exit

ConsumeRealFIFOTombstonesStoredOnly == Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process \/ Wait \/ Exit

SpecRealFIFOTombstonesStoredOnly == Init /\ [][NextRealFIFOTombstonesStoredOnly]_vars /\ WF_vars(ConsumeRealFIFOTombstonesStoredOnly)
=============================================================================
