---------------------- MODULE MCDeltaFIFODeleteNoDedup ----------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Delete appends its      *)
(* delta without dedupDeltas, so two deletes in a row are both kept.     *)
(* Expected: NoAdjacentDeletes violated.                                 *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

DeleteNoDedup(o) ==
    /\ F!ProducerMayRun
    /\ F!Populate
    /\ LET k == o.key IN
        IF ~F!Queued(k) /\ store[k] = 0
        THEN UNCHANGED <<queue, items>>
        ELSE /\ queue' = IF items[k] = <<>> THEN Append(queue, k) ELSE queue
             /\ items' = [items EXCEPT ![k] = Append(items[k], F!Delta("Deleted", o))]
    /\ UNCHANGED store
    /\ Wake /\ UNCHANGED closed

NextDeleteNoDedup ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ DeleteNoDedup(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop
    \/ Wait \/ Close \/ Exit

SpecDeleteNoDedup == Init /\ [][NextDeleteNoDedup]_vars
=============================================================================
