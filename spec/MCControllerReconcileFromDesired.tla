------------------- MODULE MCControllerReconcileFromDesired -------------------
(* Mutation of ONE action of Controller.tla: a successful reconcile makes   *)
(* the world match what the user asked for (read past the informer, e.g.   *)
(* from the API server at that moment) instead of the cache.                *)
(* Expected: ActualFollowsCache violated.                                   *)
EXTENDS Controller

MCKeys == {"a"}
MCWorkers == {"w1"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 1

ReconcileFromDesired(w) ==
    \/ /\ phase[w] = "reconcile"
       /\ actual' = [actual EXCEPT ![holding[w]] = desired[holding[w]]]
       /\ phase' = [phase EXCEPT ![w] = "done"]
       /\ UNCHANGED <<wqVars, desired, cache, writes>>
    \/ ReconcileFail(w)

NextFromDesired ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : UserWrite(k, v)
                       \/ Sync(k) \/ Notify(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ ReconcileFromDesired(w) \/ WorkerDone(w) \/ WorkerExit(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecFromDesired == Init /\ [][NextFromDesired]_vars
=============================================================================
