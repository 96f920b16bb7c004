-------------------- MODULE MCEdgeVsLevelChangeUnbounded --------------------
(* Mutation of ONE action of EdgeVsLevel.tla: the user's changes are not *)
(* bounded by MaxChanges. Expected: TypeOK violated (shows TypeOK can    *)
(* fail).                                                                *)
EXTENDS EdgeVsLevel

MCMaxChanges == 3
MCMaxFaults == 1
MCLevel == TRUE

ChangeUnbounded ==
    /\ desired' = desired + 1
    /\ changes' = changes + 1
    /\ UNCHANGED <<cache, channel, actual, faults>>

NextChangeUnbounded == ChangeUnbounded \/ Sync \/ Resync \/ Lose \/ Duplicate \/ Handle

SpecChangeUnbounded == Init /\ [][NextChangeUnbounded]_vars
=============================================================================
