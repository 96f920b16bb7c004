-------------------- MODULE MCControllerNotifyQueuesHeld --------------------
(* Mutation of ONE action of Controller.tla: a duplicate notification or *)
(* resync queues the key even while a worker holds it (the work queue's  *)
(* Add only marks such a key dirty). Expected: NoTwoWorkersOnOneKey      *)
(* violated.                                                             *)
EXTENDS Controller, Sequences

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 1

NotifyQueuesHeld(k) ==
    /\ k \notin dirty
    /\ ~shuttingDown
    /\ dirty' = dirty \cup {k}
    /\ queue' = Append(queue, k)
    /\ UNCHANGED <<processing, shuttingDown, drain, holding, stopped, waiting, drainer>>
    /\ UNCHANGED ctrlVars

NextNotifyQueuesHeld ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : UserWrite(k, v)
                       \/ Sync(k) \/ NotifyQueuesHeld(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ Reconcile(w) \/ WorkerDone(w) \/ WorkerExit(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

SpecNotifyQueuesHeld == Init /\ [][NextNotifyQueuesHeld]_vars
=============================================================================
