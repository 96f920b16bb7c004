------------------- MODULE MCInformerRewatchAfter410 -------------------
(* Mutation of ONE action of Informer.tla (Connect): a watch request       *)
(* answered 410 Gone is followed by another watch request from the same    *)
(* resourceVersion instead of a relist (REF-3), which the server answers  *)
(* 410 again: the reflector never catches up.  Expected: Converges        *)
(* (INF-3) violated.  The code mutant is "re-watch after a 410"           *)
(* (docs/07-the-model-and-the-code.md).                                    *)
EXTENDS Informer

MCKeys == {"a"}
MCMaxRV == 2

ConnectRewatches ==
    /\ reflector = "connect"
    /\ reflector' = IF lastSyncRV < compacted THEN "connect" ELSE "watch"
    /\ UNCHANGED <<serverVars, lastSyncRV, store, handlerVars, applied>>
    /\ UNCHANGED ownVars

NextRewatchAfter410 ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ ConnectRewatches
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle

SpecRewatchAfter410 ==
    /\ Init /\ [][NextRewatchAfter410]_vars
    /\ WF_vars(List) /\ SF_vars(WatchEvent) /\ WF_vars(ConnectRewatches)
    /\ WF_vars(Pop) /\ WF_vars(StoreWrite) /\ WF_vars(Distribute) /\ WF_vars(Handle)
=============================================================================
