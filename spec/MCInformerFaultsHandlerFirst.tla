-------------------- MODULE MCInformerFaultsHandlerFirst --------------------
(* Mutation of ONE action of InformerFaults.tla (Distribute, as          *)
(* MCInformerHandlerFirst): a notification may be distributed before its *)
(* delta's store write. Expected: StoreBeforeHandler violated.           *)
EXTENDS InformerFaults

MCKeys == {"a"}
MCMaxRV == 3
MCMaxFaults == 1
MCMaxBookmarks == 1

DistributeEarly ==
    \/ Distribute
    \/ /\ outbox = <<>>
       /\ popped # <<>>
       /\ notifications' = Append(notifications, I!NoteFor(Head(popped)))
       /\ UNCHANGED <<serverVars, reflector, lastSyncRV, ownVars, store, view, lastRV, applied,
                      faultVars>>

NextHandlerFirst ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ DistributeEarly \/ Handle
    \/ ListFail \/ WatchExpired \/ WatchShort \/ WatchRetry
    \/ BookmarkSend \/ WatchBookmark

SpecHandlerFirst == Init /\ [][NextHandlerFirst]_vars
=============================================================================
