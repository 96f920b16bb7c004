-------------------- MODULE MCRealFIFOBatchStraddles --------------------
(* Mutation of ONE action of RealFIFOClose.tla (non-atomic): PopBatch      *)
(* ignores the end of the initial list, so one batch holds the last       *)
(* entries of the initial list and entries queued after it, and HasSynced *)
(* turns true only when the later entries are processed too.              *)
(* Expected: BatchIsWellFormed (RF-3) violated.                            *)
EXTENDS RealFIFOClose

MCKeys == {"a", "b"}
MCRVs == {1}
MCMaxQueued == 2
MCAtomic == FALSE

(* F!FitsBatch / F!BatchLen without the initial-list bound.                *)
FitsBatchAnyway(n) ==
    /\ n <= Len(log)
    /\ \A i \in 1..n : F!IsObjectEntry(log[i])
    /\ \A i, j \in 1..n : i # j => log[i].obj.key # log[j].obj.key

BatchLenAnyway ==
    IF log = <<>> THEN 0
    ELSE IF ~F!IsObjectEntry(Head(log)) THEN 1
    ELSE CHOOSE n \in 1..Len(log) : FitsBatchAnyway(n) /\ ~FitsBatchAnyway(n + 1)

PopBatchStraddles ==
    /\ Running
    /\ ~Atomic
    /\ BatchLenAnyway >= 2
    /\ log' = SubSeq(log, BatchLenAnyway + 1, Len(log))
    /\ store' = F!ApplyAll(store, SubSeq(log, 1, BatchLenAnyway))
    /\ F!FinishedN(BatchLenAnyway)
    /\ UNCHANGED <<processing, populated>>
    /\ UNCHANGED closeVars

NextRealFIFOBatchStraddles ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop \/ PopBatchStraddles \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ Exit

SpecRealFIFOBatchStraddles == Init /\ [][NextRealFIFOBatchStraddles]_vars
=============================================================================
