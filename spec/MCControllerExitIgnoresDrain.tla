------------------- MODULE MCControllerExitIgnoresDrain -------------------
(* Mutation of ONE action of Controller.tla: a worker's Get returns        *)
(* shutdown only after a plain ShutDown; after ShutDownWithDrain it keeps *)
(* blocking on the empty queue, so the workers never exit.                *)
(* Expected: WorkersExitAfterShutDown violated.                            *)
EXTENDS Controller

MCKeys == {"a"}
MCWorkers == {"w1"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 1

WorkerExitUnlessDrain(w) ==
    /\ ~drain
    /\ WorkerExit(w)

NextExitIgnoresDrain ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : UserWrite(k, v)
                       \/ Sync(k) \/ Notify(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ Reconcile(w) \/ WorkerDone(w) \/ WorkerExitUnlessDrain(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

FairnessExitIgnoresDrain ==
    /\ \A k \in Keys : /\ WF_vars(Sync(k)) /\ WF_vars(Notify(k)) /\ WF_vars(RetryDue(k))
                       /\ SF_vars(ReconcileKeyOK(k))
    /\ \A w \in Workers : /\ WF_vars(WorkerGet(w)) /\ WF_vars(WorkerDone(w))
                          /\ WF_vars(Reconcile(w)) /\ WF_vars(WorkerExitUnlessDrain(w))
    /\ WF_vars(DrainReturn)

SpecExitIgnoresDrain ==
    Init /\ [][NextExitIgnoresDrain]_vars /\ FairnessExitIgnoresDrain
=============================================================================
