----------------------- MODULE MCInformerHandlerFirst -----------------------
(* Mutation: processDeltas notifies the handler first and updates the      *)
(* store afterwards, so a handler can run (and read its lister) before the *)
(* store reflects the event.  Expected: StoreBeforeHandler violated.       *)
EXTENDS Informer

MCKeys == {"a"}
MCMaxRV == 3

VARIABLE staged     \* <<>> or <<[key, value, notes]>>: store update still to do
mvars == <<vars, staged>>

NotifyFirst ==
    /\ staged = <<>>
    /\ queue # <<>>
    /\ LET k == Head(queue)
           ns == Notes(k, items[k])
       IN /\ notifications' = notifications \o ns
          /\ staged' = <<[key |-> k, value |-> DF!Applied(items[k]), notes |-> ns]>>
          /\ queue' = Tail(queue)
          /\ items' = [items EXCEPT ![k] = <<>>]
    /\ IF initialPopulationCount > 0
       THEN /\ initialPopulationCount' = initialPopulationCount - 1
            /\ synced' = (synced \/ (populated /\ initialPopulationCount = 1))
       ELSE UNCHANGED <<initialPopulationCount, synced>>
    /\ UNCHANGED <<serverVars, reflectorVars, populated, store, view, lastRV, applied>>

StoreAfter ==
    /\ staged # <<>>
    /\ store' = [store EXCEPT ![staged[1].key] = staged[1].value]
    /\ applied' = applied \cup DF!Range(staged[1].notes)
    /\ staged' = <<>>
    /\ UNCHANGED <<serverVars, reflectorVars, fifoVars, handlerVars>>

NextHandlerFirst ==
    \/ (\E k \in Keys : Write(k)) /\ UNCHANGED staged
    \/ Compact /\ UNCHANGED staged
    \/ (List \/ WatchEvent \/ WatchDrop \/ Connect) /\ UNCHANGED staged
    \/ NotifyFirst \/ StoreAfter
    \/ Handle /\ UNCHANGED staged

SpecHandlerFirst == Init /\ staged = <<>> /\ [][NextHandlerFirst]_mvars
=============================================================================
