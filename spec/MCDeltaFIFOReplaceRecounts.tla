--------------------- MODULE MCDeltaFIFOReplaceRecounts ---------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: every Replace, not only *)
(* the first, resets the initial population count, so HasSynced turns    *)
(* false again. Expected: SyncedIsMonotone violated.                     *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

ReplaceRecounts(l) ==
    /\ F!ProducerMayRun
    /\ \E order \in F!Orders(F!StoreOnlyGone(l)) :
         LET st1 == F!EnqAll(F!Now, [i \in DOMAIN l |-> F!Delta("Replaced", l[i])])
             queuedGone == F!QueuedKeys \ F!Listed(l)
             st2 == F!EnqEach(st1, queuedGone,
                      [k \in queuedGone |-> F!Delta("Deleted", F!Tomb(k, F!Last(items[k]).obj.rv))])
             st3 == F!EnqAll(st2, [i \in DOMAIN order |->
                      F!Delta("Deleted", F!Tomb(order[i], store[order[i]]))])
             count == Len(l) + Cardinality(queuedGone) + Len(order)
         IN /\ F!SetQueue(st3)
            /\ populated' = TRUE
            /\ initialPopulationCount' = count
            /\ synced' = (count = 0)
    /\ UNCHANGED store
    /\ Wake /\ UNCHANGED closed

NextReplaceRecounts ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : ReplaceRecounts(l)
    \/ Resync
    \/ Pop
    \/ Wait \/ Close \/ Exit

SpecReplaceRecounts == Init /\ [][NextReplaceRecounts]_vars
=============================================================================
