-------------------- MODULE MCWorkQueueDoneAlwaysRequeues -------------------
(* Mutation of ONE action of WorkQueue.tla: Done re-queues the key       *)
(* whether or not it was added meanwhile. Expected: QueuedAreDirty       *)
(* violated (a queued key nobody asked for).                             *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

DoneAlwaysRequeues(w) ==
    /\ holding[w] \in Keys
    /\ LET x == holding[w] IN
        /\ processing' = processing \ {x}
        /\ queue' = Append(queue, x)
    /\ holding' = [holding EXCEPT ![w] = NoItem]
    /\ UNCHANGED <<dirty, shuttingDown, drain, stopped, waiting, drainer>>

NextDoneAlwaysRequeues ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ DoneAlwaysRequeues(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecDoneAlwaysRequeues == Init /\ [][NextDoneAlwaysRequeues]_vars
=============================================================================
