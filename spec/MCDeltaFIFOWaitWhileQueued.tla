--------------------- MODULE MCDeltaFIFOWaitWhileQueued ---------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: the consumer's Pop      *)
(* waits without looking at the queue, so with keys queued it sleeps     *)
(* until a producer or Close wakes it, which nobody must do. Expected:   *)
(* QueuedKeysArePopped violated.                                         *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

WaitWhileQueued ==
    /\ Running
    /\ ~closed
    /\ consumer' = "waiting"
    /\ UNCHANGED <<fifoVars, closed>>

NextWaitWhileQueued ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop
    \/ WaitWhileQueued \/ Close \/ Exit

FairWaitWhileQueued == WF_vars(Pop \/ WaitWhileQueued \/ Exit)

SpecWaitWhileQueued == Init /\ [][NextWaitWhileQueued]_vars /\ FairWaitWhileQueued
=============================================================================
