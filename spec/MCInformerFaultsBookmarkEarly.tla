-------------------- MODULE MCInformerFaultsBookmarkEarly -------------------
(* Mutation of ONE action of InformerFaults.tla (WatchBookmark): the     *)
(* reflector takes a bookmark's rv as soon as it is sent, before the     *)
(* events below it arrive, so those events are skipped for good (the     *)
(* next watch starts at the bookmark). Expected: Converges violated.     *)
EXTENDS InformerFaults

MCKeys == {"a"}
MCMaxRV == 2
MCMaxFaults == 1
MCMaxBookmarks == 1

WatchBookmarkEarly ==
    /\ reflector = "watch"
    /\ bookmark # <<>>
    /\ lastSyncRV' = bookmark[1]
    /\ bookmark' = <<>>
    /\ eventSeen' = TRUE
    /\ UNCHANGED <<serverVars, reflector, store, handlerVars, applied, ownVars, budgetVars>>

NextBookmarkEarly ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle
    \/ ListFail \/ WatchExpired \/ WatchShort \/ WatchRetry
    \/ BookmarkSend \/ WatchBookmarkEarly

FairnessBookmarkEarly ==
    /\ WF_allVars(List) /\ SF_allVars(WatchEvent) /\ WF_allVars(Connect)
    /\ WF_allVars(Pop) /\ WF_allVars(StoreWrite) /\ WF_allVars(Distribute)
    /\ WF_allVars(Handle) /\ SF_allVars(WatchBookmarkEarly)

SpecBookmarkEarly == Init /\ [][NextBookmarkEarly]_vars /\ FairnessBookmarkEarly
=============================================================================
