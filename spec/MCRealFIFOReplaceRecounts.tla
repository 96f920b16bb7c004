---------------------- MODULE MCRealFIFOReplaceRecounts ---------------------
(* Mutation of ONE action of RealFIFOClose.tla (atomic): every Replace,  *)
(* not only the first, resets the initial population count, so HasSynced *)
(* turns false again. Expected: SyncedIsMonotone violated.               *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 1
MCAtomic == TRUE

ReplaceRecounts(l) ==
    /\ F!ProducerMayRun
    /\ Atomic
    /\ log' = Append(log, F!Delta("ReplacedAll", l))
    /\ populated' = TRUE
    /\ initialPopulationCount' = Len(log) + 1
    /\ synced' = FALSE
    /\ UNCHANGED <<processing, store>>
    /\ Wake /\ UNCHANGED closed

NextReplaceRecounts ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : ReplaceRecounts(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ Exit

SpecReplaceRecounts == Init /\ [][NextReplaceRecounts]_vars
=============================================================================
