---------------------------- MODULE InformerResync ----------------------------
(***************************************************************************)
(* Informer.tla with resync at the informer level and a second handler     *)
(* added after start: what kubernetes PR #86015 needed (a relist's changed *)
(* object reached only the handlers due for a resync).                     *)
(*                                                                         *)
(* Informer.tla is INSTANCEd (its actions keep their names); its handler   *)
(* is listener h1, added before start.  h2 is added later (AddHandler:     *)
(* shared_informer.go AddEventHandlerWithResyncPeriod after start), under  *)
(* the lock processDeltas holds, and is handed an add for every stored     *)
(* object, in any order.  Each listener has its own resync period; the     *)
(* clock is abstracted away, so a resync check (ResyncCheck: the           *)
(* reflector's resync timer, running while the reflector watches or waits  *)
(* for its watch) may find any set of the listeners due.  A check marks    *)
(* the due listeners as syncing (sharedProcessor.shouldResync), and if     *)
(* any is due the DeltaFIFO resyncs (DeltaFIFO.tla's Resync, under its     *)
(* lock).  An update that keeps the object's resourceVersion is a resync   *)
(* notification (sharedIndexInformer.OnUpdate): Distribute hands it only   *)
(* to the syncing listeners; every other notification to all.  A listener  *)
(* starts syncing.  At most MaxResyncs checks happen.                      *)
(*                                                                         *)
(* Not modelled: the periods themselves, and a check period lowered by a   *)
(* handler added before start (both are timing: any set of listeners may   *)
(* be due here); removing a handler.                                       *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Keys,
    MaxRV,
    MaxResyncs      \* resync checks in a behaviour

VARIABLES
    server, history, compacted, reflector, lastSyncRV, store,      \* Informer.tla's
    notifications, view, lastRV, applied,
    queue, items, populated, initialPopulationCount, synced, popped, outbox,
    added2,         \* h2 was added
    notes2,         \* h2's buffer (h1's is `notifications`)
    view2,          \* what h2 believes
    lastRV2,        \* rv of the last notification h2 handled per key
    syncing,        \* [{"h1", "h2"} -> BOOLEAN]: due at the last resync check
    resyncNote,     \* the note in `outbox` is a resync (its rv did not change)
    resyncs         \* resync checks so far

I == INSTANCE Informer

serverVars == <<server, history, compacted>>
handlerVars == <<notifications, view, lastRV>>
ownVars == <<queue, items, populated, initialPopulationCount, synced, popped, outbox>>
vars == <<serverVars, reflector, lastSyncRV, store, handlerVars, applied, ownVars>>
h2Vars == <<added2, notes2, view2, lastRV2>>
resyncVars == <<syncing, resyncNote, resyncs>>
allVars == <<vars, h2Vars, resyncVars>>

Listeners == {"h1", "h2"}
Added == IF added2 THEN Listeners ELSE {"h1"}

-----------------------------------------------------------------------------
(* Informer.tla's actions.                                                 *)
Write(k) == I!Write(k) /\ UNCHANGED <<h2Vars, resyncVars>>
Compact == I!Compact /\ UNCHANGED <<h2Vars, resyncVars>>
List == I!List /\ UNCHANGED <<h2Vars, resyncVars>>
WatchEvent == I!WatchEvent /\ UNCHANGED <<h2Vars, resyncVars>>
WatchDrop == I!WatchDrop /\ UNCHANGED <<h2Vars, resyncVars>>
Connect == I!Connect /\ UNCHANGED <<h2Vars, resyncVars>>
Pop == I!Pop /\ UNCHANGED <<h2Vars, resyncVars>>
Handle == I!Handle /\ UNCHANGED <<h2Vars, resyncVars>>

(* The write also says whether the note is a resync: an update to the      *)
(* resourceVersion the store already holds.                                *)
IsResync(d) == d.type # "Deleted" /\ store[d.obj.key] = d.obj.rv

StoreWrite ==
    /\ I!StoreWrite
    /\ resyncNote' = IsResync(Head(popped))
    /\ UNCHANGED <<h2Vars, syncing, resyncs>>

(* The handler call: each added listener buffers the note, a resync note   *)
(* only a syncing one.                                                     *)
Gets(l) == l \in Added /\ (~resyncNote \/ syncing[l])

Distribute ==
    /\ outbox # <<>>
    /\ notifications' = IF Gets("h1") THEN notifications \o outbox ELSE notifications
    /\ notes2' = IF Gets("h2") THEN notes2 \o outbox ELSE notes2
    /\ outbox' = <<>>
    /\ resyncNote' = FALSE
    /\ UNCHANGED <<serverVars, reflector, lastSyncRV, store, view, lastRV, applied,
                   queue, items, populated, initialPopulationCount, synced, popped,
                   added2, view2, lastRV2, syncing, resyncs>>

(* h2's handler: as h1's.                                                  *)
Handle2 ==
    /\ notes2 # <<>>
    /\ LET n == Head(notes2) IN
        /\ view2' = [view2 EXCEPT ![n.key] = IF n.type = "delete" THEN 0 ELSE n.rv]
        /\ lastRV2' = [lastRV2 EXCEPT ![n.key] = n.rv]
    /\ notes2' = Tail(notes2)
    /\ UNCHANGED <<vars, added2, resyncVars>>

-----------------------------------------------------------------------------
(* AddHandler: h2 joins after start, between two pops (processDeltas'      *)
(* lock), syncing, with an add for every stored object.                    *)
StoredAdds(order) == [i \in DOMAIN order |-> I!Note("add", order[i], store[order[i]])]

AddHandler ==
    /\ ~added2
    /\ I!FifoUnlocked
    /\ added2' = TRUE
    /\ \E order \in I!DF!Orders(I!DF!StoredKeys) : notes2' = StoredAdds(order)
    /\ syncing' = [syncing EXCEPT !["h2"] = TRUE]
    /\ UNCHANGED <<vars, view2, lastRV2, resyncNote, resyncs>>

(* ResyncCheck: the due listeners are marked syncing; if any is due, the   *)
(* DeltaFIFO queues a Sync of every stored key with nothing queued.        *)
ResyncCheck ==
    /\ reflector \in {"connect", "watch"}
    /\ I!FifoUnlocked
    /\ resyncs < MaxResyncs
    /\ resyncs' = resyncs + 1
    /\ \E due \in SUBSET Added :
         /\ syncing' = [l \in Listeners |-> IF l \in Added THEN l \in due ELSE syncing[l]]
         /\ IF due = {}
            THEN UNCHANGED ownVars
            ELSE I!DF!Resync /\ UNCHANGED <<popped, outbox>>
    /\ UNCHANGED <<serverVars, reflector, lastSyncRV, store, handlerVars, applied,
                   h2Vars, resyncNote>>

-----------------------------------------------------------------------------
Init ==
    /\ I!Init
    /\ added2 = FALSE
    /\ notes2 = <<>>
    /\ view2 = [k \in Keys |-> 0]
    /\ lastRV2 = [k \in Keys |-> 0]
    /\ syncing = [l \in Listeners |-> TRUE]
    /\ resyncNote = FALSE
    /\ resyncs = 0

Next ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle \/ Handle2
    \/ AddHandler \/ ResyncCheck

Fairness ==
    /\ WF_allVars(List) /\ SF_allVars(WatchEvent) /\ WF_allVars(Connect)
    /\ WF_allVars(Pop) /\ WF_allVars(StoreWrite) /\ WF_allVars(Distribute)
    /\ WF_allVars(Handle) /\ WF_allVars(Handle2)

Spec == Init /\ [][Next]_allVars /\ Fairness

-----------------------------------------------------------------------------
(* Informer.tla's properties for h1, the same for h2.                      *)
StoreBeforeHandler == [][I!HandedOverReflected]_<<notifications, store>>
StoreFromServer == I!StoreFromServer

HandedOverReflected2 ==
    \A i \in (Len(notes2) + 1)..Len(notes2') : I!Reflects(store', notes2'[i])

StoreBeforeHandler2 == [][HandedOverReflected2]_<<notes2, store>>

(* INF-2 for both listeners.                                               *)
InOrder(ns, last) ==
    \A i \in DOMAIN ns :
        /\ ns[i].rv >= last[ns[i].key]
        /\ \A j \in (i + 1)..Len(ns) : ns[j].key = ns[i].key => ns[i].rv <= ns[j].rv

PerKeyRVOrder == InOrder(notifications, lastRV) /\ InOrder(notes2, lastRV2)

(* INF-3 for every listener, the late one too (INF-7: a handler not due    *)
(* for resync still hears of every change).                                *)
Converges ==
    <>[](/\ store = server /\ view = server /\ notifications = <<>>
         /\ (added2 => view2 = server /\ notes2 = <<>>))

TypeOK ==
    /\ I!TypeOK
    /\ added2 \in BOOLEAN
    /\ notes2 \in Seq(I!Notes)
    /\ view2 \in [Keys -> I!RVOrZero]
    /\ lastRV2 \in [Keys -> I!RVOrZero]
    /\ (~added2 => notes2 = <<>> /\ view2 = [k \in Keys |-> 0])
    /\ syncing \in [Listeners -> BOOLEAN]
    /\ resyncNote \in BOOLEAN /\ (resyncNote => outbox # <<>>)
    /\ resyncs \in 0..MaxResyncs
=============================================================================
