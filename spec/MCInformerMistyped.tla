------------------------ MODULE MCInformerMistyped ------------------------
(* Mutation of ONE action of Informer.tla (Write): a MODIFIED write bumps  *)
(* the resourceVersion twice, so the server and its event carry an rv     *)
(* past the last index of `history` (beyond MaxRV).  Shows that TypeOK    *)
(* can fail.  Expected: TypeOK violated.                                   *)
EXTENDS Informer

MCKeys == {"a"}
MCMaxRV == 2

WriteBumpsTwice(k) ==
    /\ Len(history) < MaxRV
    /\ LET r == Len(history) + 1 IN
        \/ /\ server[k] = 0
           /\ server' = [server EXCEPT ![k] = r]
           /\ history' = Append(history, [type |-> "ADDED", key |-> k, rv |-> r])
        \/ /\ server[k] # 0
           /\ server' = [server EXCEPT ![k] = r + 1]
           /\ history' = Append(history, [type |-> "MODIFIED", key |-> k, rv |-> r + 1])
        \/ /\ server[k] # 0
           /\ server' = [server EXCEPT ![k] = 0]
           /\ history' = Append(history, [type |-> "DELETED", key |-> k, rv |-> r])
    /\ UNCHANGED <<compacted, reflectorVars, store, handlerVars, applied, ownVars>>

NextMistyped ==
    \/ \E k \in Keys : WriteBumpsTwice(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle

SpecMistyped == Init /\ [][NextMistyped]_vars
=============================================================================
