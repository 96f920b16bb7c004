-------------------- MODULE MCRealFIFOProcessWaitsForLog --------------------
(* Mutation of ONE action of RealFIFOClose.tla (atomic): the consumer    *)
(* processes a taken entry only once another entry is queued, which no   *)
(* producer has to do. Expected: TakenIsProcessed violated.              *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 1
MCAtomic == TRUE

ProcessWaitsForLog ==
    /\ processing # <<>>
    /\ log # <<>>
    /\ store' = F!ApplyAll(store, F!TakenDeltas)
    /\ processing' = <<>>
    /\ F!FinishedN(Len(processing))
    /\ UNCHANGED <<log, populated, closeVars>>

NextProcessWaitsForLog ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ ProcessWaitsForLog
    \/ Wait \/ Close \/ Exit

FairProcessWaitsForLog == WF_vars(Pop \/ PopBatch \/ Take \/ TakeBatch \/ ProcessWaitsForLog \/ Wait \/ Exit)

SpecProcessWaitsForLog == Init /\ [][NextProcessWaitsForLog]_vars /\ FairProcessWaitsForLog
=============================================================================
