---------------------- MODULE MCInformerRewatchRewinds ----------------------
(* Mutation of ONE action of Informer.tla (WatchDrop): after a dropped     *)
(* watch the reflector asks for a new one from the oldest resourceVersion  *)
(* the server still keeps (the compaction point) instead of the last one   *)
(* it synced (REF-3), so events it already delivered arrive again and a    *)
(* handler hears an older version of a key after a newer one. Expected:    *)
(* PerKeyRVOrder (INF-2) violated.                                         *)
EXTENDS Informer

MCKeys == {"a"}
MCMaxRV == 2

WatchDropRewinds ==
    /\ reflector = "watch"
    /\ reflector' = "connect"
    /\ lastSyncRV' = compacted
    /\ UNCHANGED <<serverVars, fifoVars, store, handlerVars, applied, procVars>>

NextRewatchRewinds ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDropRewinds \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle

SpecRewatchRewinds == Init /\ [][NextRewatchRewinds]_vars
=============================================================================
