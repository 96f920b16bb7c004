------------------- MODULE MCWorkQueueShutDownKeepsWaiting ------------------
(* Mutation of ONE action of WorkQueue.tla: ShutDown does not stop the   *)
(* delaying queue, so delayed adds stay waiting and can never fire (an   *)
(* Add after shutdown is ignored). Expected: NothingWaitsAfterShutDown   *)
(* violated; in its second cfg, WaitingKeysFire.                         *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

ShutDownKeepsWaiting ==
    /\ ~shuttingDown \/ drain
    /\ shuttingDown' = TRUE
    /\ drain' = FALSE
    /\ UNCHANGED <<queue, dirty, processing, holding, stopped, waiting, drainer>>

NextShutDownKeepsWaiting ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ Done(w)
    \/ ShutDownKeepsWaiting \/ ShutDownWithDrain \/ DrainReturn

FairnessShutDownKeepsWaiting ==
    /\ \A w \in Workers : WF_vars(Get(w)) /\ WF_vars(Done(w)) /\ WF_vars(WorkerExit(w))
    /\ \A x \in Keys : WF_vars(Ready(x))
    /\ WF_vars(DrainReturn)

SpecShutDownKeepsWaiting == Init /\ [][NextShutDownKeepsWaiting]_vars /\ FairnessShutDownKeepsWaiting
=============================================================================
