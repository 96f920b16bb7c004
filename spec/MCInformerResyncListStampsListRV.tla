------------------ MODULE MCInformerResyncListStampsListRV ------------------
(* Mutation of ONE action of InformerResync.tla (List, as                  *)
(* MCInformerListStampsListRV): every listed object is stamped with the    *)
(* list's rv instead of its own. Expected: StoreFromServer violated.       *)
EXTENDS InformerResync

MCKeys == {"a", "b"}
MCMaxRV == 2
MCMaxResyncs == 0

StampedObjs == {I!DF!Obj(k, Len(history)) : k \in I!ServerKeys}

ListStamped ==
    /\ reflector = "list"
    /\ I!FifoUnlocked
    /\ \E l \in I!DF!Orders(StampedObjs) :
         \E order \in I!DF!Orders(I!DF!StoreOnlyGone(l)) : I!DF!ReplaceWith(l, order)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, store, handlerVars, applied, popped, outbox, h2Vars, resyncVars>>

NextListStampsListRV ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ ListStamped \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle \/ Handle2
    \/ AddHandler \/ ResyncCheck

SpecListStampsListRV == Init /\ [][NextListStampsListRV]_allVars
=============================================================================
