------------------------ MODULE MCDeltaFIFOExitEarly ------------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: the consumer checks     *)
(* closed before the queue, so its Pop returns ErrFIFOClosed with keys   *)
(* still queued. Expected: ExitOnlyWhenDrained violated.                 *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2

ExitEarly ==
    /\ Running
    /\ closed
    /\ consumer' = "exited"
    /\ UNCHANGED <<fifoVars, closed>>

NextExitEarly ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop
    \/ Wait \/ Close \/ ExitEarly

SpecExitEarly == Init /\ [][NextExitEarly]_vars
=============================================================================
