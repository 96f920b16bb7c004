---------------------------- MODULE InformerAtomic ----------------------------
(***************************************************************************)
(* The informer of Informer.tla with the v1.36+ default FIFO: an atomic    *)
(* RealFIFO (RealFIFO.tla with Atomic = TRUE, INSTANCEd) instead of the    *)
(* DeltaFIFO.  Server, reflector and handler are as in Informer.tla; they  *)
(* are copied, not INSTANCEd, because Informer.tla's actions name the      *)
(* DeltaFIFO's variables.                                                  *)
(*                                                                         *)
(* A relist appends one ReplacedAll(list) entry; watch events append       *)
(* Added / Updated / Deleted entries.  Entries are taken in order, the     *)
(* FIFO lock is released while one is processed (producers run between    *)
(* Take and Finish).  Processing an entry is the code's steps: ApplyEntry  *)
(* writes the store, then Distribute hands the listener each notification *)
(* in turn, then Finish re-locks the FIFO and counts the entry done.       *)
(* Processing a ReplacedAll computes the deletions against the store at   *)
(* processing time (stored keys absent from the list, tombstoned with the *)
(* stored rv, in map order = any order), replaces the store whole, then    *)
(* notifies the deletions, then adds or updates in list order (add/update *)
(* decided by the old store).  A Deleted for a key not in the store still  *)
(* reaches the handler.                                                    *)
(*                                                                         *)
(* docs/02-inside-the-informers-queue.md (RealFIFO, ReplacedAll) and docs/ *)
(* 03-the-cache-you-read-from.md; invariants RF-4, INF-1, INF-3.  Resync   *)
(* (SyncAll), bookmarks and very short watches are not modelled, as in    *)
(* Informer.tla.                                                           *)
(*                                                                         *)
(* Refined by the Python informer with FifoMode.REAL_ATOMIC, unbatched     *)
(* (one entry per Take): refimpl/tla/refine_informer.py, replayed over     *)
(* this model's state graph by tests/test_spec_informer_replay.py.        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Keys,
    MaxRV       \* number of server writes

VARIABLES
    server,         \* [Keys -> 0..MaxRV]: rv of each live object, 0 = absent
    history,        \* Seq([type, key, rv]): every write's watch event; rv = index
    compacted,      \* events up to this rv can no longer be watched from
    reflector,      \* "list" | "connect" (a watch request in flight) | "watch"
    lastSyncRV,     \* the reflector's last synced resourceVersion; while it
                    \* watches, also how far its watch has delivered (rv = index)
    log, processing, populated, initialPopulationCount, synced,   \* the RealFIFO
    store,          \* the indexer: [Keys -> 0..MaxRV]
    notifications,  \* Seq(notification): the listener's buffer
    view,           \* [Keys -> 0..MaxRV]: what the handler believes
    lastRV,         \* [Keys -> 0..MaxRV]: rv of the last notification handled per key
    applied,        \* set of notifications whose store update has happened (history)
    outbox,         \* Seq(note): written to the store, not yet distributed
    written         \* the taken entry's store write is done

serverVars == <<server, history, compacted>>
reflectorVars == <<reflector, lastSyncRV>>
fifoVars == <<log, processing, populated, initialPopulationCount, synced>>
handlerVars == <<notifications, view, lastRV>>
procVars == <<outbox, written>>
vars == <<serverVars, reflectorVars, fifoVars, store, handlerVars, applied, procVars>>

(* Relists are bounded (each 410 needs a write and a compaction), so the   *)
(* log bound is never reached; it only keeps RealFIFO's producer guard.   *)
RF == INSTANCE RealFIFO WITH RVs <- 1..MaxRV, MaxQueued <- MaxRV * 4 + 4, Atomic <- TRUE

Note(t, k, r) == [type |-> t, key |-> k, rv |-> r]

-----------------------------------------------------------------------------
(* The API server (as in Informer.tla).                                    *)
Write(k) ==
    /\ Len(history) < MaxRV
    /\ LET r == Len(history) + 1 IN
        \/ /\ server[k] = 0
           /\ server' = [server EXCEPT ![k] = r]
           /\ history' = Append(history, [type |-> "ADDED", key |-> k, rv |-> r])
        \/ /\ server[k] # 0
           /\ server' = [server EXCEPT ![k] = r]
           /\ history' = Append(history, [type |-> "MODIFIED", key |-> k, rv |-> r])
        \/ /\ server[k] # 0
           /\ server' = [server EXCEPT ![k] = 0]
           /\ history' = Append(history, [type |-> "DELETED", key |-> k, rv |-> r])
    /\ UNCHANGED <<compacted, reflectorVars, fifoVars, store, handlerVars, applied, procVars>>

Compact ==
    /\ compacted < Len(history)
    /\ compacted' = Len(history)
    /\ UNCHANGED <<server, history, reflectorVars, fifoVars, store, handlerVars, applied,
                   procVars>>

-----------------------------------------------------------------------------
(* The reflector.  List: the server's objects, in any order, appended as   *)
(* one ReplacedAll entry; then it asks for a watch from the list's         *)
(* resourceVersion ("connect": the request is in flight).                  *)
ServerObjs == {RF!Obj(k, server[k]) : k \in {x \in Keys : server[x] # 0}}

List ==
    /\ reflector = "list"
    /\ \E l \in RF!Orders(ServerObjs) : RF!Replace(l)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, handlerVars, applied, procVars>>

WatchEvent ==
    /\ reflector = "watch"
    /\ lastSyncRV < Len(history)
    /\ LET e == history[lastSyncRV + 1]
           o == RF!Obj(e.key, e.rv)
       IN /\ CASE e.type = "ADDED" -> RF!Add(o)
               [] e.type = "MODIFIED" -> RF!Update(o)
               [] e.type = "DELETED" -> RF!Delete(o)
          /\ lastSyncRV' = e.rv
    /\ UNCHANGED <<serverVars, reflector, initialPopulationCount, handlerVars, applied,
                   procVars>>

WatchDrop ==
    /\ reflector = "watch"
    /\ reflector' = "connect"
    /\ UNCHANGED <<serverVars, lastSyncRV, fifoVars, store, handlerVars, applied, procVars>>

Connect ==
    /\ reflector = "connect"
    /\ reflector' = IF lastSyncRV < compacted THEN "list" ELSE "watch"
    /\ UNCHANGED <<serverVars, lastSyncRV, fifoVars, store, handlerVars, applied, procVars>>

-----------------------------------------------------------------------------
(* processDeltas for one entry, against the store before the entry.        *)
AddOrUpdate(o) == Note(IF store[o.key] # 0 THEN "update" ELSE "add", o.key, o.rv)

(* Stored keys absent from a ReplacedAll list: they get tombstones.        *)
Gone(d) == {k \in Keys : store[k] # 0 /\ k \notin RF!Listed(d.obj)}

(* Orders in which the deletions may be notified (Go map order).          *)
DeletionOrders(d) == IF d.type = "ReplacedAll" THEN RF!Orders(Gone(d)) ELSE {<<>>}

EntryNotes(d, order) ==
    CASE d.type = "ReplacedAll" ->
            [i \in DOMAIN order |-> Note("delete", order[i], store[order[i]])]
            \o [i \in DOMAIN d.obj |-> AddOrUpdate(d.obj[i])]
      [] d.type = "Deleted" -> <<Note("delete", d.obj.key, d.obj.rv)>>
      [] OTHER -> <<AddOrUpdate(d.obj)>>

(* Take the head entry and release the FIFO lock ...                       *)
Take ==
    /\ RF!Take
    /\ UNCHANGED <<serverVars, reflectorVars, handlerVars, applied, procVars>>

(* ... then, under no FIFO lock: the whole store update (for a ReplacedAll, *)
(* store.Replace of the entire list; INF-1: before any notification) ...   *)
ApplyEntry ==
    /\ processing # <<>>
    /\ ~written
    /\ \E order \in DeletionOrders(processing[1].delta) :
         LET ns == EntryNotes(processing[1].delta, order)
         IN /\ outbox' = ns
            /\ applied' = applied \cup RF!Range(ns)
    /\ store' = RF!Applied(processing[1].delta)
    /\ written' = TRUE
    /\ UNCHANGED <<serverVars, reflectorVars, log, processing, populated,
                   initialPopulationCount, synced, handlerVars>>

(* ... the handler calls, one notification each, in order ...              *)
Distribute ==
    /\ outbox # <<>>
    /\ notifications' = Append(notifications, Head(outbox))
    /\ outbox' = Tail(outbox)
    /\ UNCHANGED <<serverVars, reflectorVars, fifoVars, store, view, lastRV, applied, written>>

(* ... then re-lock and count the entry done (RealFIFO.tla's Finished).    *)
Finish ==
    /\ processing # <<>>
    /\ written
    /\ outbox = <<>>
    /\ processing' = <<>>
    /\ RF!Finished
    /\ written' = FALSE
    /\ UNCHANGED <<serverVars, reflectorVars, log, populated, store, handlerVars, applied,
                   outbox>>

Handle ==
    /\ notifications # <<>>
    /\ LET n == Head(notifications) IN
        /\ view' = [view EXCEPT ![n.key] = IF n.type = "delete" THEN 0 ELSE n.rv]
        /\ lastRV' = [lastRV EXCEPT ![n.key] = n.rv]
    /\ notifications' = Tail(notifications)
    /\ UNCHANGED <<serverVars, reflectorVars, fifoVars, store, applied, procVars>>

Init ==
    /\ server = [k \in Keys |-> 0]
    /\ history = <<>>
    /\ compacted = 0
    /\ reflector = "list"
    /\ lastSyncRV = 0
    /\ RF!Init
    /\ notifications = <<>>
    /\ view = [k \in Keys |-> 0]
    /\ lastRV = [k \in Keys |-> 0]
    /\ applied = {}
    /\ outbox = <<>>
    /\ written = FALSE

Next ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Take \/ ApplyEntry \/ Distribute \/ Finish \/ Handle

Fairness ==
    /\ WF_vars(List) /\ SF_vars(WatchEvent) /\ WF_vars(Connect)
    /\ WF_vars(Take) /\ WF_vars(ApplyEntry) /\ WF_vars(Distribute) /\ WF_vars(Finish)
    /\ WF_vars(Handle)

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* The properties of Informer.tla, restated over these variables.  INF-1:  *)
(* `applied` grows in ApplyEntry, the listener's buffer in Distribute      *)
(* (broken by MCInformerAtomicNotifyFirst).                                *)
StoreBeforeHandler == \A i \in DOMAIN notifications : notifications[i] \in applied

PerKeyRVOrder ==
    \A i \in DOMAIN notifications :
        /\ notifications[i].rv >= lastRV[notifications[i].key]
        /\ \A j \in (i + 1)..Len(notifications) :
             notifications[j].key = notifications[i].key => notifications[i].rv <= notifications[j].rv

StoreFromServer ==
    \A k \in Keys : store[k] # 0 =>
        \E i \in DOMAIN history : history[i].key = k /\ history[i].rv = store[k]

(* Atomic mode only: right after a ReplacedAll is processed the store      *)
(* holds exactly the listed objects, before any handler hears of it.       *)
ReplacedAllWholeStore ==
    [][ApplyEntry /\ processing[1].delta.type = "ReplacedAll" =>
         store' = RF!Applied(processing[1].delta)]_vars

(* INF-3 (Converges broken by MCInformerAtomicRewatchSkips, NoLostDelete   *)
(* by MCInformerAtomicNoDeletions).                                        *)
Converges == <>[](store = server /\ view = server /\ notifications = <<>>)

NoLostDelete ==
    \A k \in Keys : (server[k] = 0 /\ view[k] # 0) ~> (view[k] = 0 \/ server[k] # 0)
=============================================================================
