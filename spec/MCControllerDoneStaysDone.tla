---------------------- MODULE MCControllerDoneStaysDone ---------------------
(* Mutation of ONE action of Controller.tla: WorkerDone calls Done but   *)
(* leaves the worker's phase at done. Expected: PhaseMatchesHolding      *)
(* violated.                                                             *)
EXTENDS Controller

MCKeys == {"a"}
MCWorkers == {"w1"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 1

DoneStaysDone(w) ==
    /\ phase[w] = "done"
    /\ WQ!Done(w)
    /\ UNCHANGED <<desired, cache, actual, phase, writes>>

NextDoneStaysDone ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : UserWrite(k, v)
                       \/ Sync(k) \/ Notify(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ Reconcile(w) \/ DoneStaysDone(w) \/ WorkerExit(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecDoneStaysDone == Init /\ [][NextDoneStaysDone]_vars
=============================================================================
