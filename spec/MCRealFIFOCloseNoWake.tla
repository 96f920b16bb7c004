-------------------- MODULE MCRealFIFOCloseNoWake --------------------
(* Mutation of ONE action of RealFIFOClose.tla (non-atomic): Close marks   *)
(* the FIFO closed but wakes no one, so a consumer already waiting in Pop  *)
(* on an empty FIFO waits forever (the blocked Pop kubernetes PR #90825   *)
(* fixed).                                                                 *)
(* Expected: ExitsAfterClose violated.                                     *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2
MCAtomic == FALSE

CloseNoWake ==
    /\ ~closed
    /\ closed' = TRUE
    /\ UNCHANGED <<fifoVars, consumer>>

NextRealFIFOCloseNoWake ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ CloseNoWake \/ Exit

ConsumeRealFIFOCloseNoWake == Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process \/ Wait \/ Exit

SpecRealFIFOCloseNoWake == Init /\ [][NextRealFIFOCloseNoWake]_vars /\ WF_vars(ConsumeRealFIFOCloseNoWake)
=============================================================================
