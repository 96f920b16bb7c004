---------------------- MODULE MCDeltaFIFOPopNeverSyncs ----------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Pop counts the initial  *)
(* list down but never turns HasSynced true. Expected:                   *)
(* SyncedMeansInitialListHandedOut violated.                             *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

PopNeverSyncs ==
    /\ Running
    /\ queue # <<>>
    /\ LET k == Head(queue) IN
        /\ queue' = Tail(queue)
        /\ items' = [items EXCEPT ![k] = <<>>]
        /\ store' = [store EXCEPT ![k] = F!Applied(items[k])]
    /\ initialPopulationCount' = IF initialPopulationCount > 0
                                 THEN initialPopulationCount - 1 ELSE 0
    /\ UNCHANGED synced
    /\ UNCHANGED populated
    /\ UNCHANGED closeVars

NextPopNeverSyncs ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ PopNeverSyncs
    \/ Wait \/ Close \/ Exit

SpecPopNeverSyncs == Init /\ [][NextPopNeverSyncs]_vars
=============================================================================
