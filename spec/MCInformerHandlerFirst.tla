----------------------- MODULE MCInformerHandlerFirst -----------------------
(* Mutation of ONE action of Informer.tla: Distribute does not wait for    *)
(* the store write; it may also hand the listener the notification of the  *)
(* oldest popped delta before StoreWrite has put it in the store (the      *)
(* "notify, then write" processDeltas), so a handler can run, and read     *)
(* its lister, before the store reflects the event.                        *)
(* Expected: StoreBeforeHandler (INF-1) violated.                          *)
EXTENDS Informer

MCKeys == {"a"}
MCMaxRV == 3

DistributeEarly ==
    \/ Distribute
    \/ /\ outbox = <<>>
       /\ popped # <<>>
       /\ notifications' = Append(notifications, NoteFor(Head(popped)))
       /\ UNCHANGED <<serverVars, reflectorVars, fifoVars, store, view, lastRV, applied,
                      procVars>>

NextHandlerFirst ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ DistributeEarly \/ Handle

SpecHandlerFirst == Init /\ [][NextHandlerFirst]_vars
=============================================================================
