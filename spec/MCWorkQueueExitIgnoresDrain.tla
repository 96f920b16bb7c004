--------------------- MODULE MCWorkQueueExitIgnoresDrain --------------------
(* Mutation of ONE action of WorkQueue.tla: Get answers shutdown only    *)
(* after a plain ShutDown, so after ShutDownWithDrain idle workers block *)
(* for ever. Expected: WorkersStop violated.                             *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

ExitIgnoresDrain(w) ==
    /\ w \notin stopped
    /\ holding[w] = NoItem
    /\ shuttingDown /\ ~drain
    /\ queue = <<>>
    /\ stopped' = stopped \cup {w}
    /\ UNCHANGED <<queueVars, holding, waiting, drainer>>

NextExitIgnoresDrain ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ ExitIgnoresDrain(w) \/ Done(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

FairnessExitIgnoresDrain ==
    /\ \A w \in Workers : WF_vars(Get(w)) /\ WF_vars(Done(w)) /\ WF_vars(ExitIgnoresDrain(w))
    /\ \A x \in Keys : WF_vars(Ready(x))
    /\ WF_vars(DrainReturn)

SpecExitIgnoresDrain == Init /\ [][NextExitIgnoresDrain]_vars /\ FairnessExitIgnoresDrain
=============================================================================
