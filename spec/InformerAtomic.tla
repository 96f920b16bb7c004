---------------------------- MODULE InformerAtomic ----------------------------
(***************************************************************************)
(* The informer of Informer.tla with the v1.36+ default FIFO: an atomic    *)
(* RealFIFO (RealFIFO.tla with Atomic = TRUE, INSTANCEd) instead of the    *)
(* DeltaFIFO.  The server, the watch connection, the handler and the      *)
(* properties are InformerCommon.tla's, shared with Informer.tla           *)
(* (EXTENDed); this module adds the RealFIFO, the reflector's List and     *)
(* WatchEvent into it, and processDeltas (Take, ApplyEntry, Distribute,    *)
(* Finish).                                                                *)
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
(* 03-the-cache-you-read-from.md; invariants RF-4, INF-1, INF-2, INF-3,   *)
(* INF-8.  Resync (SyncAll), 429s and watch-list are not modelled, as in  *)
(* Informer.tla.  List errors, a 410 on an open watch, very short watches *)
(* and bookmarks are modelled over the DeltaFIFO informer only            *)
(* (InformerFaults.tla); the reflector is the same code, but no model     *)
(* pairs them with the atomic RealFIFO (not done for lack of time).       *)
(*                                                                         *)
(* Refined by the Python informer with FifoMode.REAL_ATOMIC, unbatched     *)
(* (one entry per Take): refimpl/tla/refine_informer.py, replayed over     *)
(* this model's state graph by tests/test_spec_informer_replay.py.        *)
(*                                                                         *)
(* Models (spec/models.json): MCInformerAtomic, 2 keys and 3 writes, whose *)
(* graph the code is replayed over; MCInformerAtomicLarge (3 keys, 3      *)
(* writes) and MCInformerAtomic3 (the same under SYMMETRY, safety only),   *)
(* checked by default; MCInformerAtomicLonger (2 keys, 4 writes), checked  *)
(* once;                                                                   *)
(* and one-action mutants (MCInformerAtomic<Mutation>.tla) that break     *)
(* each invariant and property MCInformerAtomic.cfg checks, TypeOK         *)
(* included.                                                               *)
(***************************************************************************)
EXTENDS InformerCommon

VARIABLES
    log, processing, populated, initialPopulationCount, synced,   \* the RealFIFO
    outbox,         \* Seq(note): written to the store, not yet distributed
    written         \* the taken entry's store write is done

fifoVars == <<log, processing, populated, initialPopulationCount, synced>>
procVars == <<outbox, written>>
(* This spec's own variables: a step of InformerCommon leaves them alone.  *)
ownVars == <<fifoVars, procVars>>
vars == <<commonVars, ownVars>>

(* Relists are bounded (each 410 needs a write and a compaction), so the   *)
(* log bound is never reached; it only keeps RealFIFO's producer guard.   *)
RF == INSTANCE RealFIFO WITH RVs <- 1..MaxRV, MaxQueued <- MaxRV * 4 + 4, Atomic <- TRUE

-----------------------------------------------------------------------------
(* The API server and the reflector's watch connection: InformerCommon's. *)
Write(k) == ServerWrite(k) /\ UNCHANGED ownVars
Compact == ServerCompact /\ UNCHANGED ownVars
WatchDrop == ReflectorDrop /\ UNCHANGED ownVars
Connect == ReflectorConnect /\ UNCHANGED ownVars

-----------------------------------------------------------------------------
(* The reflector.  List: the server's objects, in any order, appended as   *)
(* one ReplacedAll entry; then it asks for a watch from the list's         *)
(* resourceVersion ("connect": the request is in flight).                  *)
ServerObjs == {RF!Obj(k, server[k]) : k \in ServerKeys}

List ==
    /\ reflector = "list"
    /\ \E l \in RF!Orders(ServerObjs) : RF!Replace(l)
    /\ reflector' = "connect"
    /\ lastSyncRV' = Len(history)
    /\ UNCHANGED <<serverVars, handlerVars, applied, procVars>>

WatchEvent ==
    /\ reflector = "watch"
    /\ lastSyncRV < Len(history)
    /\ LET e == NextEvent
           o == RF!Obj(e.key, e.rv)
       IN /\ CASE e.type = "ADDED" -> RF!Add(o)
               [] e.type = "MODIFIED" -> RF!Update(o)
               [] e.type = "DELETED" -> RF!Delete(o)
          /\ lastSyncRV' = e.rv
    /\ UNCHANGED <<serverVars, reflector, initialPopulationCount, handlerVars, applied,
                   procVars>>

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

(* The handler: InformerCommon's.                                         *)
Handle == HandlerStep /\ UNCHANGED ownVars

Init ==
    /\ CommonInit
    /\ RF!Init
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
(* The properties are InformerCommon's: StoreBeforeHandler (INF-1; the    *)
(* store is written in ApplyEntry, read when Distribute hands a note on;   *)
(* broken by MCInformerAtomicNotifyFirst and, through its deletions,       *)
(* MCInformerAtomicReplaceUpserts), PerKeyRVOrder (INF-2),                 *)
(* StoreFromServer and Converges (INF-3; broken by                        *)
(* MCInformerAtomicRewatchSkips and, a lost delete,                       *)
(* MCInformerAtomicNoDeletions).                                           *)
(*                                                                         *)
(* RF-4, atomic mode only: from the store write of a ReplacedAll until the *)
(* entry is finished, so whenever a handler hears of it, the store holds   *)
(* exactly the listed objects, each at its listed rv.  Stated from the     *)
(* list itself, not through RF!Applied, which ApplyEntry writes: a store   *)
(* update that is not a whole replacement breaks it                        *)
(* (MCInformerAtomicReplaceUpserts).                                       *)
ReplacedAllWholeStore ==
    (processing # <<>> /\ written /\ processing[1].delta.type = "ReplacedAll") =>
        LET l == processing[1].delta.obj IN
        /\ \A i \in DOMAIN l : store[l[i].key] = l[i].rv
        /\ \A k \in Keys : store[k] # 0 => \E i \in DOMAIN l : l[i].key = k

(* INF-1, cross-key order of a ReplacedAll (controller.go's               *)
(* processReplacedAllInfo): after the store replace, every deletion is    *)
(* handed out before any add or update.  Stated from what the listener    *)
(* gets, naming no action: when a step hands the listener an add or an    *)
(* update, no deletion is left waiting in processDeltas' buffer.  Only a  *)
(* ReplacedAll makes more than one note, so only its order is at stake.   *)
(* An ApplyEntry that queues the adds and updates first breaks it          *)
(* (MCInformerAtomicDeletionsLast).                                        *)
ReplacedAllDeletionsFirst ==
    [][\A i \in (Len(notifications) + 1)..Len(notifications') :
          notifications'[i].type # "delete" =>
              \A j \in DOMAIN outbox' : outbox'[j].type # "delete"]_<<notifications, outbox>>

(* The types: InformerCommon's, the RealFIFO's entries, processDeltas'     *)
(* buffer.                                                                 *)
Entries ==
    [type : {"Added", "Updated", "Deleted"}, obj : RF!Objs]
    \cup [type : {"ReplacedAll"}, obj : RF!Lists]

TypeOK ==
    /\ CommonTypeOK
    /\ log \in Seq(Entries)
    /\ processing \in Seq([delta : Entries, initial : BOOLEAN])
    /\ Len(processing) <= 1
    /\ populated \in BOOLEAN
    /\ initialPopulationCount \in Nat
    /\ synced \in BOOLEAN
    /\ outbox \in Seq(Notes)
    /\ written \in BOOLEAN
    /\ written => processing # <<>>
=============================================================================
