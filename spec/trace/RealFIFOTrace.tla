---------------------------- MODULE RealFIFOTrace ----------------------------
(***************************************************************************)
(* Trace validation for RealFIFO.tla: is a run of the Python simulator    *)
(* with `--fifo real-atomic` (Atomic = TRUE) or `--fifo real` (Atomic =   *)
(* FALSE) a behaviour of the spec?  The technique, the records [state,     *)
(* acts, budget, reset, lists] and the verdict are those of                *)
(* DeltaFIFOTrace.tla.                                                     *)
(*                                                                         *)
(* Mapped (refimpl/tla/trace.py): log, the simulator's FIFO without its   *)
(* Bookmark entries (the spec has none; processing one changes nothing    *)
(* mapped); processing = <<>> (the simulator takes and processes an entry *)
(* in one step, so no line falls between Take and Process); store, synced. *)
(* Not in the trace, so left to the spec: populated and                    *)
(* initialPopulationCount.                                                 *)
(*                                                                         *)
(* As in DeltaFIFOTrace.tla, SpecStep takes its arguments from subsets     *)
(* the trace can use, which only narrows Next: TraceObjs (the objects the *)
(* trace shows), lists (the relist result the line shows, and <<>>) and,  *)
(* through the cfg's Orders <- TraceOrders, every order of up to 3 keys,  *)
(* else the orders the trace shows.  ProducerMayRun is overridden with    *)
(* TRUE: the code's RealFIFO is unbounded.                                 *)
(***************************************************************************)
EXTENDS RealFIFO, TLC

CONSTANTS
    TraceIn,        \* Seq([state, acts, budget, reset, lists])
    TraceObjsIn,    \* a subset of Objs
    OrderHintsIn    \* a set of key sequences: orders in which the code queued keys

Trace == TraceIn
TraceObjs == TraceObjsIn
OrderHints == OrderHintsIn

VARIABLES
    i,      \* trace lines matched
    sub,    \* spec steps taken since line i
    act     \* the spec action of the step into this state ("-": none)

traceVars == <<vars, i, sub>>

StoreOf(t) ==
    [k \in Keys |-> IF k \in DOMAIN t.state.store THEN t.state.store[k] ELSE 0]

IsNext(t) ==
    /\ log' = t.state.log
    /\ processing' = <<>>
    /\ store' = StoreOf(t)
    /\ synced' = t.state.synced

AllOrders(S) == {s \in [1..Cardinality(S) -> S] : Range(s) = S}
TraceOrders(S) ==
    IF Cardinality(S) <= 3 THEN AllOrders(S) ELSE {s \in OrderHints : Range(s) = S}

Unbounded == TRUE

SpecStep(t) ==
    LET acts == t.acts IN
    \/ "Add" \in acts /\ act' = "Add" /\ \E o \in TraceObjs : Add(o)
    \/ "Update" \in acts /\ act' = "Update" /\ \E o \in TraceObjs : Update(o)
    \/ "Delete" \in acts /\ act' = "Delete" /\ \E o \in TraceObjs : Delete(o)
    \/ "Replace" \in acts /\ act' = "Replace" /\ \E l \in t.lists : Replace(l)
    \/ "Resync" \in acts /\ act' = "Resync" /\ Resync
    \/ "Pop" \in acts /\ act' = "Pop" /\ Pop
    \/ "Take" \in acts /\ act' = "Take" /\ Take
    \/ "Process" \in acts /\ act' = "Process" /\ Process

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
