-------------------- MODULE MCInformerResyncHandlerFirst --------------------
(* Mutation of ONE action of InformerResync.tla (Distribute, as            *)
(* MCInformerHandlerFirst): a notification may be distributed to h1        *)
(* before its delta's store write. Expected: StoreBeforeHandler violated.  *)
EXTENDS InformerResync

MCKeys == {"a"}
MCMaxRV == 2
MCMaxResyncs == 0

DistributeEarly ==
    \/ Distribute
    \/ /\ outbox = <<>>
       /\ popped # <<>>
       /\ notifications' = Append(notifications, I!NoteFor(Head(popped)))
       /\ UNCHANGED <<serverVars, reflector, lastSyncRV, ownVars, store, view, lastRV, applied,
                      h2Vars, resyncVars>>

NextHandlerFirst ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ DistributeEarly \/ Handle \/ Handle2
    \/ AddHandler \/ ResyncCheck

SpecHandlerFirst == Init /\ [][NextHandlerFirst]_allVars
=============================================================================
