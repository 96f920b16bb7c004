---------------------------- MODULE InformerCommon ----------------------------
(***************************************************************************)
(* What the two informer specs share, stated once: the API server, the    *)
(* reflector's watch connection (dropped, re-requested, answered or 410    *)
(* Gone), the handler, the ghost `applied`, and the properties.  Informer.tla *)
(* (DeltaFIFO) and InformerAtomic.tla (atomic RealFIFO) EXTEND this module *)
(* and add their FIFO and processDeltas variables; each of their actions   *)
(* built from one here conjoins UNCHANGED of those variables, so a step   *)
(* of this module leaves them alone.  The reflector's List and WatchEvent  *)
(* feed the FIFO, so they are in the two specs, over NextEvent and         *)
(* ServerKeys from here.                                                   *)
(*                                                                         *)
(* An object is [key, rv]; a write bumps the server's resourceVersion,    *)
(* which is the length of `history`.  At most MaxRV writes happen, so the *)
(* server eventually stops changing: then the store and the handler's     *)
(* view must converge to it, whatever watch drops and compactions did.    *)
(* Faults (WatchDrop, Compact) have no fairness; the connection recovers  *)
(* (strong fairness on watch delivery, in the two specs).                  *)
(*                                                                         *)
(* invariants INF-1, INF-2, INF-3, REF-1, REF-3 of docs/invariants.md.    *)
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
    store,          \* the indexer: [Keys -> 0..MaxRV]
    notifications,  \* Seq(notification): the listener's buffer
    view,           \* [Keys -> 0..MaxRV]: what the handler believes
    lastRV,         \* [Keys -> 0..MaxRV]: rv of the last notification handled per key
    applied         \* history: the notes whose store write has happened; no
                    \* property reads it, the graph replay compares the code's with it

serverVars == <<server, history, compacted>>
reflectorVars == <<reflector, lastSyncRV>>
handlerVars == <<notifications, view, lastRV>>
commonVars == <<serverVars, reflectorVars, store, handlerVars, applied>>

Note(t, k, r) == [type |-> t, key |-> k, rv |-> r]

-----------------------------------------------------------------------------
(* The API server.                                                         *)
ServerWrite(k) ==
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
    /\ UNCHANGED <<compacted, reflectorVars, store, handlerVars, applied>>

(* etcd compaction: older resourceVersions answer 410 Gone.                *)
ServerCompact ==
    /\ compacted < Len(history)
    /\ compacted' = Len(history)
    /\ UNCHANGED <<server, history, reflectorVars, store, handlerVars, applied>>

(* The keys a list returns, and the event a watch delivers next (in       *)
(* order, never invented).                                                 *)
ServerKeys == {k \in Keys : server[k] # 0}
NextEvent == history[lastSyncRV + 1]

-----------------------------------------------------------------------------
(* The reflector's watch connection.  A watch drops; the request for a    *)
(* new one from the last synced rv is then in flight ("connect") ...       *)
ReflectorDrop ==
    /\ reflector = "watch"
    /\ reflector' = "connect"
    /\ UNCHANGED <<serverVars, lastSyncRV, store, handlerVars, applied>>

(* ... and answered: the watch is open, or 410 Gone if that rv was         *)
(* compacted away (then, after a backoff, relist).                         *)
ReflectorConnect ==
    /\ reflector = "connect"
    /\ reflector' = IF lastSyncRV < compacted THEN "list" ELSE "watch"
    /\ UNCHANGED <<serverVars, lastSyncRV, store, handlerVars, applied>>

-----------------------------------------------------------------------------
(* The handler, asynchronously, one notification at a time, in order; it   *)
(* keeps its own level view of the world (`view`).                         *)
HandlerStep ==
    /\ notifications # <<>>
    /\ LET n == Head(notifications) IN
        /\ view' = [view EXCEPT ![n.key] = IF n.type = "delete" THEN 0 ELSE n.rv]
        /\ lastRV' = [lastRV EXCEPT ![n.key] = n.rv]
    /\ notifications' = Tail(notifications)
    /\ UNCHANGED <<serverVars, reflectorVars, store, applied>>

CommonInit ==
    /\ server = [k \in Keys |-> 0]
    /\ history = <<>>
    /\ compacted = 0
    /\ reflector = "list"
    /\ lastSyncRV = 0
    /\ store = [k \in Keys |-> 0]
    /\ notifications = <<>>
    /\ view = [k \in Keys |-> 0]
    /\ lastRV = [k \in Keys |-> 0]
    /\ applied = {}

-----------------------------------------------------------------------------
(* The types of the shared variables (each spec's TypeOK adds its own).   *)
(* Not types alone: rvs stay within 0..MaxRV, the watch never runs ahead  *)
(* of the server, compaction never past it.                                *)
RVOrZero == 0..MaxRV
Notes == [type : {"add", "update", "delete"}, key : Keys, rv : RVOrZero]
Events == [type : {"ADDED", "MODIFIED", "DELETED"}, key : Keys, rv : 1..MaxRV]

CommonTypeOK ==
    /\ server \in [Keys -> RVOrZero]
    /\ history \in Seq(Events)
    /\ Len(history) <= MaxRV
    /\ compacted \in 0..Len(history)
    /\ reflector \in {"list", "connect", "watch"}
    /\ lastSyncRV \in 0..Len(history)
    /\ store \in [Keys -> RVOrZero]
    /\ notifications \in Seq(Notes)
    /\ view \in [Keys -> RVOrZero]
    /\ lastRV \in [Keys -> RVOrZero]
    /\ applied \subseteq Notes

-----------------------------------------------------------------------------
(* INF-1: a notification reaches the listener only when the store already *)
(* reflects it: in the step that hands it over (the handler call,          *)
(* Distribute in both specs), the store holds that key at the note's rv,   *)
(* or not at all for a delete.  Read off the store itself, not off         *)
(* `applied`, which the write step fills whatever it wrote: a note handed  *)
(* over before its write, or after a write that did not store it, breaks  *)
(* it even when an identical note was applied earlier                      *)
(* (MCInformerHandlerFirst, MCInformerAtomicNotifyFirst, and               *)
(* MCInformerAtomicReplaceUpserts, whose deletions reach the handler while *)
(* the store still holds the objects).  No action is named: any step that *)
(* grows the listener's buffer is checked.                                 *)
Reflects(s, n) == s[n.key] = IF n.type = "delete" THEN 0 ELSE n.rv

HandedOverReflected ==
    \A i \in (Len(notifications) + 1)..Len(notifications') : Reflects(store', notifications'[i])

StoreBeforeHandler == [][HandedOverReflected]_<<notifications, store>>

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
(* handler's view equal the server: no ghost, no lost object, and no lost  *)
(* delete (a key gone from the server is gone from the view, which only a  *)
(* delete note empties).  A separate NoLostDelete, "a key gone from the    *)
(* server and still in the view is eventually gone from it or created      *)
(* again", used to be checked beside it; every model bounds the writes, so *)
(* the server always stops changing and Converges implied it on every      *)
(* behaviour: it added a name, not checking power.  It is merged here: the *)
(* mutants that lose a delete (MCInformerNoTombstones,                     *)
(* MCInformerQueuedTombstonesSkipped, MCInformerAtomicNoDeletions) are     *)
(* declared to violate Converges.  A delete that a relist collapses, when  *)
(* the key was created again before it, is no violation: client-go hands  *)
(* on an update there, so no stronger safety form holds of client-go.      *)
Converges == <>[](store = server /\ view = server /\ notifications = <<>>)
=============================================================================
