---------------------- MODULE MCDeltaFIFOPopKeepsDeltas ---------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Pop takes the head key  *)
(* off the queue but leaves its deltas in items. Expected:               *)
(* QueueIsItemsKeys violated.                                            *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

PopKeepsDeltas ==
    /\ Running
    /\ queue # <<>>
    /\ LET k == Head(queue) IN
        /\ queue' = Tail(queue)
        /\ UNCHANGED items
        /\ store' = [store EXCEPT ![k] = F!Applied(items[k])]
    /\ IF initialPopulationCount > 0
       THEN /\ initialPopulationCount' = initialPopulationCount - 1
            /\ synced' = (synced \/ (populated /\ initialPopulationCount = 1))
       ELSE UNCHANGED <<initialPopulationCount, synced>>
    /\ UNCHANGED populated
    /\ UNCHANGED closeVars

NextPopKeepsDeltas ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ PopKeepsDeltas
    \/ Wait \/ Close \/ Exit

SpecPopKeepsDeltas == Init /\ [][NextPopKeepsDeltas]_vars
=============================================================================
