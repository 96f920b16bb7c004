------------------- MODULE MCInformerResyncAddsFromServer -------------------
(* Mutation of ONE action of InformerResync.tla (AddHandler): the late     *)
(* handler is handed the server's objects, not the store's. Expected:      *)
(* StoreBeforeHandler2 violated.                                           *)
EXTENDS InformerResync

MCKeys == {"a"}
MCMaxRV == 2
MCMaxResyncs == 0

ServerAdds(order) == [i \in DOMAIN order |-> I!Note("add", order[i], server[order[i]])]

AddHandlerFromServer ==
    /\ ~added2
    /\ I!FifoUnlocked
    /\ added2' = TRUE
    /\ \E order \in I!DF!Orders(I!ServerKeys) : notes2' = ServerAdds(order)
    /\ syncing' = [syncing EXCEPT !["h2"] = TRUE]
    /\ UNCHANGED <<vars, view2, lastRV2, resyncNote, resyncs>>

NextAddsFromServer ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle \/ Handle2
    \/ AddHandlerFromServer \/ ResyncCheck

SpecAddsFromServer == Init /\ [][NextAddsFromServer]_allVars
=============================================================================
