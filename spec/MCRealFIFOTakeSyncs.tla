------------------------- MODULE MCRealFIFOTakeSyncs ------------------------
(* Mutation of ONE action of RealFIFOClose.tla (atomic): Take turns      *)
(* HasSynced true when it takes the last entry of the initial list,      *)
(* before that entry is processed (what kubernetes PR #136264 fixed).    *)
(* Expected: NotSyncedWhileInitialEntryInFlight violated; in its second  *)
(* cfg, SyncedMeansInitialListProcessed.                                 *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 1
MCAtomic == TRUE

TakeSyncs ==
    /\ Running
    /\ Atomic
    /\ processing = <<>>
    /\ log # <<>>
    /\ processing' = <<[delta |-> Head(log), initial |-> ~synced]>>
    /\ log' = Tail(log)
    /\ synced' = (synced \/ (populated /\ initialPopulationCount = 1))
    /\ UNCHANGED <<populated, initialPopulationCount, store, closeVars>>

NextTakeSyncs ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ TakeSyncs \/ TakeBatch \/ Process
    \/ Wait \/ Close \/ Exit

SpecTakeSyncs == Init /\ [][NextTakeSyncs]_vars
=============================================================================
