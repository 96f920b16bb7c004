------------------------------- MODULE Informer -------------------------------
(***************************************************************************)
(* An informer end to end: an API server with a global resourceVersion,   *)
(* its event history and compaction; a reflector that lists, watches,     *)
(* loses its watch and re-watches, and relists after 410 Gone; the        *)
(* DeltaFIFO (DeltaFIFO.tla, INSTANCEd); processDeltas, which, per delta, *)
(* writes the store and then distributes a notification to the listener   *)
(* (two steps, as in the code: other threads run between them); and the   *)
(* handler, which consumes notifications asynchronously and keeps its own *)
(* level view of the world (`view`).                                       *)
(*                                                                         *)
(* An object is [key, rv]; a write bumps the server's resourceVersion,    *)
(* which is the length of `history`.  At most MaxRV writes happen, so the *)
(* server eventually stops changing: then the store and the handler's     *)
(* view must converge to it, whatever watch drops and compactions did.    *)
(* Faults (WatchDrop, Compact) have no fairness; the connection recovers  *)
(* (strong fairness on watch delivery).                                    *)
(*                                                                         *)
(* docs/03-the-cache-you-read-from.md and docs/02-inside-the-informers-   *)
(* queue.md; invariants INF-1, INF-3, REF-1, REF-3 of docs/invariants.md. *)
(* Not modelled: list errors, 429s, resync, bookmarks, watch-list, and   *)
(* client-go's relist after a watch that ends within 1 s with no event.  *)
(*                                                                         *)
(* Refined by the whole Python informer (ApiServerCore, ReflectorLoop,    *)
(* DeltaFIFOCore, Indexer, InformerCore, the listener): the mapping is     *)
(* refimpl/tla/refine_informer.py, replayed over this model's state graph *)
(* by tests/test_spec_informer_replay.py.                                  *)
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
    queue, items, populated, initialPopulationCount, synced,   \* the DeltaFIFO
    store,          \* the indexer: [Keys -> 0..MaxRV]
    notifications,  \* Seq(notification): the listener's buffer
    view,           \* [Keys -> 0..MaxRV]: what the handler believes
    lastRV,         \* [Keys -> 0..MaxRV]: rv of the last notification handled per key
    applied,        \* set of notifications whose store update has happened (history)
    popped,         \* Seq(delta): the popped key's deltas not yet written to the store
    outbox          \* <<>> or <<note>>: written to the store, not yet distributed

serverVars == <<server, history, compacted>>
reflectorVars == <<reflector, lastSyncRV>>
fifoVars == <<queue, items, populated, initialPopulationCount, synced>>
handlerVars == <<notifications, view, lastRV>>
procVars == <<popped, outbox>>
vars == <<serverVars, reflectorVars, fifoVars, store, handlerVars, applied, procVars>>

RVs == 1..MaxRV
DF == INSTANCE DeltaFIFO WITH MaxQueued <- MaxRV * 4 + 4

Note(t, k, r) == [type |-> t, key |-> k, rv |-> r]

-----------------------------------------------------------------------------
(* The API server.                                                         *)
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

(* etcd compaction: older resourceVersions answer 410 Gone.                *)
Compact ==
    /\ compacted < Len(history)
    /\ compacted' = Len(history)
    /\ UNCHANGED <<server, history, reflectorVars, fifoVars, store, handlerVars, applied,
                   procVars>>

-----------------------------------------------------------------------------
(* The reflector.  List: the server's objects, in any order, into          *)
(* DeltaFIFO.Replace; then it asks for a watch from the list's             *)
(* resourceVersion ("connect": the request is in flight, so a compaction   *)
(* can still make it fail).                                                *)
ServerObjs == {DF!Obj(k, server[k]) : k \in {x \in Keys : server[x] # 0}}

(* DeltaFIFO.Pop holds the FIFO lock while processDeltas runs, so the      *)
(* reflector's writes to the FIFO wait until the popped key is processed.  *)
FifoUnlocked == popped = <<>> /\ outbox = <<>>

List ==
    /\ reflector = "list"
    /\ FifoUnlocked
    /\ \E l \in DF!Orders(ServerObjs) :
         \E order \in DF!Orders(DF!StoreOnlyGone(l)) : DF!ReplaceWith(l, order)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, store, handlerVars, applied, procVars>>

(* The watch delivers the next event, in order, never invented.            *)
WatchEvent ==
    /\ reflector = "watch"
    /\ FifoUnlocked
    /\ lastSyncRV < Len(history)
    /\ LET e == history[lastSyncRV + 1]
           o == DF!Obj(e.key, e.rv)
       IN /\ CASE e.type = "ADDED" -> DF!Add(o)
               [] e.type = "MODIFIED" -> DF!Update(o)
               [] e.type = "DELETED" -> DF!Delete(o)
          /\ lastSyncRV' = e.rv
    /\ UNCHANGED <<serverVars, reflector, handlerVars, applied, procVars>>

WatchDrop ==
    /\ reflector = "watch"
    /\ reflector' = "connect"
    /\ UNCHANGED <<serverVars, lastSyncRV, fifoVars, store, handlerVars, applied, procVars>>

(* The watch request from the last synced rv is answered: the watch is    *)
(* open, or 410 Gone if that rv was compacted away (then, after a backoff, *)
(* relist).  A dropped watch asks again from the same rv.                  *)
Connect ==
    /\ reflector = "connect"
    /\ reflector' = IF lastSyncRV < compacted THEN "list" ELSE "watch"
    /\ UNCHANGED <<serverVars, lastSyncRV, fifoVars, store, handlerVars, applied, procVars>>

-----------------------------------------------------------------------------
(* processDeltas, in three kinds of step.  Pop: the head key's deltas are *)
(* taken out of the FIFO (the initial count drops before processing).      *)
Pop ==
    /\ FifoUnlocked
    /\ queue # <<>>
    /\ LET k == Head(queue) IN
        /\ queue' = Tail(queue)
        /\ items' = [items EXCEPT ![k] = <<>>]
        /\ popped' = items[k]
    /\ IF initialPopulationCount > 0
       THEN /\ initialPopulationCount' = initialPopulationCount - 1
            /\ synced' = (synced \/ (populated /\ initialPopulationCount = 1))
       ELSE UNCHANGED <<initialPopulationCount, synced>>
    /\ UNCHANGED <<serverVars, reflectorVars, populated, store, handlerVars, applied, outbox>>

(* The notification a delta produces: add or update by store presence      *)
(* before its write, delete for a Deleted delta (even of an absent key).   *)
NoteFor(d) ==
    Note(IF d.type = "Deleted" THEN "delete"
         ELSE IF store[d.obj.key] # 0 THEN "update" ELSE "add", d.obj.key, d.obj.rv)

(* StoreWrite: the oldest popped delta goes into the store (INF-1: this   *)
(* comes first); its notification is then due.                             *)
StoreWrite ==
    /\ popped # <<>>
    /\ outbox = <<>>
    /\ LET d == Head(popped) IN
        /\ store' = [store EXCEPT ![d.obj.key] = IF d.type = "Deleted" THEN 0 ELSE d.obj.rv]
        /\ outbox' = <<NoteFor(d)>>
        /\ applied' = applied \cup {NoteFor(d)}
    /\ popped' = Tail(popped)
    /\ UNCHANGED <<serverVars, reflectorVars, fifoVars, handlerVars>>

(* Distribute: the handler call; the listener buffers the notification.   *)
Distribute ==
    /\ outbox # <<>>
    /\ notifications' = notifications \o outbox
    /\ outbox' = <<>>
    /\ UNCHANGED <<serverVars, reflectorVars, fifoVars, store, view, lastRV, applied, popped>>

(* The handler, asynchronously, one notification at a time, in order.      *)
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
    /\ DF!Init
    /\ notifications = <<>>
    /\ view = [k \in Keys |-> 0]
    /\ lastRV = [k \in Keys |-> 0]
    /\ applied = {}
    /\ popped = <<>>
    /\ outbox = <<>>

Next ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle

Fairness ==
    /\ WF_vars(List) /\ SF_vars(WatchEvent) /\ WF_vars(Connect)
    /\ WF_vars(Pop) /\ WF_vars(StoreWrite) /\ WF_vars(Distribute) /\ WF_vars(Handle)

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* INF-1: a notification reaches the listener only after the store         *)
(* reflects it.  `applied` grows in StoreWrite, the listener's buffer in       *)
(* Distribute: a distribution that does not wait for its write breaks it   *)
(* (MCInformerHandlerFirst).                                               *)
StoreBeforeHandler == \A i \in DOMAIN notifications : notifications[i] \in applied

(* INF-2: per key, the handler sees resourceVersions in order.            *)
PerKeyRVOrder ==
    \A i \in DOMAIN notifications :
        /\ notifications[i].rv >= lastRV[notifications[i].key]
        /\ \A j \in (i + 1)..Len(notifications) :
             notifications[j].key = notifications[i].key => notifications[i].rv <= notifications[j].rv

(* The store never holds a version the server never had for that key.     *)
StoreFromServer ==
    \A k \in Keys : store[k] # 0 =>
        \E i \in DOMAIN history : history[i].key = k /\ history[i].rv = store[k]

(* INF-3: once the server stops changing, the store and the               *)
(* handler's view equal the server: no ghost, no lost object.              *)
Converges == <>[](store = server /\ view = server /\ notifications = <<>>)

(* INF-3, no lost delete: an object gone from the server is eventually    *)
(* gone from the handler's view (unless it is created again).            *)
NoLostDelete ==
    \A k \in Keys : (server[k] = 0 /\ view[k] # 0) ~> (view[k] = 0 \/ server[k] # 0)
=============================================================================
