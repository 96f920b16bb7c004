------------------------- MODULE InformerAtomicTrace -------------------------
(***************************************************************************)
(* Trace validation for InformerAtomic.tla: is a run of the Python         *)
(* simulator (an informer-spec scenario, `--fifo real-atomic`, the         *)
(* client-go v1.36+ default) a behaviour of the whole informer with an     *)
(* atomic RealFIFO?  Everything is as in InformerTrace.tla but the FIFO:   *)
(* log, the simulator's RealFIFO without its Bookmark entries (not         *)
(* modelled; processing one changes nothing mapped), and processing =     *)
(* <<>>, outbox = <<>> and written = FALSE at every line: the simulator    *)
(* takes and processes a batch in one step, which is, per entry, Take,     *)
(* ApplyEntry, one Distribute per handler call and Finish (the budget      *)
(* bounds them from the log before the line).  Batches hold entries of     *)
(* distinct keys and a ReplacedAll is taken alone, so processing a batch   *)
(* at once notifies what entry-by-entry processing would.  ApplyEntry      *)
(* chooses the order of a ReplacedAll's deletions through RF!Orders, which *)
(* the cfg overrides with TraceOrders.                                     *)
(***************************************************************************)
EXTENDS InformerAtomic, TLC

CONSTANTS
    TraceIn,        \* Seq([state, acts, budget, reset, least, open])
    TraceHistoryIn, \* Seq([type, key, rv]): every server write of the trace
    OrderHintsIn    \* a set of sequences: orders of objects or keys the code used

Trace == TraceIn
TraceHistory == TraceHistoryIn
OrderHints == OrderHintsIn

VARIABLES
    i,      \* trace lines matched
    sub,    \* spec steps taken since line i
    act     \* the spec action of the step into this state ("-": none)

traceVars == <<vars, i, sub>>

OrZero(m) == [k \in Keys |-> IF k \in DOMAIN m THEN m[k] ELSE 0]

IsNext(t) ==
    /\ server' = OrZero(t.state.server)
    /\ history' = SubSeq(TraceHistory, 1, t.state.history)
    /\ compacted' = t.state.compacted
    /\ reflector' = t.state.reflector
    /\ lastSyncRV' = t.state.lastSyncRV
    /\ log' = t.state.log
    /\ synced' = t.state.synced
    /\ store' = OrZero(t.state.store)
    /\ notifications' = t.state.notifications
    /\ view' = OrZero(t.state.view)
    /\ lastRV' = OrZero(t.state.lastRV)
    /\ IF t.open THEN TRUE ELSE
       /\ processing' = <<>>
       /\ outbox' = <<>>
       /\ written' = FALSE

TraceRange(s) == {s[n] : n \in DOMAIN s}
AllOrders(S) == {s \in [1..Cardinality(S) -> S] : TraceRange(s) = S}
(* Replaces RealFIFO's Orders in the cfg (see InformerTrace.tla).          *)
(* The hints hold orders of objects and of keys, and TLC stops with an     *)
(* error when it compares a record with a string: a hint is matched by its *)
(* length and printed form first (a relist of 4 objects after one that    *)
(* tombstoned 4 keys met it).                                              *)
TraceOrders(S) ==
    IF Cardinality(S) <= 3 THEN AllOrders(S)
    ELSE {s \in OrderHints : /\ Len(s) = Cardinality(S)
                             /\ ToString(TraceRange(s)) = ToString(S)
                             /\ TraceRange(s) = S}

NextWrite(t) ==
    /\ Len(history) < t.state.history
    /\ Write(TraceHistory[Len(history) + 1].key)
    /\ history' = SubSeq(TraceHistory, 1, Len(history) + 1)

SpecStep(t) ==
    LET acts == t.acts IN
    \/ "Write" \in acts /\ act' = "Write" /\ NextWrite(t)
    \/ "Compact" \in acts /\ act' = "Compact" /\ Compact
    \/ "List" \in acts /\ act' = "List" /\ List
    \/ "Connect" \in acts /\ act' = "Connect" /\ Connect
    \/ "WatchEvent" \in acts /\ act' = "WatchEvent" /\ WatchEvent
    \/ "WatchDrop" \in acts /\ act' = "WatchDrop" /\ WatchDrop
    \/ "Take" \in acts /\ act' = "Take" /\ Take
    \/ "ApplyEntry" \in acts /\ act' = "ApplyEntry" /\ ApplyEntry
    \/ "Distribute" \in acts /\ act' = "Distribute" /\ Distribute
    \/ "Finish" \in acts /\ act' = "Finish" /\ Finish
    \/ "Handle" \in acts /\ act' = "Handle" /\ Handle

TraceInit ==
    /\ Init
    /\ i = 0
    /\ sub = 0
    /\ act = "-"

Arrive ==
    /\ i < Len(Trace)
    /\ LET t == Trace[i + 1] IN
        /\ ~t.reset
        /\ IsNext(t)
        /\ \/ sub = 0 /\ t.least = 0 /\ UNCHANGED vars /\ act' = "-"
           \/ sub < t.budget /\ sub + 1 >= t.least /\ SpecStep(t)
    /\ i' = i + 1
    /\ sub' = 0

Between ==
    /\ i < Len(Trace)
    /\ LET t == Trace[i + 1] IN
        /\ ~t.reset
        /\ sub + 1 < t.budget
        /\ SpecStep(t)
    /\ sub' = sub + 1
    /\ UNCHANGED i

(* A new informer against the same server: all but the server as in Init. *)
Restart ==
    /\ i < Len(Trace)
    /\ sub = 0
    /\ Trace[i + 1].reset
    /\ IsNext(Trace[i + 1])
    /\ UNCHANGED serverVars
    /\ reflector' = "list"
    /\ lastSyncRV' = 0
    /\ populated' = FALSE
    /\ initialPopulationCount' = 0
    /\ (RF!Init)'
    /\ notifications' = <<>>
    /\ view' = [k \in Keys |-> 0]
    /\ lastRV' = [k \in Keys |-> 0]
    /\ applied' = {}
    /\ outbox' = <<>>
    /\ written' = FALSE
    /\ i' = i + 1
    /\ act' = "-"
    /\ sub' = 0

TraceNext == Arrive \/ Between \/ Restart

ReportLine == sub # 0 \/ PrintT(<<"trace-line", i>>)

(* Checked after ReportLine: violated once every line is matched, so TLC   *)
(* prints a witness, a behaviour through the whole trace, whose act values *)
(* are the spec actions it took (refimpl/tla/trace_core.py counts them).   *)
(* The cfg's VIEW is traceVars, so act adds no state to the search.        *)
NotDone == i < Len(Trace)
=============================================================================
