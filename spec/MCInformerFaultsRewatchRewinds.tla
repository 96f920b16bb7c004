------------------- MODULE MCInformerFaultsRewatchRewinds -------------------
(* Mutation of ONE action of InformerFaults.tla (WatchDrop, as           *)
(* MCInformerRewatchRewinds): re-watch from the compaction point, not    *)
(* the last synced rv, so delivered events arrive again. Expected:       *)
(* PerKeyRVOrder violated.                                               *)
EXTENDS InformerFaults

MCKeys == {"a"}
MCMaxRV == 2
MCMaxFaults == 1
MCMaxBookmarks == 1

WatchDropRewinds ==
    /\ reflector = "watch"
    /\ reflector' = "connect"
    /\ lastSyncRV' = compacted
    /\ UNCHANGED <<serverVars, ownVars, store, handlerVars, applied>>
    /\ WatchEnds /\ UNCHANGED budgetVars

NextRewatchRewinds ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDropRewinds \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle
    \/ ListFail \/ WatchExpired \/ WatchShort \/ WatchRetry
    \/ BookmarkSend \/ WatchBookmark

SpecRewatchRewinds == Init /\ [][NextRewatchRewinds]_vars
=============================================================================
