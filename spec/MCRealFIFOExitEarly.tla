-------------------- MODULE MCRealFIFOExitEarly --------------------
(* Mutation of ONE action of RealFIFOClose.tla (non-atomic): the consumer  *)
(* checks `closed` before the log, so its pop returns ErrFIFOClosed while *)
(* entries queued before Close are still waiting: they are lost.          *)
(* Expected: ExitOnlyWhenDrained violated.                                *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2
MCAtomic == FALSE

ExitEarly ==
    /\ Running
    /\ closed
    /\ processing = <<>>
    /\ consumer' = "exited"
    /\ UNCHANGED <<fifoVars, closed>>

NextRealFIFOExitEarly ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ ExitEarly

ConsumeRealFIFOExitEarly == Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process \/ Wait \/ ExitEarly

SpecRealFIFOExitEarly == Init /\ [][NextRealFIFOExitEarly]_vars /\ WF_vars(ConsumeRealFIFOExitEarly)
=============================================================================
