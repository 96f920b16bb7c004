-------------------- MODULE MCInformerAtomicNotifyFirst --------------------
(* Mutation: processing a ReplacedAll notifies the handler (deletions,     *)
(* then adds/updates) first and replaces the store afterwards, so a        *)
(* handler can run (and read its lister) before the store holds the new    *)
(* list.  Expected: StoreBeforeHandler violated.                           *)
EXTENDS InformerAtomic

MCKeys == {"a"}
MCMaxRV == 3

VARIABLE staged     \* <<>> or <<notes>>: notified, store replace still to do
mvars == <<vars, staged>>

NotifyFirst ==
    /\ staged = <<>>
    /\ processing # <<>>
    /\ processing[1].delta.type = "ReplacedAll"
    /\ \E order \in DeletionOrders(processing[1].delta) :
         LET ns == EntryNotes(processing[1].delta, order)
         IN /\ notifications' = notifications \o ns
            /\ staged' = <<ns>>
    /\ UNCHANGED <<serverVars, reflectorVars, fifoVars, store, view, lastRV, applied>>

StoreAfter ==
    /\ staged # <<>>
    /\ RF!Process
    /\ applied' = applied \cup RF!Range(staged[1])
    /\ staged' = <<>>
    /\ UNCHANGED <<serverVars, reflectorVars, handlerVars>>

NextNotifyFirst ==
    \/ (\E k \in Keys : Write(k)) /\ UNCHANGED staged
    \/ Compact /\ UNCHANGED staged
    \/ (List \/ WatchEvent \/ WatchDrop \/ Connect) /\ UNCHANGED staged
    \/ Take /\ UNCHANGED staged
    \/ ProcessEntry /\ processing[1].delta.type # "ReplacedAll" /\ UNCHANGED staged
    \/ NotifyFirst \/ StoreAfter
    \/ Handle /\ UNCHANGED staged

SpecNotifyFirst == Init /\ staged = <<>> /\ [][NextNotifyFirst]_mvars
=============================================================================
