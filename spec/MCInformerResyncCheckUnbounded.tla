------------------- MODULE MCInformerResyncCheckUnbounded -------------------
(* Mutation of ONE action of InformerResync.tla (ResyncCheck): no bound    *)
(* on the checks; shows TypeOK can fail. Expected: TypeOK violated.        *)
EXTENDS InformerResync

MCKeys == {"a"}
MCMaxRV == 1
MCMaxResyncs == 1

ResyncCheckUnbounded ==
    /\ reflector \in {"connect", "watch"}
    /\ I!FifoUnlocked
    /\ resyncs' = resyncs + 1
    /\ \E due \in SUBSET Added :
         /\ syncing' = [l \in Listeners |-> IF l \in Added THEN l \in due ELSE syncing[l]]
         /\ IF due = {}
            THEN UNCHANGED ownVars
            ELSE I!DF!Resync /\ UNCHANGED <<popped, outbox>>
    /\ UNCHANGED <<serverVars, reflector, lastSyncRV, store, handlerVars, applied,
                   h2Vars, resyncNote>>

NextCheckUnbounded ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle \/ Handle2
    \/ AddHandler \/ ResyncCheckUnbounded

SpecCheckUnbounded == Init /\ [][NextCheckUnbounded]_allVars
=============================================================================
