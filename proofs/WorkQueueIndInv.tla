--------------------------- MODULE WorkQueueIndInv ---------------------------
(***************************************************************************)
(* An inductive invariant of spec/WorkQueue.tla.  IndInv holds initially   *)
(* and every Next step from ANY state satisfying TypeOK /\ IndInv leads to *)
(* a state satisfying IndInv, reachable or not.  TLC checks the step by    *)
(* starting from all such states (IndInit) within the model's constants;  *)
(* IndInv bounds the queue (no duplicates), so for those constants the    *)
(* check covers every type-correct state.  The safety invariants of        *)
(* WorkQueue are conjuncts, so they hold in every reachable state.         *)
(***************************************************************************)
EXTENDS WorkQueue

IndInv ==
    /\ TypeOK
    /\ NoDuplicatesInQueue
    /\ QueuedAreDirty
    /\ QueuedNotProcessing
    /\ DirtyIsQueuedOrInFlight
    /\ ProcessingIsHeld
    /\ NoTwoWorkersOnOneKey
    /\ StoppedWorkersHoldNothing
    /\ NothingWaitsAfterShutDown
    /\ DrainImpliesShuttingDown
    /\ drain => drainer # "idle"
    /\ drainer # "idle" => shuttingDown
    /\ stopped # {} => shuttingDown

(* TypeOK with the queue's length bounded so that TLC can enumerate it.    *)
BoundedSeq(S, n) == UNION {[1..m -> S] : m \in 0..n}

TypeOKBounded ==
    /\ queue \in BoundedSeq(Keys, Cardinality(Keys))
    /\ dirty \in SUBSET Keys
    /\ processing \in SUBSET Keys
    /\ shuttingDown \in BOOLEAN
    /\ drain \in BOOLEAN
    /\ holding \in [Workers -> Keys \cup {NoItem}]
    /\ stopped \in SUBSET Workers
    /\ waiting \in SUBSET Keys
    /\ drainer \in {"idle", "waiting", "returned"}

(* Consecution: start anywhere IndInv holds, take one step.                *)
IndInit == TypeOKBounded /\ IndInv

(* Initiation: Init implies IndInv (the initial state, and no step).       *)
NoStep == UNCHANGED vars
=============================================================================
