-------------------- MODULE MCInformerAtomicRewatchSkips --------------------
(* Mutation of ONE action of InformerAtomic.tla (WatchDrop): after a       *)
(* dropped watch the reflector asks for a new one from the server's newest *)
(* resourceVersion instead of the last one it synced (REF-3), so the       *)
(* writes made while it was reconnecting are never delivered and the      *)
(* store keeps a stale version for good.                                   *)
(* Expected: Converges (INF-3) violated.                                   *)
EXTENDS InformerAtomic

MCKeys == {"a"}
MCMaxRV == 3

WatchDropSkips ==
    /\ reflector = "watch"
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, fifoVars, store, handlerVars, applied, procVars>>

NextRewatchSkips ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDropSkips \/ Connect
    \/ Take \/ ApplyEntry \/ Distribute \/ Finish \/ Handle

SpecRewatchSkips == Init /\ [][NextRewatchSkips]_vars /\ Fairness
=============================================================================
