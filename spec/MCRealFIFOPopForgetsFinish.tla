-------------------- MODULE MCRealFIFOPopForgetsFinish --------------------
(* Mutation of ONE action of RealFIFOClose.tla (non-atomic): Pop processes *)
(* the head entry but skips the bookkeeping after it (no finish(1)), so   *)
(* the initial count never reaches 0 when the initial list is popped one  *)
(* entry at a time, and HasSynced never turns true.                       *)
(* Expected: InitialListIsProcessed violated.                             *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2
MCAtomic == FALSE

PopForgetsFinish ==
    /\ Running
    /\ ~Atomic
    /\ log # <<>>
    /\ log' = Tail(log)
    /\ store' = F!Applied(Head(log))
    /\ UNCHANGED <<processing, populated, initialPopulationCount, synced, closeVars>>

NextRealFIFOPopForgetsFinish ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ PopForgetsFinish \/ PopBatch \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ Exit

ConsumeRealFIFOPopForgetsFinish == PopForgetsFinish \/ PopBatch \/ Take \/ TakeBatch \/ Process \/ Wait \/ Exit

SpecRealFIFOPopForgetsFinish == Init /\ [][NextRealFIFOPopForgetsFinish]_vars /\ WF_vars(ConsumeRealFIFOPopForgetsFinish)
=============================================================================
