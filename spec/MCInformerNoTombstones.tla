----------------------- MODULE MCInformerNoTombstones -----------------------
(* Mutation of ONE action of Informer.tla (List): a relist that queues the *)
(* listed objects but no tombstones for what vanished (neither from the    *)
(* queue nor from the store).  An object deleted while the watch was down  *)
(* (410 Gone, relist) stays in the store and in the handler's view         *)
(* forever.  Expected: Converges (INF-3) violated.                      *)
EXTENDS Informer

MCKeys == {"a"}
MCMaxRV == 3

ListNoTombstones ==
    /\ reflector = "list"
    /\ FifoUnlocked
    /\ \E l \in DF!Orders(ServerObjs) :
         LET st == DF!EnqAll(DF!Now, [i \in DOMAIN l |-> DF!Delta("Replaced", l[i])]) IN
         /\ DF!SetQueue(st)
         /\ IF populated
            THEN UNCHANGED <<populated, initialPopulationCount, synced>>
            ELSE /\ populated' = TRUE
                 /\ initialPopulationCount' = Len(l)
                 /\ synced' = (Len(l) = 0)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, store, handlerVars, applied, procVars>>

NextNoTombstones ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ ListNoTombstones \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle

SpecNoTombstones ==
    /\ Init /\ [][NextNoTombstones]_vars
    /\ WF_vars(ListNoTombstones) /\ SF_vars(WatchEvent) /\ WF_vars(Connect)
    /\ WF_vars(Pop) /\ WF_vars(StoreWrite) /\ WF_vars(Distribute) /\ WF_vars(Handle)
=============================================================================
