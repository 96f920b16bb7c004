----------------------- MODULE MCControllerDoneForgets ----------------------
(* Mutation of ONE action of Controller.tla: WorkerDone does not re-     *)
(* queue a key notified while it was reconciled. Expected:               *)
(* DirtyIsQueuedOrInFlight violated.                                     *)
EXTENDS Controller

MCKeys == {"a"}
MCWorkers == {"w1"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 1

DoneForgets(w) ==
    /\ phase[w] = "done"
    /\ holding[w] \in Keys
    /\ processing' = processing \ {holding[w]}
    /\ holding' = [holding EXCEPT ![w] = NoItem]
    /\ phase' = [phase EXCEPT ![w] = "idle"]
    /\ UNCHANGED <<queue, dirty, shuttingDown, drain, stopped, waiting, drainer>>
    /\ UNCHANGED <<desired, cache, actual, writes>>

NextDoneForgets ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : UserWrite(k, v)
                       \/ Sync(k) \/ Notify(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ Reconcile(w) \/ DoneForgets(w) \/ WorkerExit(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecDoneForgets == Init /\ [][NextDoneForgets]_vars
=============================================================================
