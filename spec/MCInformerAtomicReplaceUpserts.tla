------------------ MODULE MCInformerAtomicReplaceUpserts ------------------
(* Mutation of ONE action of InformerAtomic.tla (ApplyEntry): processing a *)
(* ReplacedAll writes each listed object into the store but removes none   *)
(* of the stored keys the list lacks (an upsert, not store.Replace), so    *)
(* the handlers are told of those deletions while the store still holds    *)
(* the objects. Expected: ReplacedAllWholeStore (RF-4) violated, and with *)
(* the _StoreBeforeHandler cfg, StoreBeforeHandler (INF-1), which the      *)
(* statement over the history set `applied` passed.                       *)
EXTENDS InformerAtomic

MCKeys == {"a"}
MCMaxRV == 3

Upserted(d) ==
    IF d.type = "ReplacedAll"
    THEN [k \in Keys |-> IF k \in RF!Listed(d.obj) THEN RF!Applied(d)[k] ELSE store[k]]
    ELSE RF!Applied(d)

ApplyEntryUpserts ==
    /\ processing # <<>>
    /\ ~written
    /\ \E order \in DeletionOrders(processing[1].delta) :
         LET ns == EntryNotes(processing[1].delta, order)
         IN /\ outbox' = ns
            /\ applied' = applied \cup RF!Range(ns)
    /\ store' = Upserted(processing[1].delta)
    /\ written' = TRUE
    /\ UNCHANGED <<serverVars, reflectorVars, log, processing, populated,
                   initialPopulationCount, synced, handlerVars>>

NextReplaceUpserts ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Take \/ ApplyEntryUpserts \/ Distribute \/ Finish \/ Handle

SpecReplaceUpserts == Init /\ [][NextReplaceUpserts]_vars
=============================================================================
