------------------ MODULE MCInformerFaultsListStampsListRV ------------------
(* Mutation of ONE action of InformerFaults.tla (List, as                *)
(* MCInformerListStampsListRV): every listed object is stamped with the  *)
(* list's rv instead of its own. Expected: StoreFromServer violated.     *)
EXTENDS InformerFaults

MCKeys == {"a", "b"}
MCMaxRV == 2
MCMaxFaults == 1
MCMaxBookmarks == 1

StampedObjs == {I!DF!Obj(k, Len(history)) : k \in I!ServerKeys}

ListStamped ==
    /\ reflector = "list"
    /\ I!FifoUnlocked
    /\ \E l \in I!DF!Orders(StampedObjs) :
         \E order \in I!DF!Orders(I!DF!StoreOnlyGone(l)) : I!DF!ReplaceWith(l, order)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, store, handlerVars, applied, popped, outbox, faultVars>>

NextListStampsListRV ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ ListStamped \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle
    \/ ListFail \/ WatchExpired \/ WatchShort \/ WatchRetry
    \/ BookmarkSend \/ WatchBookmark

SpecListStampsListRV == Init /\ [][NextListStampsListRV]_vars
=============================================================================
