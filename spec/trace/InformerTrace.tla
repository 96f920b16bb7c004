---------------------------- MODULE InformerTrace ----------------------------
(***************************************************************************)
(* Trace validation for Informer.tla: is a run of the Python simulator    *)
(* (an informer-spec scenario, `--fifo delta`) a behaviour of the whole    *)
(* informer -- server, reflector, DeltaFIFO, store, listener and handler?  *)
(* The technique, the records [state, acts, budget, reset] and the verdict *)
(* are those of WorkQueueTrace.tla.                                        *)
(*                                                                         *)
(* Mapped (refimpl/tla/trace.py; rv = the code's rv - 1, as in            *)
(* refimpl/tla/refine_informer.py): server; history, every write the      *)
(* simulator saw the server make, compacted or not -- a line holds only   *)
(* its length, a prefix of TraceHistory; compacted; reflector, the        *)
(* simulator's reading of where the reflector loop is parked (not started *)
(* or in the relist backoff = "list"; backing off after a failed watch    *)
(* request, or holding an unread 410 answer = "connect"; reading an open  *)
(* watch = "watch"); lastSyncRV; queue, items, synced and store as in     *)
(* DeltaFIFOTrace.tla; notifications, the pending notifications of the    *)
(* listener h0; view and lastRV, kept by a recording handler behind h0.   *)
(* Partial maps in the trace (server, store, view, lastRV, items) list    *)
(* only their non-zero entries.  Not in the trace, so left to the spec:   *)
(* populated, initialPopulationCount and the history variable `applied`.  *)
(* A simulator step processes a popped key whole, so popped and outbox are *)
(* <<>> at every line; a pop line takes Pop, then StoreWrite and           *)
(* Distribute per delta of the head key.                                   *)
(*                                                                         *)
(* Some code steps are several spec steps: a reflector step that lists     *)
(* also opens its watch (List, Connect); one that sees its watch end       *)
(* re-watches at once (WatchDrop, Connect) -- unless the watch lasted     *)
(* under 1 s with no event: client-go then relists, which the spec does   *)
(* not model (the informer-spec scenario's watches last 2 s).  A line may *)
(* also take one Write per server write it shows (the first line: the    *)
(* scenario's initial objects too); each Write must append the next write *)
(* of TraceHistory, which only removes dead ends (history is append-only *)
(* and fixed by the line).  List chooses its list and tombstone order    *)
(* through DF!Orders, which the cfg overrides with TraceOrders: every     *)
(* order of up to 3 elements, else the orders the trace shows; that       *)
(* narrows Next, so a trace can be wrongly rejected, never wrongly        *)
(* accepted.                                                               *)
(*                                                                         *)
(* A reset is a crash and restart of the informer's process: the server   *)
(* keeps its state, everything else starts as in Init (a restart is not a *)
(* step of the spec, which describes one informer).                        *)
(***************************************************************************)
EXTENDS Informer, TLC

CONSTANTS
    TraceIn,        \* Seq([state, acts, budget, reset, least, open])
    TraceHistoryIn, \* Seq([type, key, rv]): every server write of the trace
    OrderHintsIn    \* a set of sequences: orders of objects or keys the code used

(* TLC evaluates a constant definition once, but a cfg substitution for a  *)
(* CONSTANT at every use: the trace's values are read through these.       *)
Trace == TraceIn
TraceHistory == TraceHistoryIn
OrderHints == OrderHintsIn

VARIABLES
    i,      \* trace lines matched
    sub,    \* spec steps taken since line i
    act     \* the spec action of the step into this state ("-": none)

traceVars == <<vars, i, sub>>

OrZero(m) == [k \in Keys |-> IF k \in DOMAIN m THEN m[k] ELSE 0]
ItemsOf(t) ==
    [k \in Keys |-> IF k \in DOMAIN t.state.items THEN t.state.items[k] ELSE <<>>]

(* Conjoined before the spec action: TLC takes the primed values of the    *)
(* mapped variables from the trace.                                        *)
IsNext(t) ==
    /\ server' = OrZero(t.state.server)
    /\ history' = SubSeq(TraceHistory, 1, t.state.history)
    /\ compacted' = t.state.compacted
    /\ reflector' = t.state.reflector
    /\ lastSyncRV' = t.state.lastSyncRV
    /\ queue' = t.state.queue
    /\ items' = ItemsOf(t)
    /\ synced' = t.state.synced
    /\ store' = OrZero(t.state.store)
    /\ notifications' = t.state.notifications
    /\ view' = OrZero(t.state.view)
    /\ lastRV' = OrZero(t.state.lastRV)
    /\ IF t.open THEN TRUE ELSE
       /\ popped' = <<>>
       /\ outbox' = <<>>

TraceRange(s) == {s[n] : n \in DOMAIN s}
AllOrders(S) == {s \in [1..Cardinality(S) -> S] : TraceRange(s) = S}
(* Replaces DeltaFIFO's Orders in the cfg (see above).                     *)
(* The hints hold orders of objects and of keys, and TLC stops with an     *)
(* error when it compares a record with a string: a hint is matched by its *)
(* length and printed form first (a relist of 4 objects after one that    *)
(* tombstoned 4 keys met it).                                              *)
TraceOrders(S) ==
    IF Cardinality(S) <= 3 THEN AllOrders(S)
    ELSE {s \in OrderHints : /\ Len(s) = Cardinality(S)
                             /\ ToString(TraceRange(s)) = ToString(S)
                             /\ TraceRange(s) = S}

(* The server's next write is the trace's next one.                        *)
NextWrite(t) ==
    /\ Len(history) < t.state.history
    /\ Write(TraceHistory[Len(history) + 1].key)
    /\ history' = SubSeq(TraceHistory, 1, Len(history) + 1)

(* One step of Informer's Next towards line t, among the actions it names. *)
SpecStep(t) ==
    LET acts == t.acts IN
    \/ "Write" \in acts /\ act' = "Write" /\ NextWrite(t)
    \/ "Compact" \in acts /\ act' = "Compact" /\ Compact
    \/ "List" \in acts /\ act' = "List" /\ List
    \/ "Connect" \in acts /\ act' = "Connect" /\ Connect
    \/ "WatchEvent" \in acts /\ act' = "WatchEvent" /\ WatchEvent
    \/ "WatchDrop" \in acts /\ act' = "WatchDrop" /\ WatchDrop
    \/ "Pop" \in acts /\ act' = "Pop" /\ Pop
    \/ "StoreWrite" \in acts /\ act' = "StoreWrite" /\ StoreWrite
    \/ "Distribute" \in acts /\ act' = "Distribute" /\ Distribute
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
    /\ (DF!Init)'
    /\ notifications' = <<>>
    /\ view' = [k \in Keys |-> 0]
    /\ lastRV' = [k \in Keys |-> 0]
    /\ applied' = {}
    /\ popped' = <<>>
    /\ outbox' = <<>>
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
