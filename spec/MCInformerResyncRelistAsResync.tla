------------------- MODULE MCInformerResyncRelistAsResync -------------------
(* Mutation of ONE action of InformerResync.tla (StoreWrite): every        *)
(* update from a Sync or Replaced delta is a resync note, whether its rv   *)
(* changed or not (processDeltas before kubernetes PR #86015), so a        *)
(* relist's changed object reaches only the listeners due at the last      *)
(* check. Expected: Converges violated.                                    *)
EXTENDS InformerResync

MCKeys == {"a"}
MCMaxRV == 2
MCMaxResyncs == 1

ByDeltaType(d) == d.type \in {"Sync", "Replaced"} /\ store[d.obj.key] # 0

StoreWriteByType ==
    /\ I!StoreWrite
    /\ resyncNote' = ByDeltaType(Head(popped))
    /\ UNCHANGED <<h2Vars, syncing, resyncs>>

NextRelistAsResync ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWriteByType \/ Distribute \/ Handle \/ Handle2
    \/ AddHandler \/ ResyncCheck

FairnessByType ==
    /\ WF_allVars(List) /\ SF_allVars(WatchEvent) /\ WF_allVars(Connect)
    /\ WF_allVars(Pop) /\ WF_allVars(StoreWriteByType) /\ WF_allVars(Distribute)
    /\ WF_allVars(Handle) /\ WF_allVars(Handle2)

SpecRelistAsResync == Init /\ [][NextRelistAsResync]_allVars /\ FairnessByType
=============================================================================
