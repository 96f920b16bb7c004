--------------------------- MODULE WorkQueueTrace ---------------------------
(***************************************************************************)
(* Trace validation for WorkQueue.tla: is a run of the Python simulator a  *)
(* behaviour of the spec?  refimpl/tla/trace.py maps the n-th JSON line of *)
(* the simulator's trace to Trace[n] = [state, acts, budget, reset]:       *)
(*   state  the spec variables after the n-th code step (a record)         *)
(* and three hints taken from the code step's name:                        *)
(*   acts   the spec actions the code step may take (Get for a `get`, ...) *)
(*   budget how many spec steps it may take; 0: none, the mapped           *)
(*          variables must be unchanged (a reconcile, a FIFO pop, ...)     *)
(*   reset  the controller process crashed and a new one started with a    *)
(*          new queue, which must be in Init (a restart is not a step of   *)
(*          the spec, which describes one process's queue).                *)
(*                                                                         *)
(* `i` counts the trace lines matched so far (0: the initial state, before *)
(* the first code step), `sub` the spec steps taken towards line i+1.      *)
(* Some code steps are several spec steps: a failed reconcile's `done` is  *)
(* AddAfter (the rate-limited re-add) then Done; a clock `advance` fires   *)
(* every due delayed add, one Ready each.  So up to `budget` spec steps    *)
(* lead from line i to line i+1, of which only the last state is compared. *)
(*                                                                         *)
(* The verdict: TLC explores the behaviours of the spec that follow the    *)
(* trace (few: every line fixes the state) and ReportLine prints each line *)
(* reached; the trace is a behaviour iff its last line is printed, else    *)
(* the first line not printed is where code and spec part.  An invariant   *)
(* i < Len(Trace), violated at the end, would say the same but makes TLC   *)
(* rebuild and print the whole trace, which costs more than the check.     *)
(* Deadlock is no test either: a multi-step code step's intermediate       *)
(* states include dead ends even when another branch reaches the line.     *)
(***************************************************************************)
EXTENDS WorkQueue, TLC

CONSTANT TraceIn    \* Seq([state, acts, budget, reset]), see above

(* TLC evaluates a constant definition once, but a cfg substitution for a  *)
(* CONSTANT at every use: the trace is read through this definition.       *)
Trace == TraceIn

VARIABLES
    i,      \* trace lines matched
    sub,    \* spec steps taken since line i
    act     \* the spec action of the step into this state ("-": none)

traceVars == <<vars, i, sub>>

(* The spec variables after the step are line t's.  Conjoined before the   *)
(* spec action, so TLC takes the primed values from the trace and the      *)
(* action only has to check them.                                          *)
IsNext(t) ==
    /\ queue' = t.state.queue
    /\ dirty' = t.state.dirty
    /\ processing' = t.state.processing
    /\ shuttingDown' = t.state.shuttingDown
    /\ drain' = t.state.drain
    /\ holding' = t.state.holding
    /\ stopped' = t.state.stopped
    /\ waiting' = t.state.waiting
    /\ drainer' = t.state.drainer

(* One step of WorkQueue's Next, restricted to the actions named in acts.  *)
SpecStep(acts) ==
    \/ "Add" \in acts /\ act' = "Add" /\ \E x \in Keys : Add(x)
    \/ "AddAfter" \in acts /\ act' = "AddAfter" /\ \E x \in Keys : AddAfter(x)
    \/ "Ready" \in acts /\ act' = "Ready" /\ \E x \in Keys : Ready(x)
    \/ "Get" \in acts /\ act' = "Get" /\ \E w \in Workers : Get(w)
    \/ "WorkerExit" \in acts /\ act' = "WorkerExit" /\ \E w \in Workers : WorkerExit(w)
    \/ "Done" \in acts /\ act' = "Done" /\ \E w \in Workers : Done(w)
    \/ "ShutDown" \in acts /\ act' = "ShutDown" /\ ShutDown
    \/ "ShutDownWithDrain" \in acts /\ act' = "ShutDownWithDrain" /\ ShutDownWithDrain
    \/ "DrainReturn" \in acts /\ act' = "DrainReturn" /\ DrainReturn

TraceInit ==
    /\ Init
    /\ i = 0
    /\ sub = 0
    /\ act = "-"

(* Line i+1 reached: by a stutter (the code step changed no mapped          *)
(* variable), or by the last of at most budget spec steps.                 *)
Arrive ==
    /\ i < Len(Trace)
    /\ LET t == Trace[i + 1] IN
        /\ ~t.reset
        /\ IsNext(t)
        /\ \/ sub = 0 /\ UNCHANGED vars /\ act' = "-"
           \/ sub < t.budget /\ SpecStep(t.acts)
    /\ i' = i + 1
    /\ sub' = 0

(* A spec step on the way to line i+1 (its state is not in the trace).     *)
Between ==
    /\ i < Len(Trace)
    /\ LET t == Trace[i + 1] IN
        /\ ~t.reset
        /\ sub + 1 < t.budget
        /\ SpecStep(t.acts)
    /\ sub' = sub + 1
    /\ UNCHANGED i

(* The process restarted: its new queue is in the initial state.           *)
Restart ==
    /\ i < Len(Trace)
    /\ sub = 0
    /\ Trace[i + 1].reset
    /\ IsNext(Trace[i + 1])
    /\ Init'
    /\ i' = i + 1
    /\ act' = "-"
    /\ sub' = 0

TraceNext == Arrive \/ Between \/ Restart

(* Checked as an invariant (it always holds), so it runs once per distinct *)
(* state: prints each line reached (the states with sub = 0 are the        *)
(* trace's own, one per line).                                             *)
ReportLine == sub # 0 \/ PrintT(<<"trace-line", i>>)

(* Checked after ReportLine: violated once every line is matched, so TLC   *)
(* prints a witness, a behaviour through the whole trace, whose act values *)
(* are the spec actions it took (refimpl/tla/trace_core.py counts them).   *)
(* The cfg's VIEW is traceVars, so act adds no state to the search.        *)
NotDone == i < Len(Trace)
=============================================================================
