-------------------- MODULE MCInformerAtomicNoDeletions --------------------
(* Mutation of ONE action of InformerAtomic.tla (ApplyEntry): processing a *)
(* ReplacedAll replaces the store whole but computes no deletions, so a    *)
(* key deleted while the watch was down (410 Gone, relist) leaves the      *)
(* store and no handler hears of it: the handler's view keeps the object. *)
(* Expected: Converges (INF-3) violated.                                *)
EXTENDS InformerAtomic

MCKeys == {"a"}
MCMaxRV == 3

ApplyEntryNoDeletions ==
    /\ processing # <<>>
    /\ ~written
    /\ LET ns == EntryNotes(processing[1].delta, <<>>)
       IN /\ outbox' = ns
          /\ applied' = applied \cup RF!Range(ns)
    /\ store' = RF!Applied(processing[1].delta)
    /\ written' = TRUE
    /\ UNCHANGED <<serverVars, reflectorVars, log, processing, populated,
                   initialPopulationCount, synced, handlerVars>>

NextNoDeletions ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Take \/ ApplyEntryNoDeletions \/ Distribute \/ Finish \/ Handle

SpecNoDeletions ==
    /\ Init /\ [][NextNoDeletions]_vars
    /\ WF_vars(List) /\ SF_vars(WatchEvent) /\ WF_vars(Connect)
    /\ WF_vars(Take) /\ WF_vars(ApplyEntryNoDeletions) /\ WF_vars(Distribute)
    /\ WF_vars(Finish) /\ WF_vars(Handle)
=============================================================================
