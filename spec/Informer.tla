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
(* The server, the watch connection, the handler and the properties are   *)
(* InformerCommon.tla's, shared with InformerAtomic.tla (EXTENDed); this   *)
(* module adds the DeltaFIFO, the reflector's List and WatchEvent into it, *)
(* and processDeltas (Pop, StoreWrite, Distribute).                        *)
(*                                                                         *)
(* docs/03-the-cache-you-read-from.md and docs/02-inside-the-informers-   *)
(* queue.md; invariants INF-1, INF-2, INF-3, INF-8, REF-1, REF-3 of       *)
(* docs/invariants.md.                                                     *)
(* Not modelled here: list errors, a 410 on an open watch, bookmarks and  *)
(* client-go's relist after a watch that ends within 1 s with no event    *)
(* are InformerFaults.tla's (which INSTANCEs this module and leaves its   *)
(* actions as they are); resync and a second handler InformerResync.tla's *)
(* (the same way); 429s and watch-list are in no spec.                    *)
(*                                                                         *)
(* Refined by the whole Python informer (ApiServerCore, ReflectorLoop,    *)
(* DeltaFIFOCore, Indexer, InformerCore, the listener): the mapping is     *)
(* refimpl/tla/refine_informer.py, replayed over this model's state graph *)
(* by tests/test_spec_informer_replay.py.                                  *)
(*                                                                         *)
(* Models (spec/models.json): MCInformer, 2 keys and 3 writes, whose graph *)
(* the code is replayed over; MCInformerLarge (3 keys, 3 writes) and       *)
(* MCInformer3 (the same under SYMMETRY, safety only), checked by default; *)
(* MCInformerLonger (2 keys, 4 writes), checked once; and one-action       *)
(* mutants (MCInformer<Mutation>.tla) that break each invariant and        *)
(* property MCInformer.cfg checks, TypeOK included.                        *)
(***************************************************************************)
EXTENDS InformerCommon

VARIABLES
    queue, items, populated, initialPopulationCount, synced,   \* the DeltaFIFO
    popped,         \* Seq(delta): the popped key's deltas not yet written to the store
    outbox          \* <<>> or <<note>>: written to the store, not yet distributed

fifoVars == <<queue, items, populated, initialPopulationCount, synced>>
procVars == <<popped, outbox>>
(* This spec's own variables: a step of InformerCommon leaves them alone.  *)
ownVars == <<fifoVars, procVars>>
vars == <<commonVars, ownVars>>

RVs == 1..MaxRV
DF == INSTANCE DeltaFIFO WITH MaxQueued <- MaxRV * 4 + 4, EmitDeltaTypeReplaced <- TRUE

-----------------------------------------------------------------------------
(* The API server and the reflector's watch connection: InformerCommon's. *)
Write(k) == ServerWrite(k) /\ UNCHANGED ownVars
Compact == ServerCompact /\ UNCHANGED ownVars
WatchDrop == ReflectorDrop /\ UNCHANGED ownVars
Connect == ReflectorConnect /\ UNCHANGED ownVars

-----------------------------------------------------------------------------
(* The reflector.  List: the server's objects, in any order, into          *)
(* DeltaFIFO.Replace; then it asks for a watch from the list's             *)
(* resourceVersion ("connect": the request is in flight, so a compaction   *)
(* can still make it fail).                                                *)
ServerObjs == {DF!Obj(k, server[k]) : k \in ServerKeys}

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

(* The watch delivers the next event into the FIFO.                        *)
WatchEvent ==
    /\ reflector = "watch"
    /\ FifoUnlocked
    /\ lastSyncRV < Len(history)
    /\ LET e == NextEvent
           o == DF!Obj(e.key, e.rv)
       IN /\ CASE e.type = "ADDED" -> DF!Add(o)
               [] e.type = "MODIFIED" -> DF!Update(o)
               [] e.type = "DELETED" -> DF!Delete(o)
          /\ lastSyncRV' = e.rv
    /\ UNCHANGED <<serverVars, reflector, handlerVars, applied, procVars>>

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

(* The handler: InformerCommon's.                                         *)
Handle == HandlerStep /\ UNCHANGED ownVars

Init ==
    /\ CommonInit
    /\ DF!Init
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
(* The properties are InformerCommon's: StoreBeforeHandler (INF-1; the    *)
(* store is written in StoreWrite, read when Distribute hands the note on), *)
(* PerKeyRVOrder (INF-2), StoreFromServer and Converges (INF-3, lost     *)
(* deletes included).  TypeOK adds the DeltaFIFO's types and processDeltas' buffers. *)
TypeOK ==
    /\ CommonTypeOK
    /\ DF!TypeOK
    /\ popped \in Seq(DF!Deltas)
    /\ outbox \in Seq(Notes)
    /\ Len(outbox) <= 1
=============================================================================
