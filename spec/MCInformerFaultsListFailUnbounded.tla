------------------ MODULE MCInformerFaultsListFailUnbounded -----------------
(* Mutation of ONE action of InformerFaults.tla (ListFail): a list       *)
(* failure does not count against the fault budget's bound. Expected:    *)
(* TypeOK violated (shows TypeOK can fail).                              *)
EXTENDS InformerFaults

MCKeys == {"a"}
MCMaxRV == 1
MCMaxFaults == 1
MCMaxBookmarks == 1

ListFailUnbounded ==
    /\ reflector = "list"
    /\ faults' = faults + 1
    /\ UNCHANGED <<vars, bookmark, eventSeen, bookmarks>>

NextListFailUnbounded ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle
    \/ ListFailUnbounded \/ WatchExpired \/ WatchShort \/ WatchRetry
    \/ BookmarkSend \/ WatchBookmark

SpecListFailUnbounded == Init /\ [][NextListFailUnbounded]_vars
=============================================================================
