------------------- MODULE MCInformerAtomicDeletionsLast -------------------
(* Mutation of ONE action of InformerAtomic.tla (ApplyEntry): processing a *)
(* ReplacedAll queues its adds and updates before its deletions (the       *)
(* store is still replaced whole first), so a handler hears of a listed   *)
(* object before the deletion of a key the list lacks.  client-go hands   *)
(* out every deletion first (controller.go, processReplacedAllInfo).       *)
(* Two keys: one deleted and one listed in the same relist.               *)
(* Expected: ReplacedAllDeletionsFirst violated.                           *)
EXTENDS InformerAtomic

MCKeys == {"a", "b"}
MCMaxRV == 3

(* EntryNotes with its two halves swapped: upserts, then deletions.       *)
UpsertsFirst(d, order) ==
    LET ns == EntryNotes(d, order)
        dels == Len(order)
    IN IF d.type = "ReplacedAll"
       THEN SubSeq(ns, dels + 1, Len(ns)) \o SubSeq(ns, 1, dels)
       ELSE ns

ApplyEntryDeletionsLast ==
    /\ processing # <<>>
    /\ ~written
    /\ \E order \in DeletionOrders(processing[1].delta) :
         LET ns == UpsertsFirst(processing[1].delta, order)
         IN /\ outbox' = ns
            /\ applied' = applied \cup RF!Range(ns)
    /\ store' = RF!Applied(processing[1].delta)
    /\ written' = TRUE
    /\ UNCHANGED <<serverVars, reflectorVars, log, processing, populated,
                   initialPopulationCount, synced, handlerVars>>

NextDeletionsLast ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Take \/ ApplyEntryDeletionsLast \/ Distribute \/ Finish \/ Handle

SpecDeletionsLast == Init /\ [][NextDeletionsLast]_vars
=============================================================================
