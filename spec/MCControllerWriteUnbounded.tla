--------------------- MODULE MCControllerWriteUnbounded ---------------------
(* Mutation of ONE action of Controller.tla: UserWrite ignores the bound *)
(* on writes. Expected: TypeOK violated (shows TypeOK can fail).         *)
EXTENDS Controller

MCKeys == {"a"}
MCWorkers == {"w1"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 1

WriteUnbounded(k, v) ==
    /\ desired[k] # v
    /\ desired' = [desired EXCEPT ![k] = v]
    /\ writes' = writes + 1
    /\ UNCHANGED <<wqVars, cache, actual, phase>>

NextWriteUnbounded ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : WriteUnbounded(k, v)
                       \/ Sync(k) \/ Notify(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ Reconcile(w) \/ WorkerDone(w) \/ WorkerExit(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecWriteUnbounded == Init /\ [][NextWriteUnbounded]_vars
=============================================================================
