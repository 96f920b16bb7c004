------------------- MODULE MCControllerDrainReturnsEarly -------------------
(* Mutation of ONE action of Controller.tla: ShutDownWithDrain returns     *)
(* once the queue is empty, not once nothing is in flight, so it can      *)
(* return while a worker is still reconciling (what WQ-12 rules out).      *)
(* Expected: DrainWaitsForReconciles violated.                             *)
EXTENDS Controller

MCKeys == {"a"}
MCWorkers == {"w1"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 1

DrainReturnEarly ==
    /\ drainer = "waiting"
    /\ queue = <<>> \/ ~drain
    /\ drainer' = "returned"
    /\ UNCHANGED <<queue, dirty, processing, shuttingDown, drain, holding, stopped, waiting>>
    /\ UNCHANGED ctrlVars

NextDrainReturnsEarly ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : UserWrite(k, v)
                       \/ Sync(k) \/ Notify(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ Reconcile(w) \/ WorkerDone(w) \/ WorkerExit(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturnEarly

SpecDrainReturnsEarly == Init /\ [][NextDrainReturnsEarly]_vars
=============================================================================
