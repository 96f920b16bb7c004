---------------------------- MODULE DeltaFIFOClose ----------------------------
(***************************************************************************)
(* DeltaFIFO.tla with Close (delta_fifo.go Close; refimpl DeltaFIFOCore    *)
(* .close) and the consumer's end, as RealFIFOClose.tla: the consumer      *)
(* waits when nothing is queued, every producer call and Close wake it    *)
(* (the shell's broadcast), and a Pop on a closed FIFO with nothing       *)
(* queued returns ErrFIFOClosed, ending the informer's processLoop.       *)
(* Close refuses nothing: producers may still call after it, and what     *)
(* they queue after the consumer exited stays queued.                      *)
(*                                                                         *)
(* The actions keep DeltaFIFO.tla's names (Pop needs the consumer         *)
(* running); Wait, Close and Exit are new.  A module of its own because   *)
(* Informer.tla INSTANCEs DeltaFIFO.tla and has no `closed`.              *)
(*                                                                         *)
(* Refined by refimpl/cache/delta_fifo.py: refimpl/tla/refine_fifo.py.    *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Keys, RVs, MaxQueued, EmitDeltaTypeReplaced

VARIABLES
    queue, items, populated, initialPopulationCount, synced, store,  \* DeltaFIFO.tla's
    closed,     \* BOOLEAN: Close was called
    consumer    \* "running", "waiting" (blocked in Pop on an empty FIFO) or
                \* "exited" (its Pop returned ErrFIFOClosed; it pops no more)

F == INSTANCE DeltaFIFO

fifoVars == <<queue, items, populated, initialPopulationCount, synced, store>>
closeVars == <<closed, consumer>>
vars == <<fifoVars, closeVars>>

Objs == F!Objs
Lists == F!Lists

(* Every producer call wakes a waiting consumer (even one that queued     *)
(* nothing).                                                                *)
Wake == consumer' = IF consumer = "waiting" THEN "running" ELSE consumer

Add(o) == F!Add(o) /\ Wake /\ UNCHANGED closed
Update(o) == F!Update(o) /\ Wake /\ UNCHANGED closed
Delete(o) == F!Delete(o) /\ Wake /\ UNCHANGED closed
Replace(l) == F!Replace(l) /\ Wake /\ UNCHANGED closed
Resync == F!Resync /\ Wake /\ UNCHANGED closed

Running == consumer = "running"
Pop == Running /\ F!Pop /\ UNCHANGED closeVars

(* The consumer's Pop finds nothing queued and the FIFO open: it waits.    *)
Wait ==
    /\ Running
    /\ queue = <<>>
    /\ ~closed
    /\ consumer' = "waiting"
    /\ UNCHANGED <<fifoVars, closed>>

(* Close: mark closed and wake the waiting consumer (FIFO-9).              *)
Close ==
    /\ ~closed
    /\ closed' = TRUE
    /\ Wake
    /\ UNCHANGED fifoVars

(* The consumer finds the FIFO closed and empty: Pop returns               *)
(* ErrFIFOClosed and the process loop returns.                             *)
Exit ==
    /\ Running
    /\ closed
    /\ queue = <<>>
    /\ consumer' = "exited"
    /\ UNCHANGED <<fifoVars, closed>>

Init == F!Init /\ closed = FALSE /\ consumer = "running"

Consume == Pop \/ Wait \/ Exit

Next ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop
    \/ Wait \/ Close \/ Exit

Spec == Init /\ [][Next]_vars /\ WF_vars(Consume)

-----------------------------------------------------------------------------
TypeOK == F!TypeOK /\ closed \in BOOLEAN /\ consumer \in {"running", "waiting", "exited"}

QueueIsItemsKeys == F!QueueIsItemsKeys
DeltasBelongToTheirKey == F!DeltasBelongToTheirKey
NoAdjacentDeletes == F!NoAdjacentDeletes
OnlyDeletesCarryTombstones == F!OnlyDeletesCarryTombstones
SyncedMeansInitialListHandedOut == F!SyncedMeansInitialListHandedOut
InitialCountWithinQueue == F!InitialCountWithinQueue
(* The action properties are stated here over all of vars, so that TLC    *)
(* names them, not F!'s, when one is violated.                             *)
SyncedIsMonotone == [][synced => synced']_vars
ReplaceTombstonesVanished == [][F!TombstonesVanishedStep]_vars
ResyncSkipsQueuedKeys == [][F!ResyncSkipsQueuedStep]_vars

(* Liveness: every queued key is handed out -- unless the consumer exited  *)
(* (it can only do so with nothing queued: keys queued after that stay).   *)
QueuedKeysArePopped == \A k \in Keys : F!Queued(k) ~> (~F!Queued(k) \/ consumer = "exited")

(* FIFO-9: the consumer ends only once closed with nothing queued: Close   *)
(* loses no key queued before it.                                           *)
ExitOnlyWhenDrained ==
    [][consumer # "exited" /\ consumer' = "exited" => closed /\ queue = <<>>]_vars

(* FIFO-9: once closed, a waiting consumer wakes, drains and ends --       *)
(* unless producers never stop adding.  The escape is stated over what     *)
(* they add, not over the actions that add: infinitely many steps grow    *)
(* some key's deltas (a producer call that adds nothing cannot keep the   *)
(* consumer from Exit, which weak fairness then takes).                   *)
ExitsAfterClose ==
    []<><<\E k \in Keys : Len(items'[k]) > Len(items[k])>>_vars
    \/ (closed ~> (consumer = "exited"))
=============================================================================
