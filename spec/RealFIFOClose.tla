---------------------------- MODULE RealFIFOClose ----------------------------
(***************************************************************************)
(* RealFIFO.tla with Close (the_real_fifo.go Close; refimpl RealFIFOCore   *)
(* .close) and the consumer's end.  The consumer waits when nothing is    *)
(* queued; every producer call and Close wake it (the shell's broadcast); *)
(* a Pop / PopBatch on a closed FIFO with nothing queued returns          *)
(* ErrFIFOClosed, and the informer's processLoop exits.  Close refuses   *)
(* nothing: producers may still add after it (the   *)
(* code does not check `closed` on the producer side), and what they add  *)
(* after the consumer exited stays queued.  The consumer drains whatever  *)
(* is queued first.                                                        *)
(*                                                                         *)
(* The actions keep RealFIFO.tla's names (each is RealFIFO's action; the  *)
(* consumer's need it running), so the graphs and the code replay name    *)
(* them alike; Wait, Close and Exit are new.  A module                    *)
(* of its own because InformerAtomic.tla INSTANCEs RealFIFO.tla and has   *)
(* no `closed`.                                                            *)
(*                                                                         *)
(* Refined by refimpl/cache/real_fifo.py: refimpl/tla/refine_fifo.py.     *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Keys, RVs, MaxQueued, Atomic

VARIABLES
    log, processing, populated, initialPopulationCount, synced, store,  \* RealFIFO.tla's
    closed,     \* BOOLEAN: Close was called
    consumer    \* "running", "waiting" (blocked in Pop on an empty FIFO) or
                \* "exited" (its Pop returned ErrFIFOClosed; it pops no more)

F == INSTANCE RealFIFO

fifoVars == <<log, processing, populated, initialPopulationCount, synced, store>>
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
PopBatch == Running /\ F!PopBatch /\ UNCHANGED closeVars
Take == Running /\ F!Take /\ UNCHANGED closeVars
TakeBatch == Running /\ F!TakeBatch /\ UNCHANGED closeVars
Process == F!Process /\ UNCHANGED closeVars

(* The consumer's Pop finds nothing queued and the FIFO open: it waits.    *)
Wait ==
    /\ Running
    /\ processing = <<>>
    /\ log = <<>>
    /\ ~closed
    /\ consumer' = "waiting"
    /\ UNCHANGED <<fifoVars, closed>>

(* Close: mark closed and wake the waiting consumer (FIFO-9).              *)
Close ==
    /\ ~closed
    /\ closed' = TRUE
    /\ Wake
    /\ UNCHANGED fifoVars

(* The consumer, between entries, finds the FIFO closed and empty: its pop *)
(* returns ErrFIFOClosed and the process loop returns.                     *)
Exit ==
    /\ Running
    /\ closed
    /\ processing = <<>>
    /\ log = <<>>
    /\ consumer' = "exited"
    /\ UNCHANGED <<fifoVars, closed>>

Init == F!Init /\ closed = FALSE /\ consumer = "running"

Consume == Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process \/ Wait \/ Exit

Next ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ Exit

Spec == Init /\ [][Next]_vars /\ WF_vars(Consume)

-----------------------------------------------------------------------------
TypeOK == F!TypeOK /\ closed \in BOOLEAN /\ consumer \in {"running", "waiting", "exited"}

SyncedMeansInitialListProcessed == F!SyncedMeansInitialListProcessed
InitialCountWithinLog == F!InitialCountWithinLog
NotSyncedWhileInitialEntryInFlight == F!NotSyncedWhileInitialEntryInFlight
OnlyDeletesCarryTombstones == F!OnlyDeletesCarryTombstones
(* The action properties are stated here over all of vars, so that TLC    *)
(* names them, not F!'s, when one is violated.                             *)
SyncedIsMonotone == [][synced => synced']_vars
ReplacedAllSetsStoreKeys == [][F!ReplacedAllStep]_vars
TakenIsProcessed == F!TakenIsProcessed
BatchIsWellFormed ==
    [][Len(log') < Len(log) => F!BatchOK(SubSeq(log, 1, Len(log) - Len(log')))]_vars
RelistLeavesListedKeys ==
    [][\A l \in Lists : F!Relisted(l) => F!EventualKeys' = F!Listed(l)]_vars
(* The initial list is processed and HasSynced turns true -- unless the   *)
(* consumer exited first (producers may list after Close; nothing queued   *)
(* after the exit is processed).                                           *)
InitialListIsProcessed == populated ~> (synced \/ consumer = "exited")

(* FIFO-9: the consumer ends only once closed with nothing queued or in    *)
(* flight: Close loses no entry queued before it.                          *)
ExitOnlyWhenDrained ==
    [][consumer # "exited" /\ consumer' = "exited" =>
         closed /\ log = <<>> /\ processing = <<>>]_vars

(* FIFO-9: once closed, a waiting consumer wakes, drains and ends --       *)
(* unless producers never stop adding.  The escape is stated over what     *)
(* they add, not over the actions that add: infinitely many steps grow    *)
(* the log (naming the producer actions would let a mutated producer,   *)
(* which is none of them, fail the escape that this restatement keeps).  *)
ExitsAfterClose == []<><<Len(log') > Len(log)>>_vars \/ (closed ~> (consumer = "exited"))
=============================================================================
