-------------------- MODULE MCWorkQueueAddQueuesInFlight --------------------
(* Mutation of ONE action of WorkQueue.tla: Add queues a key even while  *)
(* a worker holds it (it only marks it dirty in queue.go), so another    *)
(* worker's Get hands out the same key. Expected: NoTwoWorkersOnOneKey   *)
(* violated (and, in its second cfg, QueuedNotProcessing).               *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

AddQueuesInFlight(x) ==
    /\ ~shuttingDown
    /\ x \notin dirty
    /\ dirty' = dirty \cup {x}
    /\ queue' = Append(queue, x)
    /\ UNCHANGED <<processing, shuttingDown, drain, holding, stopped, waiting, drainer>>

NextAddQueuesInFlight ==
    \/ \E x \in Keys : AddQueuesInFlight(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ Done(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecAddQueuesInFlight == Init /\ [][NextAddQueuesInFlight]_vars
=============================================================================
