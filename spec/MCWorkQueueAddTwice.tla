------------------------- MODULE MCWorkQueueAddTwice ------------------------
(* Mutation of ONE action of WorkQueue.tla: Add does not check the dirty *)
(* set, so a key added twice before its Get is queued twice. Expected:   *)
(* NoDuplicatesInQueue violated.                                         *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

AddTwice(x) ==
    /\ ~shuttingDown
    /\ dirty' = dirty \cup {x}
    /\ queue' = IF x \in processing THEN queue ELSE Append(queue, x)
    /\ UNCHANGED <<processing, shuttingDown, drain, holding, stopped, waiting, drainer>>

NextAddTwice ==
    \/ \E x \in Keys : AddTwice(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ Done(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecAddTwice == Init /\ [][NextAddTwice]_vars
=============================================================================
