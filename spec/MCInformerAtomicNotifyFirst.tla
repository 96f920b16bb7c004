-------------------- MODULE MCInformerAtomicNotifyFirst --------------------
(* Mutation of ONE action of InformerAtomic.tla (Distribute): the handler  *)
(* may also be handed the first notification of the taken entry before     *)
(* ApplyEntry has written the store (for a ReplacedAll: before the store   *)
(* holds the new list), so a handler can run, and read its lister, before *)
(* the store reflects the event.                                           *)
(* Expected: StoreBeforeHandler (INF-1) violated.                          *)
EXTENDS InformerAtomic

MCKeys == {"a"}
MCMaxRV == 3

DistributeEarly ==
    \/ Distribute
    \/ /\ processing # <<>>
       /\ ~written
       /\ outbox = <<>>
       /\ \E order \in DeletionOrders(processing[1].delta) :
            LET ns == EntryNotes(processing[1].delta, order)
            IN /\ ns # <<>>
               /\ notifications' = Append(notifications, Head(ns))
       /\ UNCHANGED <<serverVars, reflectorVars, fifoVars, store, view, lastRV, applied,
                      procVars>>

NextNotifyFirst ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Take \/ ApplyEntry \/ DistributeEarly \/ Finish \/ Handle

SpecNotifyFirst == Init /\ [][NextNotifyFirst]_vars
=============================================================================
