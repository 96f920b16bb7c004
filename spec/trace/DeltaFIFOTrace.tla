--------------------------- MODULE DeltaFIFOTrace ---------------------------
(***************************************************************************)
(* Trace validation for DeltaFIFO.tla: is a run of the Python simulator    *)
(* with `--fifo delta` a behaviour of the spec?  The technique, the trace  *)
(* records [state, acts, budget, reset] and the verdict are those of       *)
(* WorkQueueTrace.tla; a reset is a new informer (crash and restart),      *)
(* whose FIFO and store must be in Init.  Records have one more hint,      *)
(* `lists`: the relist results the code step may hand to Replace.          *)
(*                                                                         *)
(* Mapped (refimpl/tla/trace.py): queue; items, listing only the queued    *)
(* keys (the others map to <<>>); store, listing only the stored keys (the *)
(* others map to 0); synced, the informer's HasSynced, which the simulator *)
(* re-reads after every FIFO write and pop, where the spec updates        *)
(* `synced`.  Not in the trace, so left to the spec: populated and         *)
(* initialPopulationCount.                                                 *)
(*                                                                         *)
(* DeltaFIFO.tla's Next quantifies over sets far too large to enumerate   *)
(* for a real trace (every object, every relist result, every order of the *)
(* known keys).  SpecStep takes its arguments from subsets the trace can   *)
(* use, which only narrows Next (a trace can be wrongly rejected, never    *)
(* wrongly accepted):                                                      *)
(*   TraceObjs  the objects that appear in the trace's FIFO or store (an   *)
(*              object that never appears cannot be the argument of a      *)
(*              one-step Add / Update / Delete whose result is a line);    *)
(*   lists      the relist result the line shows, if any (the objects     *)
(*              whose Replaced delta the step appended, newly queued keys  *)
(*              first, in their queue order), and the empty list;          *)
(*   Orders     (Go's map order in Replace and Resync; the cfg overrides   *)
(*              it with TraceOrders) every order of up to 3 keys, else the *)
(*              orders the trace shows: the keys a relist newly tombstoned *)
(*              or a resync newly queued, in queue order.                  *)
(* ProducerMayRun is overridden with TRUE: MaxQueued bounds the model, not *)
(* the code (the code's DeltaFIFO is unbounded), and is in any case bound  *)
(* above the longest FIFO of the trace; recounting the queued deltas for   *)
(* every candidate object would dominate the run time.                     *)
(***************************************************************************)
EXTENDS DeltaFIFO, TLC

CONSTANTS
    TraceIn,        \* Seq([state, acts, budget, reset, lists])
    TraceObjsIn,    \* a subset of Objs
    OrderHintsIn    \* a set of key sequences: orders in which the code queued keys

(* TLC evaluates a constant definition once, but a cfg substitution for a  *)
(* CONSTANT at every use: the trace's values are read through these.       *)
Trace == TraceIn
TraceObjs == TraceObjsIn
OrderHints == OrderHintsIn

VARIABLES
    i,      \* trace lines matched
    sub,    \* spec steps taken since line i
    act     \* the spec action of the step into this state ("-": none)

traceVars == <<vars, i, sub>>

ItemsOf(t) ==
    [k \in Keys |-> IF k \in DOMAIN t.state.items THEN t.state.items[k] ELSE <<>>]
StoreOf(t) ==
    [k \in Keys |-> IF k \in DOMAIN t.state.store THEN t.state.store[k] ELSE 0]

(* Conjoined before the spec action: TLC takes the primed values of the    *)
(* mapped variables from the trace; the action assigns the other two.      *)
IsNext(t) ==
    /\ queue' = t.state.queue
    /\ items' = ItemsOf(t)
    /\ store' = StoreOf(t)
    /\ synced' = t.state.synced

AllOrders(S) == {s \in [1..Cardinality(S) -> S] : Range(s) = S}
TraceOrders(S) ==
    IF Cardinality(S) <= 3 THEN AllOrders(S) ELSE {s \in OrderHints : Range(s) = S}

(* Replaces ProducerMayRun in the cfg (see above).                        *)
Unbounded == TRUE

(* One step of DeltaFIFO's Next towards line t, restricted by its hints.    *)
SpecStep(t) ==
    LET acts == t.acts IN
    \/ "Add" \in acts /\ act' = "Add" /\ \E o \in TraceObjs : Add(o)
    \/ "Update" \in acts /\ act' = "Update" /\ \E o \in TraceObjs : Update(o)
    \/ "Delete" \in acts /\ act' = "Delete" /\ \E o \in TraceObjs : Delete(o)
    \/ "Replace" \in acts /\ act' = "Replace" /\ \E l \in t.lists : Replace(l)
    \/ "Resync" \in acts /\ act' = "Resync" /\ Resync
    \/ "Pop" \in acts /\ act' = "Pop" /\ Pop

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
        /\ \/ sub = 0 /\ UNCHANGED vars /\ act' = "-"
           \/ sub < t.budget /\ SpecStep(t)
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

(* A new informer: its FIFO and store are in the initial state.            *)
Restart ==
    /\ i < Len(Trace)
    /\ sub = 0
    /\ Trace[i + 1].reset
    /\ IsNext(Trace[i + 1])
    /\ populated' = FALSE
    /\ initialPopulationCount' = 0
    /\ Init'
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
