-------------------- MODULE MCDeltaFIFOPopCountsBelowZero -------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Pop decrements the      *)
(* initial population count even when it is already 0. Expected: TypeOK  *)
(* violated (shows TypeOK can fail).                                     *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

PopCountsBelowZero ==
    /\ Running
    /\ queue # <<>>
    /\ LET k == Head(queue) IN
        /\ queue' = Tail(queue)
        /\ items' = [items EXCEPT ![k] = <<>>]
        /\ store' = [store EXCEPT ![k] = F!Applied(items[k])]
    /\ initialPopulationCount' = initialPopulationCount - 1
    /\ synced' = (synced \/ (populated /\ initialPopulationCount = 1))
    /\ UNCHANGED populated
    /\ UNCHANGED closeVars

NextPopCountsBelowZero ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ PopCountsBelowZero
    \/ Wait \/ Close \/ Exit

SpecPopCountsBelowZero == Init /\ [][NextPopCountsBelowZero]_vars
=============================================================================
