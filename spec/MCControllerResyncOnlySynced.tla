-------------------- MODULE MCControllerResyncOnlySynced --------------------
(* Mutation of ONE action of Controller.tla: the resync re-notifies only *)
(* keys whose world already matches the cache, so a lost notification is *)
(* never repaired. Expected: Converges violated.                         *)
EXTENDS Controller

MCKeys == {"a"}
MCWorkers == {"w1"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 1

ResyncOnlySynced(k) ==
    /\ k \notin dirty
    /\ actual[k] = cache[k]
    /\ WQ!Add(k)
    /\ UNCHANGED ctrlVars

NextResyncOnlySynced ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : UserWrite(k, v)
                       \/ Sync(k) \/ ResyncOnlySynced(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ Reconcile(w) \/ WorkerDone(w) \/ WorkerExit(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

FairnessResyncOnlySynced ==
    /\ \A k \in Keys : /\ WF_vars(Sync(k)) /\ WF_vars(ResyncOnlySynced(k)) /\ WF_vars(RetryDue(k))
                       /\ SF_vars(ReconcileKeyOK(k))
    /\ \A w \in Workers : /\ WF_vars(WorkerGet(w)) /\ WF_vars(WorkerDone(w))
                          /\ WF_vars(Reconcile(w)) /\ WF_vars(WorkerExit(w))
    /\ WF_vars(DrainReturn)

SpecResyncOnlySynced == Init /\ [][NextResyncOnlySynced]_vars /\ FairnessResyncOnlySynced
=============================================================================
