----------------- MODULE MCInformerQueuedTombstonesSkipped -----------------
(* Mutation of ONE action of Informer.tla (List): DeltaFIFO.Replace        *)
(* tombstones only the stored keys the list lacks, not keys that are      *)
(* queued but not yet stored (Replace before kubernetes PR #115620).  A    *)
(* key added and then deleted on the server while the watch was down      *)
(* (410 Gone, relist) still has its Added delta queued: it is popped into  *)
(* the store after the relist and never deleted.  Expected: Converges  *)
(* (INF-3) violated.  The code mutant is "queued-only tombstones skipped"  *)
(* (docs/07-the-model-and-the-code.md).                                    *)
EXTENDS Informer

MCKeys == {"a"}
MCMaxRV == 3

(* DF!ReplaceWith without its queued-only tombstones: every stored key    *)
(* the list lacks gets one (carrying the stored object), queued or not.   *)
ListSkipsQueuedTombstones ==
    /\ reflector = "list"
    /\ FifoUnlocked
    /\ \E l \in DF!Orders(ServerObjs) :
       \E order \in DF!Orders(DF!StoredKeys \ DF!Listed(l)) :
         LET st1 == DF!EnqAll(DF!Now, [i \in DOMAIN l |-> DF!Delta("Replaced", l[i])])
             st2 == DF!EnqAll(st1, [i \in DOMAIN order |->
                      DF!Delta("Deleted", DF!Tomb(order[i], store[order[i]]))])
             count == Len(l) + Len(order)
         IN /\ DF!SetQueue(st2)
            /\ IF populated
               THEN UNCHANGED <<populated, initialPopulationCount, synced>>
               ELSE /\ populated' = TRUE
                    /\ initialPopulationCount' = count
                    /\ synced' = (count = 0)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, store, handlerVars, applied, procVars>>

NextQueuedTombstonesSkipped ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ ListSkipsQueuedTombstones \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle

SpecQueuedTombstonesSkipped ==
    /\ Init /\ [][NextQueuedTombstonesSkipped]_vars
    /\ WF_vars(ListSkipsQueuedTombstones) /\ SF_vars(WatchEvent) /\ WF_vars(Connect)
    /\ WF_vars(Pop) /\ WF_vars(StoreWrite) /\ WF_vars(Distribute) /\ WF_vars(Handle)
=============================================================================
