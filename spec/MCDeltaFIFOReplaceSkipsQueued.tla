-------------------- MODULE MCDeltaFIFOReplaceSkipsQueued -------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Replace tombstones only *)
(* the stored keys the list lacks, not keys that are queued but not      *)
(* stored (Replace before kubernetes PR #115620). Expected:              *)
(* ReplaceTombstonesVanished violated.                                   *)
EXTENDS DeltaFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1}
MCMaxQueued == 2

ReplaceSkipsQueued(l) ==
    /\ F!ProducerMayRun
    /\ \E order \in F!Orders(F!StoredKeys \ F!Listed(l)) :
         LET st1 == F!EnqAll(F!Now, [i \in DOMAIN l |-> F!Delta("Replaced", l[i])])
             st2 == F!EnqAll(st1, [i \in DOMAIN order |->
                      F!Delta("Deleted", F!Tomb(order[i], store[order[i]]))])
             count == Len(l) + Len(order)
         IN /\ F!SetQueue(st2)
            /\ IF populated
               THEN UNCHANGED <<populated, initialPopulationCount, synced>>
               ELSE /\ populated' = TRUE
                    /\ initialPopulationCount' = count
                    /\ synced' = (count = 0)
    /\ UNCHANGED store
    /\ Wake /\ UNCHANGED closed

NextReplaceSkipsQueued ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : ReplaceSkipsQueued(l)
    \/ Resync
    \/ Pop
    \/ Wait \/ Close \/ Exit

SpecReplaceSkipsQueued == Init /\ [][NextReplaceSkipsQueued]_vars
=============================================================================
