------------------ MODULE MCWorkQueueRefinementAddInFlight ------------------
(* Mutation, to show the refinement check can fail: an Add that queues a   *)
(* key even while a worker holds it.  A second worker can then Get it      *)
(* while the first still holds it: no AbstractWorkQueue step does that.    *)
(* Expected: TLC reports AbstractSpec violated.                            *)
EXTENDS WorkQueueRefinement

MCKeys == {"a", "b"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

AddInFlight(x) ==
    /\ ~shuttingDown
    /\ x \notin dirty
    /\ dirty' = dirty \cup {x}
    /\ queue' = Append(queue, x)
    /\ UNCHANGED <<processing, shuttingDown, drain, holding, stopped, waiting, drainer>>

NextAddInFlight ==
    \/ \E x \in Keys : AddInFlight(x)
    \/ \E w \in Workers : Get(w) \/ Done(w)

SpecAddInFlight == Init /\ [][NextAddInFlight]_vars
=============================================================================
