----------------------- MODULE MCDeltaFIFOAddMiskeyed -----------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Add files the delta     *)
(* under one fixed key, whatever the object's key. Expected:             *)
(* DeltasBelongToTheirKey violated.                                      *)
EXTENDS DeltaFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1}
MCMaxQueued == 2

AddMiskeyed(o) ==
    /\ F!ProducerMayRun
    /\ F!Populate
    /\ LET k == CHOOSE x \in Keys : TRUE IN
        /\ queue' = IF items[k] = <<>> THEN Append(queue, k) ELSE queue
        /\ items' = [items EXCEPT ![k] = Append(items[k], F!Delta("Added", o))]
    /\ UNCHANGED store
    /\ Wake /\ UNCHANGED closed

NextAddMiskeyed ==
    \/ \E o \in Objs : AddMiskeyed(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop
    \/ Wait \/ Close \/ Exit

SpecAddMiskeyed == Init /\ [][NextAddMiskeyed]_vars
=============================================================================
