----------------------------- MODULE WorkQueue -----------------------------
(***************************************************************************)
(* client-go's work queue (util/workqueue/queue.go, Typed[T]) with its     *)
(* workers and the delaying queue's waiting room.                          *)
(*                                                                         *)
(* The queue is the dirty / processing / queue triple: `dirty` holds the   *)
(* keys that need processing, `processing` the keys handed out by Get and  *)
(* not yet Done, `queue` the keys waiting for Get, in hand-out order.  A   *)
(* key added while in flight is only marked dirty; Done puts it back.      *)
(*                                                                         *)
(* The delaying queue and the rate limiter are abstracted away: AddAfter   *)
(* puts a key in `waiting`, and Ready adds it at any later step (the code  *)
(* adds it when its ready time comes, refimpl/workqueue/delaying_core.py). *)
(*                                                                         *)
(* Refined by refimpl/workqueue/core.py (QueueCore): `queue` is            *)
(* list(core.queue), `dirty` core.dirty, `processing` core.processing,     *)
(* `shuttingDown` core.shutting_down, `drain` core.drain.  `holding`,      *)
(* `stopped`, `waiting` and `drainer` belong to the callers: the workers,  *)
(* the delaying queue and the goroutine blocked in ShutDownWithDrain.      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Keys,       \* the items that can be added
    Workers,    \* the worker goroutines calling Get / Done
    NoItem      \* what an idle worker holds

ASSUME NoItem \notin Keys

VARIABLES
    queue,          \* Seq(Keys): keys waiting for Get, head first
    dirty,          \* SUBSET Keys: keys that need processing
    processing,     \* SUBSET Keys: keys handed out and not yet Done
    shuttingDown,   \* BOOLEAN
    drain,          \* BOOLEAN: a ShutDownWithDrain is waiting for in-flight keys
    holding,        \* [Workers -> Keys \cup {NoItem}]: what each worker processes
    stopped,        \* SUBSET Workers: workers whose Get returned shutdown
    waiting,        \* SUBSET Keys: delayed adds not yet due (AddAfter, AddRateLimited)
    drainer         \* "idle", "waiting" or "returned": the ShutDownWithDrain caller

vars == <<queue, dirty, processing, shuttingDown, drain, holding, stopped,
          waiting, drainer>>
queueVars == <<queue, dirty, processing, shuttingDown, drain>>

Range(s) == {s[i] : i \in DOMAIN s}

-----------------------------------------------------------------------------
TypeOK ==
    /\ queue \in Seq(Keys)
    /\ dirty \subseteq Keys
    /\ processing \subseteq Keys
    /\ shuttingDown \in BOOLEAN
    /\ drain \in BOOLEAN
    /\ holding \in [Workers -> Keys \cup {NoItem}]
    /\ stopped \subseteq Workers
    /\ waiting \subseteq Keys
    /\ drainer \in {"idle", "waiting", "returned"}

Init ==
    /\ queue = <<>>
    /\ dirty = {}
    /\ processing = {}
    /\ shuttingDown = FALSE
    /\ drain = FALSE
    /\ holding = [w \in Workers |-> NoItem]
    /\ stopped = {}
    /\ waiting = {}
    /\ drainer = "idle"

-----------------------------------------------------------------------------
(* Add(x).  Only the case that changes something is written out: an Add    *)
(* after shutdown, or of a key that is already dirty, is a stuttering step *)
(* (queue.go ignores it; FIFO order ignores the container's Touch).        *)
DoAdd(x) ==
    /\ ~shuttingDown
    /\ x \notin dirty
    /\ dirty' = dirty \cup {x}
    /\ queue' = IF x \in processing THEN queue ELSE Append(queue, x)

Add(x) ==
    /\ DoAdd(x)
    /\ UNCHANGED <<processing, shuttingDown, drain, holding, stopped, waiting, drainer>>

(* AddAfter(x, d) / AddRateLimited(x): the key waits; ignored after shutdown. *)
AddAfter(x) ==
    /\ ~shuttingDown
    /\ x \notin waiting
    /\ waiting' = waiting \cup {x}
    /\ UNCHANGED <<queueVars, holding, stopped, drainer>>

(* A waiting key's time has come: the delaying queue Adds it.              *)
Ready(x) ==
    /\ x \in waiting
    /\ waiting' = waiting \ {x}
    /\ \/ DoAdd(x)
       \/ /\ x \in dirty                 \* the Add is a no-op
          /\ UNCHANGED <<queue, dirty>>
    /\ UNCHANGED <<processing, shuttingDown, drain, holding, stopped, drainer>>

(* Get() by an idle worker: hand out the head, even after shutdown.        *)
Get(w) ==
    /\ w \notin stopped
    /\ holding[w] = NoItem
    /\ queue # <<>>
    /\ LET x == Head(queue) IN
        /\ queue' = Tail(queue)
        /\ processing' = processing \cup {x}
        /\ dirty' = dirty \ {x}
        /\ holding' = [holding EXCEPT ![w] = x]
    /\ UNCHANGED <<shuttingDown, drain, stopped, waiting, drainer>>

(* Get() returns shutdown=true: only when shutting down and nothing queued. *)
(* The worker loop then exits.                                             *)
WorkerExit(w) ==
    /\ w \notin stopped
    /\ holding[w] = NoItem
    /\ shuttingDown
    /\ queue = <<>>
    /\ stopped' = stopped \cup {w}
    /\ UNCHANGED <<queueVars, holding, waiting, drainer>>

(* Done(x) by the worker holding x: re-queue x if it was added meanwhile,  *)
(* even after shutdown.                                                    *)
Done(w) ==
    /\ holding[w] \in Keys
    /\ LET x == holding[w] IN
        /\ processing' = processing \ {x}
        /\ queue' = IF x \in dirty THEN Append(queue, x) ELSE queue
    /\ holding' = [holding EXCEPT ![w] = NoItem]
    /\ UNCHANGED <<dirty, shuttingDown, drain, stopped, waiting, drainer>>

(* ShutDown(): idempotent; also cuts a draining shutdown short.  The       *)
(* delaying queue stops its timer: waiting keys are dropped.               *)
ShutDown ==
    /\ ~shuttingDown \/ drain
    /\ shuttingDown' = TRUE
    /\ drain' = FALSE
    /\ waiting' = {}
    /\ UNCHANGED <<queue, dirty, processing, holding, stopped, drainer>>

(* ShutDownWithDrain(): the state change, then its caller blocks.          *)
ShutDownWithDrain ==
    /\ drainer = "idle"
    /\ shuttingDown' = TRUE
    /\ drain' = TRUE
    /\ waiting' = {}
    /\ drainer' = "waiting"
    /\ UNCHANGED <<queue, dirty, processing, holding, stopped>>

(* The draining caller returns once nothing is in flight or ShutDown cut   *)
(* the drain short.  Queued keys are not waited for (queue.go's code, not  *)
(* its doc comment).                                                       *)
DrainReturn ==
    /\ drainer = "waiting"
    /\ processing = {} \/ ~drain
    /\ drainer' = "returned"
    /\ UNCHANGED <<queueVars, holding, stopped, waiting>>

Next ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ Done(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturn

(* Workers keep working; due keys fire; a blocked drain re-checks.         *)
Fairness ==
    /\ \A w \in Workers : WF_vars(Get(w)) /\ WF_vars(Done(w)) /\ WF_vars(WorkerExit(w))
    /\ \A x \in Keys : WF_vars(Ready(x))
    /\ WF_vars(DrainReturn)

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Safety (docs/invariants.md WQ-1, WQ-2, WQ-3, WQ-5).                     *)
NoTwoWorkersOnOneKey ==
    \A v, w \in Workers : v # w /\ holding[v] \in Keys => holding[v] # holding[w]

NoDuplicatesInQueue ==
    \A i, j \in 1..Len(queue) : i # j => queue[i] # queue[j]

QueuedAreDirty == Range(queue) \subseteq dirty

QueuedNotProcessing == Range(queue) \cap processing = {}

(* Nothing is lost: a dirty key is queued or will be re-queued by Done.    *)
DirtyIsQueuedOrInFlight == dirty \subseteq Range(queue) \cup processing

(* `processing` is exactly what the workers hold.                          *)
ProcessingIsHeld == processing = {holding[w] : w \in Workers} \ {NoItem}

StoppedWorkersHoldNothing == \A w \in stopped : holding[w] = NoItem

NothingWaitsAfterShutDown == shuttingDown => waiting = {}

DrainImpliesShuttingDown == drain => shuttingDown

Safety ==
    /\ TypeOK
    /\ NoTwoWorkersOnOneKey /\ NoDuplicatesInQueue /\ QueuedAreDirty
    /\ QueuedNotProcessing /\ DirtyIsQueuedOrInFlight /\ ProcessingIsHeld
    /\ StoppedWorkersHoldNothing /\ NothingWaitsAfterShutDown
    /\ DrainImpliesShuttingDown

-----------------------------------------------------------------------------
(* Liveness under weak fairness of the workers.                            *)

(* Every dirty key is eventually handed out (items 3-4: no lost re-add),   *)
(* shutdown or not: queued keys are still handed out after ShutDown.       *)
DirtyKeysAreProcessed == \A x \in Keys : (x \in dirty) ~> (x \notin dirty)

(* A delayed add eventually happens or is dropped by shutdown.             *)
WaitingKeysFire == \A x \in Keys : (x \in waiting) ~> (x \notin waiting)

(* ShutDownWithDrain returns (item 9).                                      *)
DrainTerminates == (drainer = "waiting") ~> (drainer = "returned")

(* After shutdown every worker's Get eventually returns shutdown (item 8). *)
WorkersStop == shuttingDown ~> (stopped = Workers)
=============================================================================
