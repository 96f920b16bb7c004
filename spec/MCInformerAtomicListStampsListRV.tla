------------------ MODULE MCInformerAtomicListStampsListRV ------------------
(* Mutation of ONE action of InformerAtomic.tla (List): every listed       *)
(* object is stamped with the list's resourceVersion (the collection's)    *)
(* instead of its own, so the store takes a version the server never had   *)
(* for that key. Expected: StoreFromServer (INF-8, nothing invented)       *)
(* violated.                                                               *)
EXTENDS InformerAtomic

MCKeys == {"a", "b"}
MCMaxRV == 2

StampedObjs == {RF!Obj(k, Len(history)) : k \in ServerKeys}

ListStamped ==
    /\ reflector = "list"
    /\ \E l \in RF!Orders(StampedObjs) : RF!Replace(l)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, handlerVars, applied, procVars>>

NextListStamped ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ ListStamped \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Take \/ ApplyEntry \/ Distribute \/ Finish \/ Handle

SpecListStamped == Init /\ [][NextListStamped]_vars
=============================================================================
