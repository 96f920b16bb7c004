--------------------- MODULE MCInformerAtomicMistyped ---------------------
(* Mutation of ONE action of InformerAtomic.tla (Finish): the entry is     *)
(* counted done but the `written` flag is not cleared, so it claims a     *)
(* store write for an entry no longer in flight (and the next entry's      *)
(* ApplyEntry never runs).  Shows that TypeOK can fail.                    *)
(* Expected: TypeOK violated.                                              *)
EXTENDS InformerAtomic

MCKeys == {"a"}
MCMaxRV == 1

FinishKeepsWritten ==
    /\ processing # <<>>
    /\ written
    /\ outbox = <<>>
    /\ processing' = <<>>
    /\ RF!Finished
    /\ UNCHANGED <<serverVars, reflectorVars, log, populated, store, handlerVars, applied,
                   procVars>>

NextMistyped ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Take \/ ApplyEntry \/ Distribute \/ FinishKeepsWritten \/ Handle

SpecMistyped == Init /\ [][NextMistyped]_vars
=============================================================================
