------------------------ MODULE MCWorkQueueDoneForgets ------------------------
(* Mutation: a Done that forgets to re-queue a key re-added while it was   *)
(* in flight.  Expected: TLC reports DirtyKeysAreProcessed violated (the   *)
(* key stays dirty forever and no worker ever sees it again).              *)
EXTENDS WorkQueue

MCKeys == {"a", "b"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

DoneForgets(w) ==
    /\ holding[w] \in Keys
    /\ processing' = processing \ {holding[w]}
    /\ holding' = [holding EXCEPT ![w] = NoItem]
    /\ UNCHANGED <<queue, dirty, shuttingDown, drain, stopped, waiting, drainer>>

NextForgets ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ DoneForgets(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

FairnessForgets ==
    /\ \A w \in Workers : WF_vars(Get(w)) /\ WF_vars(DoneForgets(w)) /\ WF_vars(WorkerExit(w))
    /\ \A x \in Keys : WF_vars(Ready(x))
    /\ WF_vars(DrainReturn)

SpecForgets == Init /\ [][NextForgets]_vars /\ FairnessForgets
=============================================================================
