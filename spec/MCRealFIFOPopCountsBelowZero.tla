-------------------- MODULE MCRealFIFOPopCountsBelowZero --------------------
(* Mutation of ONE action of RealFIFOClose.tla (non-atomic): Pop's       *)
(* finish decrements the initial population count even when it is        *)
(* already 0. Expected: TypeOK violated (shows TypeOK can fail).         *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 2
MCAtomic == FALSE

PopCountsBelowZero ==
    /\ Running
    /\ ~Atomic
    /\ log # <<>>
    /\ log' = Tail(log)
    /\ store' = F!Applied(Head(log))
    /\ initialPopulationCount' = initialPopulationCount - 1
    /\ synced' = (synced \/ (populated /\ initialPopulationCount = 1))
    /\ UNCHANGED <<processing, populated, closeVars>>

NextPopCountsBelowZero ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ PopCountsBelowZero \/ PopBatch \/ Take \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ Exit

SpecPopCountsBelowZero == Init /\ [][NextPopCountsBelowZero]_vars
=============================================================================
