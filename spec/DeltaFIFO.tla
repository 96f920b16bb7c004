------------------------------ MODULE DeltaFIFO ------------------------------
(***************************************************************************)
(* client-go's DeltaFIFO (tools/cache/delta_fifo.go) as informers use it:  *)
(* knownObjects is the informer's store, no transformer,                  *)
(* EmitDeltaTypeReplaced a constant (informers set it).  A queue of keys,  *)
(* each with its list of deltas; a key keeps its first place in the queue *)
(* while more deltas accumulate.                                           *)
(*                                                                         *)
(* Objects are records [key, rv, dfsu]: dfsu = FALSE is an API object at  *)
(* resource version rv; dfsu = TRUE is a DeletedFinalStateUnknown          *)
(* tombstone carrying the object at rv (rv = 0: no object).  `store` is   *)
(* the informer's store, key -> rv of the stored object (0 = absent); Pop *)
(* applies the popped deltas to it, as processDeltas does (store first;   *)
(* the handler is not modelled here, see Informer.tla).                   *)
(*                                                                         *)
(* Producer calls (Add, Update, Delete, Replace, Resync) are the          *)
(* environment: any object, any time while fewer than MaxQueued deltas    *)
(* are queued (a model bound, not a property of the code).  Go's random   *)
(* map order, which decides the queue order of keys tombstoned by Replace *)
(* or synced by Resync, is any order here.  Close and the consumer's wait *)
(* and exit are in DeltaFIFOClose.tla, which INSTANCEs this module        *)
(* (Informer.tla INSTANCEs it too and has no `closed`).                   *)
(*                                                                         *)
(* Refined by refimpl/cache/delta_fifo.py (DeltaFIFOCore) plus           *)
(* refimpl/cache/process_deltas.py on refimpl/cache/store.py              *)
(* (Indexer): see refimpl/tla/refine_fifo.py for the mapping.             *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Keys,       \* object keys
    RVs,        \* resource versions objects can have (positive integers)
    MaxQueued,  \* producers wait while this many deltas are queued
    EmitDeltaTypeReplaced  \* the option: TRUE since client-go 1.18 (informers)

ASSUME RVs \subseteq Nat \ {0}
ASSUME EmitDeltaTypeReplaced \in BOOLEAN

(* The type Replace gives listed objects: Sync when the option is off,    *)
(* as before client-go 1.18 and for any caller that leaves it off.        *)
RelistType == IF EmitDeltaTypeReplaced THEN "Replaced" ELSE "Sync"

VARIABLES
    queue,                  \* Seq(Keys): keys in pop order
    items,                  \* [Keys -> Seq(Delta)]: <<>> for a key with nothing queued
    populated,              \* BOOLEAN
    initialPopulationCount, \* Nat: pops left before the first Replace is handed out
    synced,                 \* BOOLEAN: HasSynced (monotone)
    store                   \* [Keys -> {0} \cup RVs]: the informer's store

fifoVars == <<queue, items, populated, initialPopulationCount, synced>>
vars == <<fifoVars, store>>

Obj(k, r) == [key |-> k, rv |-> r, dfsu |-> FALSE]
Tomb(k, r) == [key |-> k, rv |-> r, dfsu |-> TRUE]
Delta(t, o) == [type |-> t, obj |-> o]

Objs == {Obj(k, r) : k \in Keys, r \in RVs}
Tombs == {Tomb(k, r) : k \in Keys, r \in RVs \cup {0}}
DeltaTypes == {"Added", "Updated", "Deleted", "Replaced", "Sync"}
Deltas == [type : DeltaTypes, obj : Objs \cup Tombs]

Range(s) == {s[i] : i \in DOMAIN s}
Last(s) == s[Len(s)]
(* The sequences listing each element of S once, in every order.          *)
Orders(S) == {s \in [1..Cardinality(S) -> S] : Range(s) = S}
(* Relist results: objects with distinct keys, in any order.              *)
Lists == UNION {{s \in [1..n -> Objs] :
                    \A i, j \in 1..n : i # j => s[i].key # s[j].key}
                : n \in 0..Cardinality(Keys)}
Listed(l) == {l[i].key : i \in DOMAIN l}

Queued(k) == items[k] # <<>>
QueuedKeys == {k \in Keys : Queued(k)}
StoredKeys == {k \in Keys : store[k] # 0}

RECURSIVE SumLen(_)
SumLen(ks) == IF ks = {} THEN 0
              ELSE LET k == CHOOSE x \in ks : TRUE IN Len(items[k]) + SumLen(ks \ {k})
QueuedDeltas == SumLen(Keys)
ProducerMayRun == QueuedDeltas < MaxQueued

-----------------------------------------------------------------------------
(* queueActionLocked on a record [q |-> queue, it |-> items]: append the   *)
(* delta to its key; a new key goes to the tail of the queue.  dedupDeltas: *)
(* two Deleted in a row collapse, keeping the older unless it is a         *)
(* tombstone.                                                              *)
Enq(st, d) ==
    LET k == d.obj.key
        ds == st.it[k]
    IN IF ds = <<>>
       THEN [q |-> Append(st.q, k), it |-> [st.it EXCEPT ![k] = <<d>>]]
       ELSE IF Last(ds).type = "Deleted" /\ d.type = "Deleted"
            THEN [q |-> st.q,
                  it |-> [st.it EXCEPT ![k] =
                            [ds EXCEPT ![Len(ds)] = IF Last(ds).obj.dfsu THEN d ELSE Last(ds)]]]
            ELSE [q |-> st.q, it |-> [st.it EXCEPT ![k] = Append(ds, d)]]

RECURSIVE EnqAll(_, _)
EnqAll(st, ds) == IF ds = <<>> THEN st ELSE EnqAll(Enq(st, Head(ds)), Tail(ds))

(* Enqueue F[k] for each k in S, in any one order: only for keys that are *)
(* already queued, whose place and whose other keys' deltas do not depend  *)
(* on the order.                                                           *)
RECURSIVE EnqEach(_, _, _)
EnqEach(st, S, F) ==
    IF S = {} THEN st
    ELSE LET k == CHOOSE x \in S : TRUE IN EnqEach(Enq(st, F[k]), S \ {k}, F)

Now == [q |-> queue, it |-> items]

(* Add/Update/Delete mark the FIFO populated and may close `synced`.       *)
Populate ==
    /\ populated' = TRUE
    /\ synced' = (synced \/ initialPopulationCount = 0)
    /\ UNCHANGED initialPopulationCount

SetQueue(st) == queue' = st.q /\ items' = st.it

Add(o) ==
    /\ ProducerMayRun
    /\ Populate
    /\ SetQueue(Enq(Now, Delta("Added", o)))
    /\ UNCHANGED store

Update(o) ==
    /\ ProducerMayRun
    /\ Populate
    /\ SetQueue(Enq(Now, Delta("Updated", o)))
    /\ UNCHANGED store

(* Skipped when nothing is queued for the key and the store lacks it.      *)
Delete(o) ==
    /\ ProducerMayRun
    /\ Populate
    /\ IF ~Queued(o.key) /\ store[o.key] = 0
       THEN UNCHANGED <<queue, items>>
       ELSE SetQueue(Enq(Now, Delta("Deleted", o)))
    /\ UNCHANGED store

(* Replace(l): every listed object as RelistType; then a tombstone for every *)
(* queued key not listed, carrying its newest queued object (PR #115620);  *)
(* then a tombstone for every stored key not listed and not queued, in    *)
(* map order (any order).  The first Replace sets the initial population. *)
ReplaceWith(l, storeOrder) ==
    LET listed == Listed(l)
        st1 == EnqAll(Now, [i \in DOMAIN l |-> Delta(RelistType, l[i])])
        queuedGone == QueuedKeys \ listed
        st2 == EnqEach(st1, queuedGone,
                 [k \in queuedGone |-> Delta("Deleted", Tomb(k, Last(items[k]).obj.rv))])
        st3 == EnqAll(st2, [i \in DOMAIN storeOrder |->
                 Delta("Deleted", Tomb(storeOrder[i], store[storeOrder[i]]))])
        count == Cardinality(listed) + Cardinality(queuedGone) + Len(storeOrder)
    IN /\ SetQueue(st3)
       /\ IF populated
          THEN UNCHANGED <<populated, initialPopulationCount, synced>>
          ELSE /\ populated' = TRUE
               /\ initialPopulationCount' = count
               /\ synced' = (count = 0)

StoreOnlyGone(l) == StoredKeys \ (Listed(l) \cup QueuedKeys)

Replace(l) ==
    /\ ProducerMayRun
    /\ \E order \in Orders(StoreOnlyGone(l)) : ReplaceWith(l, order)
    /\ UNCHANGED store

(* Resync: Sync(stored object) for every stored key with nothing queued,   *)
(* in map order (any order).                                               *)
Resync ==
    /\ ProducerMayRun
    /\ \E order \in Orders(StoredKeys \ QueuedKeys) :
         SetQueue(EnqAll(Now, [i \in DOMAIN order |->
                     Delta("Sync", Obj(order[i], store[order[i]]))]))
    /\ UNCHANGED <<populated, initialPopulationCount, synced, store>>

(* What processDeltas leaves in the store for a key: the last delta wins.  *)
Applied(ds) == IF Last(ds).type = "Deleted" THEN 0 ELSE Last(ds).obj.rv

(* Pop: hand out the head key's deltas and apply them to the store.  The   *)
(* initial count drops before processing, so `synced` can turn true while  *)
(* the last initial key is still being processed (RealFIFO waits).         *)
Pop ==
    /\ queue # <<>>
    /\ LET k == Head(queue) IN
        /\ queue' = Tail(queue)
        /\ items' = [items EXCEPT ![k] = <<>>]
        /\ store' = [store EXCEPT ![k] = Applied(items[k])]
    /\ IF initialPopulationCount > 0
       THEN /\ initialPopulationCount' = initialPopulationCount - 1
            /\ synced' = (synced \/ (populated /\ initialPopulationCount = 1))
       ELSE UNCHANGED <<initialPopulationCount, synced>>
    /\ UNCHANGED populated

Init ==
    /\ queue = <<>>
    /\ items = [k \in Keys |-> <<>>]
    /\ populated = FALSE
    /\ initialPopulationCount = 0
    /\ synced = FALSE
    /\ store = [k \in Keys |-> 0]

Next ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop

Spec == Init /\ [][Next]_vars /\ WF_vars(Pop)

-----------------------------------------------------------------------------
TypeOK ==
    /\ queue \in Seq(Keys)
    /\ items \in [Keys -> Seq(Deltas)]
    /\ populated \in BOOLEAN
    /\ initialPopulationCount \in Nat
    /\ synced \in BOOLEAN
    /\ store \in [Keys -> RVs \cup {0}]

(* docs/invariants.md FIFO-1, FIFO-2, FIFO-3, FIFO-7.                      *)
QueueIsItemsKeys ==
    /\ Range(queue) = QueuedKeys
    /\ Len(queue) = Cardinality(Range(queue))

DeltasBelongToTheirKey == \A k \in Keys : \A i \in DOMAIN items[k] : items[k][i].obj.key = k

NoAdjacentDeletes ==
    \A k \in Keys : \A i \in 1..(Len(items[k]) - 1) :
        ~(items[k][i].type = "Deleted" /\ items[k][i + 1].type = "Deleted")

OnlyDeletesCarryTombstones ==
    \A k \in Keys : \A i \in DOMAIN items[k] : items[k][i].obj.dfsu => items[k][i].type = "Deleted"

SyncedMeansInitialListHandedOut == synced <=> (populated /\ initialPopulationCount = 0)

InitialCountWithinQueue == initialPopulationCount <= Len(queue)

(* Action properties (items 23, 24, 25).                                   *)
SyncedIsMonotone == [][synced => synced']_vars

(* The next two are read off the queue, not the action, so a mutated      *)
(* Replace or Resync is judged too.  The keys whose deltas a step changed  *)
(* and that now end in a delta of type t: only Replace queues "Replaced"   *)
(* deltas and tombstones, only Resync "Sync" deltas (Replace too when the  *)
(* option is off: then only a tombstone marks a relist step).              *)
EndsIn(k, t) == items'[k] # items[k] /\ items'[k] # <<>> /\ Last(items'[k]).type = t
RelistedKeys == {k \in Keys : EndsIn(k, RelistType)}
TombstonedKeys == {k \in Keys : EndsIn(k, "Deleted") /\ Last(items'[k]).obj.dfsu}
RelistMarks == IF EmitDeltaTypeReplaced THEN RelistedKeys \cup TombstonedKeys
               ELSE TombstonedKeys

(* FIFO-5 (#115620): in a step that queues a relist, every key that was    *)
(* queued or stored and is not listed ends in a delete.                    *)
TombstonesVanishedStep ==
    RelistMarks # {} =>
        \A k \in (QueuedKeys \cup StoredKeys) \ RelistedKeys :
            items'[k] # <<>> /\ Last(items'[k]).type = "Deleted"

ReplaceTombstonesVanished == [][TombstonesVanishedStep]_vars

(* FIFO-6: a step that queues Sync deltas leaves every queued key's deltas  *)
(* as they were.  Only with the option on: off, a relist queues Sync       *)
(* deltas for queued keys too, and the queue cannot tell the two apart.    *)
ResyncSkipsQueuedStep ==
    {k \in Keys : EndsIn(k, "Sync")} # {} => \A k \in QueuedKeys : items'[k] = items[k]

ResyncSkipsQueuedKeys == [][ResyncSkipsQueuedStep]_vars

(* Liveness: every queued key is handed out.                               *)
QueuedKeysArePopped == \A k \in Keys : Queued(k) ~> ~Queued(k)
=============================================================================
