------------------- MODULE MCInformerResyncRewatchRewinds -------------------
(* Mutation of ONE action of InformerResync.tla (WatchDrop, as             *)
(* MCInformerRewatchRewinds): re-watch from the compaction point, not      *)
(* the last synced rv, so delivered events arrive again. Expected:         *)
(* PerKeyRVOrder violated.                                                 *)
EXTENDS InformerResync

MCKeys == {"a"}
MCMaxRV == 2
MCMaxResyncs == 0

WatchDropRewinds ==
    /\ reflector = "watch"
    /\ reflector' = "connect"
    /\ lastSyncRV' = compacted
    /\ UNCHANGED <<serverVars, ownVars, store, handlerVars, applied, h2Vars, resyncVars>>

NextRewatchRewinds ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDropRewinds \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle \/ Handle2
    \/ AddHandler \/ ResyncCheck

SpecRewatchRewinds == Init /\ [][NextRewatchRewinds]_allVars
=============================================================================
