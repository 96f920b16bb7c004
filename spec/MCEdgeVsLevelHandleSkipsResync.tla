------------------- MODULE MCEdgeVsLevelHandleSkipsResync -------------------
(* Mutation of ONE action of EdgeVsLevel.tla (level-triggered): the      *)
(* handler ignores a notification that carries no change, so the         *)
(* periodic resync repairs nothing and one lost notification leaves the  *)
(* world off. Expected: Converges violated.                              *)
EXTENDS EdgeVsLevel

MCMaxChanges == 3
MCMaxFaults == 1
MCLevel == TRUE

HandleSkipsResync ==
    /\ channel # <<>>
    /\ LET n == Head(channel) IN
         actual' = IF n.old = n.new THEN actual ELSE cache
    /\ channel' = Tail(channel)
    /\ UNCHANGED <<desired, cache, changes, faults>>

NextHandleSkipsResync == UserChange \/ Sync \/ Resync \/ Lose \/ Duplicate \/ HandleSkipsResync

FairHandleSkipsResync == WF_vars(Sync) /\ WF_vars(Resync) /\ WF_vars(HandleSkipsResync)

SpecHandleSkipsResync == Init /\ [][NextHandleSkipsResync]_vars /\ FairHandleSkipsResync
=============================================================================
