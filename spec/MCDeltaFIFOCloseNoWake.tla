----------------------- MODULE MCDeltaFIFOCloseNoWake -----------------------
(* Mutation of ONE action of DeltaFIFOClose.tla: Close marks the FIFO      *)
(* closed but wakes no one, so a Pop already waiting on an empty FIFO     *)
(* waits forever (the blocked Pop kubernetes PR #90825 fixed, FIFO-9).    *)
(* Expected: ExitsAfterClose violated.                                     *)
EXTENDS DeltaFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 1

CloseNoWake ==
    /\ ~closed
    /\ closed' = TRUE
    /\ UNCHANGED <<fifoVars, consumer>>

NextCloseNoWake ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop
    \/ Wait \/ CloseNoWake \/ Exit

SpecCloseNoWake == Init /\ [][NextCloseNoWake]_vars /\ WF_vars(Consume)
=============================================================================
