---------------------- MODULE MCDeltaFIFOPopKeepsCount ----------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Pop never counts the    *)
(* initial list down. Expected: InitialCountWithinQueue violated (more   *)
(* initial pops owed than keys queued).                                  *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

PopKeepsCount ==
    /\ Running
    /\ queue # <<>>
    /\ LET k == Head(queue) IN
        /\ queue' = Tail(queue)
        /\ items' = [items EXCEPT ![k] = <<>>]
        /\ store' = [store EXCEPT ![k] = F!Applied(items[k])]
    /\ UNCHANGED <<initialPopulationCount, synced>>
    /\ UNCHANGED populated
    /\ UNCHANGED closeVars

NextPopKeepsCount ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ PopKeepsCount
    \/ Wait \/ Close \/ Exit

SpecPopKeepsCount == Init /\ [][NextPopKeepsCount]_vars
=============================================================================
