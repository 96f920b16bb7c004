--------------------- MODULE MCWorkQueueExitWhileHolding --------------------
(* Mutation of ONE action of WorkQueue.tla: a worker may take Get's      *)
(* shutdown answer while it still holds a key it never called Done for.  *)
(* Expected: StoppedWorkersHoldNothing violated.                         *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

ExitWhileHolding(w) ==
    /\ w \notin stopped
    /\ shuttingDown
    /\ queue = <<>>
    /\ stopped' = stopped \cup {w}
    /\ UNCHANGED <<queueVars, holding, waiting, drainer>>

NextExitWhileHolding ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ ExitWhileHolding(w) \/ Done(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

FairnessExitWhileHolding ==
    /\ \A w \in Workers : WF_vars(Get(w)) /\ WF_vars(Done(w)) /\ WF_vars(ExitWhileHolding(w))
    /\ \A x \in Keys : WF_vars(Ready(x))
    /\ WF_vars(DrainReturn)

SpecExitWhileHolding == Init /\ [][NextExitWhileHolding]_vars /\ FairnessExitWhileHolding
=============================================================================
