------------------- MODULE MCWorkQueueDoneKeepsProcessing -------------------
(* Mutation of ONE action of WorkQueue.tla: Done frees the worker but    *)
(* leaves the key in the processing set. Expected: ProcessingIsHeld      *)
(* violated.                                                             *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

DoneKeepsProcessing(w) ==
    /\ holding[w] \in Keys
    /\ LET x == holding[w] IN
        queue' = IF x \in dirty THEN Append(queue, x) ELSE queue
    /\ holding' = [holding EXCEPT ![w] = NoItem]
    /\ UNCHANGED <<dirty, processing, shuttingDown, drain, stopped, waiting, drainer>>

NextDoneKeepsProcessing ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ DoneKeepsProcessing(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecDoneKeepsProcessing == Init /\ [][NextDoneKeepsProcessing]_vars
=============================================================================
