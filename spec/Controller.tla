------------------------------ MODULE Controller ------------------------------
(***************************************************************************)
(* The controller pattern: an informer cache feeding a work queue, workers *)
(* that reconcile by reading the cache (level-triggered), and retries     *)
(* through the rate-limited (delayed) add.  The work queue is WorkQueue.tla*)
(* (INSTANCEd); the informer is abstracted to its cache: `cache` follows   *)
(* `desired` eventually, and each change is notified to the handler, which *)
(* adds the key to the queue -- or the notification is lost.  Duplicate   *)
(* notifications and periodic resyncs are Notify.  Reconcile reads the    *)
(* cache and makes `actual` match it, or fails and re-queues with backoff.*)
(*                                                                         *)
(* Liveness: once the user stops writing, actual = desired, whatever was  *)
(* dropped or duplicated -- because the controller acts on levels, and a   *)
(* resync re-notifies every cached key.  EdgeVsLevel.tla shows the edge-   *)
(* triggered alternative failing under the same faults.                   *)
(*                                                                         *)
(* Shutdown: the controller's owner may call ShutDown or                   *)
(* ShutDownWithDrain on the queue at any time, once (one of the two), as  *)
(* WorkQueue.tla has them.  From then on the handler's                    *)
(* adds and the failed reconciles' rate-limited adds are ignored, workers *)
(* finish what is queued and exit (Get returns shutdown), and a draining  *)
(* shutdown returns once no reconcile is in progress.  Convergence is     *)
(* promised only for behaviours without a shutdown.                       *)
(*                                                                         *)
(* Refined by refimpl/worker.py (WorkerGet, Reconcile, WorkerDone) over    *)
(* the work queue cores.                                                   *)
(***************************************************************************)
EXTENDS Naturals

CONSTANTS
    Keys, Workers, NoItem,
    Values,     \* what a key's desired state can be (0 is the initial state)
    MaxWrites   \* user writes, in all

ASSUME 0 \notin Values

VARIABLES
    queue, dirty, processing, shuttingDown, drain, holding, stopped, waiting, drainer,
    desired,    \* [Keys -> {0} \cup Values]: what the user asked for
    cache,      \* [Keys -> {0} \cup Values]: the informer's store
    actual,     \* [Keys -> {0} \cup Values]: the world the controller changes
    phase,      \* [Workers -> {"idle", "reconcile", "done"}]
    writes      \* user writes so far

wqVars == <<queue, dirty, processing, shuttingDown, drain, holding, stopped, waiting, drainer>>
ctrlVars == <<desired, cache, actual, phase, writes>>
vars == <<wqVars, ctrlVars>>

WQ == INSTANCE WorkQueue

(* The handler's queue.Add: a no-op for a key that is already dirty, and   *)
(* after shutdown.                                                          *)
QAdd(k) == WQ!Add(k) \/ ((k \in dirty \/ shuttingDown) /\ UNCHANGED wqVars)

UserWrite(k, v) ==
    /\ writes < MaxWrites
    /\ desired[k] # v
    /\ desired' = [desired EXCEPT ![k] = v]
    /\ writes' = writes + 1
    /\ UNCHANGED <<wqVars, cache, actual, phase>>

(* The informer catches up with one change and notifies the handler ...    *)
SyncNotify(k) ==
    /\ cache[k] # desired[k]
    /\ cache' = [cache EXCEPT ![k] = desired[k]]
    /\ QAdd(k)
    /\ UNCHANGED <<desired, actual, phase, writes>>

(* ... or the notification is lost.                                        *)
SyncDrop(k) ==
    /\ cache[k] # desired[k]
    /\ cache' = [cache EXCEPT ![k] = desired[k]]
    /\ UNCHANGED <<wqVars, desired, actual, phase, writes>>

Sync(k) == SyncNotify(k) \/ SyncDrop(k)

(* A duplicate notification, or the periodic resync of a cached key.       *)
Notify(k) ==
    /\ k \notin dirty
    /\ WQ!Add(k)
    /\ UNCHANGED ctrlVars

WorkerGet(w) ==
    /\ phase[w] = "idle"
    /\ WQ!Get(w)
    /\ phase' = [phase EXCEPT ![w] = "reconcile"]
    /\ UNCHANGED <<desired, cache, actual, writes>>

(* Level-triggered: read the cache now, make the world match it.           *)
ReconcileOK(w) ==
    /\ phase[w] = "reconcile"
    /\ actual' = [actual EXCEPT ![holding[w]] = cache[holding[w]]]
    /\ phase' = [phase EXCEPT ![w] = "done"]
    /\ UNCHANGED <<wqVars, desired, cache, writes>>

(* A transient error: AddRateLimited(key) (a no-op for a key already      *)
(* waiting, and after shutdown), then Done.                                *)
ReconcileFail(w) ==
    /\ phase[w] = "reconcile"
    /\ \/ WQ!AddAfter(holding[w])
       \/ (holding[w] \in waiting \/ shuttingDown) /\ UNCHANGED wqVars
    /\ phase' = [phase EXCEPT ![w] = "done"]
    /\ UNCHANGED <<desired, cache, actual, writes>>

Reconcile(w) == ReconcileOK(w) \/ ReconcileFail(w)

(* Some worker reconciles key k successfully.                              *)
ReconcileKeyOK(k) == \E w \in Workers : holding[w] = k /\ ReconcileOK(w)

WorkerDone(w) ==
    /\ phase[w] = "done"
    /\ WQ!Done(w)
    /\ phase' = [phase EXCEPT ![w] = "idle"]
    /\ UNCHANGED <<desired, cache, actual, writes>>

RetryDue(k) == WQ!Ready(k) /\ UNCHANGED ctrlVars

(* An idle worker's Get returns shutdown (shutting down, nothing queued):  *)
(* its loop ends.                                                           *)
WorkerExit(w) ==
    /\ phase[w] = "idle"
    /\ WQ!WorkerExit(w)
    /\ UNCHANGED ctrlVars

(* The controller's owner stops it, once: queue.ShutDown(), or            *)
(* queue.ShutDownWithDrain() and its return once nothing is in flight.     *)
(* Only one call: on the controller's rate-limiting queue a second one     *)
(* depends on the delaying queue's once-only ShutDown (docs/invariants.md  *)
(* DQ-6), which WorkQueue.tla (a plain queue) does not have.              *)
ShutDown == ~shuttingDown /\ WQ!ShutDown /\ UNCHANGED ctrlVars
ShutDownWithDrain == ~shuttingDown /\ WQ!ShutDownWithDrain /\ UNCHANGED ctrlVars
DrainReturn == WQ!DrainReturn /\ UNCHANGED ctrlVars

Init ==
    /\ WQ!Init
    /\ desired = [k \in Keys |-> 0]
    /\ cache = [k \in Keys |-> 0]
    /\ actual = [k \in Keys |-> 0]
    /\ phase = [w \in Workers |-> "idle"]
    /\ writes = 0

Next ==
    \/ \E k \in Keys : \/ \E v \in Values \cup {0} : UserWrite(k, v)
                       \/ Sync(k) \/ Notify(k) \/ RetryDue(k)
    \/ \E w \in Workers : WorkerGet(w) \/ Reconcile(w) \/ WorkerDone(w) \/ WorkerExit(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

(* The informer keeps up, resyncs periodically, retries fire; workers keep *)
(* working and exit once shut down and drained; a blocked drain re-checks; *)
(* and a key whose reconcile keeps being tried eventually gets a          *)
(* successful one (errors are transient).  Nobody is obliged to shut down. *)
Fairness ==
    /\ \A k \in Keys : /\ WF_vars(Sync(k)) /\ WF_vars(Notify(k)) /\ WF_vars(RetryDue(k))
                       /\ SF_vars(ReconcileKeyOK(k))
    /\ \A w \in Workers : /\ WF_vars(WorkerGet(w)) /\ WF_vars(WorkerDone(w))
                          /\ WF_vars(Reconcile(w)) /\ WF_vars(WorkerExit(w))
    /\ WF_vars(DrainReturn)

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
TypeOK ==
    /\ WQ!TypeOK
    /\ desired \in [Keys -> {0} \cup Values]
    /\ cache \in [Keys -> {0} \cup Values]
    /\ actual \in [Keys -> {0} \cup Values]
    /\ phase \in [Workers -> {"idle", "reconcile", "done"}]
    /\ writes \in 0..MaxWrites

NoTwoWorkersOnOneKey == WQ!NoTwoWorkersOnOneKey
DirtyIsQueuedOrInFlight == WQ!DirtyIsQueuedOrInFlight
PhaseMatchesHolding == \A w \in Workers : (phase[w] = "idle") <=> (holding[w] = NoItem)

(* Level-triggered (CTRL-1): every change the controller makes to the      *)
(* world copies what the cache holds at that moment -- not the value a     *)
(* notification carried, nor the user's intent read elsewhere.             *)
ActualFollowsCache ==
    [][\A k \in Keys : actual'[k] # actual[k] => actual'[k] = cache[k]]_vars

(* Once the user stops writing, the world converges to what was asked --   *)
(* unless the controller is shut down.                                     *)
Converges == <>shuttingDown \/ <>[](actual = desired)

(* After a shutdown every worker exits: what is queued is handed out, a    *)
(* key added meanwhile is ignored, nothing waits for ever.                 *)
WorkersExitAfterShutDown == shuttingDown ~> (stopped = Workers)

(* WQ-12 for the controller: a draining shutdown returns only when no      *)
(* reconcile is in progress (every worker that got a key called Done).     *)
DrainWaitsForReconciles ==
    [][drainer = "waiting" /\ drainer' = "returned" /\ drain =>
         \A w \in Workers : phase[w] = "idle"]_vars
=============================================================================
