--------------------- MODULE MCInformerListStampsListRV ---------------------
(* Mutation of ONE action of Informer.tla (List): every listed object is   *)
(* stamped with the list's resourceVersion (the collection's) instead of   *)
(* its own, so the store takes a version the server never had for that     *)
(* key. Expected: StoreFromServer (INF-8, nothing invented) violated.      *)
EXTENDS Informer

MCKeys == {"a", "b"}
MCMaxRV == 2

StampedObjs == {DF!Obj(k, Len(history)) : k \in ServerKeys}

ListStamped ==
    /\ reflector = "list"
    /\ FifoUnlocked
    /\ \E l \in DF!Orders(StampedObjs) :
         \E order \in DF!Orders(DF!StoreOnlyGone(l)) : DF!ReplaceWith(l, order)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, store, handlerVars, applied, procVars>>

NextListStamped ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ ListStamped \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle

SpecListStamped == Init /\ [][NextListStamped]_vars
=============================================================================
