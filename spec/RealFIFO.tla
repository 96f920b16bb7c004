------------------------------- MODULE RealFIFO -------------------------------
(***************************************************************************)
(* client-go's RealFIFO (tools/cache/the_real_fifo.go): an append-only     *)
(* event log, popped in arrival order, never merged or deduplicated.       *)
(* Atomic = TRUE is the informer default since v1.36 (AtomicEvents +       *)
(* UnlockWhileProcessing, no knownObjects): a relist is one ReplacedAll    *)
(* entry, a resync one SyncAll entry, and the FIFO lock is released while *)
(* an entry is processed, so producers run between Take and Process.       *)
(* Atomic = FALSE is the v1.33-v1.35 mode (knownObjects = the store): a   *)
(* relist queues tombstones first, then Replaced entries; Pop processes   *)
(* under the lock.                                                         *)
(*                                                                         *)
(* Objects, tombstones and the store are as in DeltaFIFO.tla.  A           *)
(* ReplacedAll entry carries the listed objects (a sequence) in `obj`.     *)
(* Producer calls are the environment, bounded by MaxQueued log entries.  *)
(*                                                                         *)
(* The consumer is Pop (one entry) or PopBatch (client-go's PopBatch, the *)
(* informer's default with RealFIFO: the longest head run of object       *)
(* entries with distinct keys, never past the initial list).  A batch of  *)
(* one entry is handed to the single-entry path, so it is the step Pop /  *)
(* Take; PopBatch / TakeBatch are the batches of two or more.  The batch   *)
(* size limit (1000) and the lock-holding threshold (two batches queued)  *)
(* are never reached in a model this small, and are not modelled.  With  *)
(* one entry queued (MCRealFIFOAtomic) TakeBatch is never enabled; two    *)
(* queued entries in the atomic model ran over ten minutes in TLC.        *)
(*                                                                         *)
(* In the non-atomic mode Pop and PopBatch run under the FIFO lock, so    *)
(* taking and processing are one step and `processing` stays <<>>; the    *)
(* properties about an entry in flight                                     *)
(* (NotSyncedWhileInitialEntryInFlight, TakenIsProcessed) and about       *)
(* ReplacedAll entries (ReplacedAllSetsStoreKeys) mean something only     *)
(* with Atomic = TRUE and are checked only there (MCRealFIFOAtomic.cfg).  *)
(* RelistLeavesListedKeys and InitialListIsProcessed are checked in both *)
(* modes.                                                                   *)
(*                                                                         *)
(* Close, and the consumer's exit on a closed empty FIFO, are in           *)
(* RealFIFOClose.tla, which INSTANCEs this module (InformerAtomic.tla      *)
(* INSTANCEs it too and has no `closed`).  Bookmarks are not modelled.    *)
(*                                                                         *)
(* Refined by refimpl/cache/real_fifo.py (RealFIFOCore) plus               *)
(* refimpl/cache/process_deltas.py: refimpl/tla/refine_fifo.py.           *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Keys,
    RVs,
    MaxQueued,
    Atomic      \* BOOLEAN: AtomicEvents + UnlockWhileProcessing

ASSUME RVs \subseteq Nat \ {0}
ASSUME Atomic \in BOOLEAN

VARIABLES
    log,                    \* Seq(Delta): queued entries, oldest first
    processing,             \* <<>> or <<[delta, initial]>>: taken, not yet processed
    populated,
    initialPopulationCount, \* entries of the first Replace not yet processed
    synced,
    store                   \* [Keys -> {0} \cup RVs]

vars == <<log, processing, populated, initialPopulationCount, synced, store>>

Obj(k, r) == [key |-> k, rv |-> r, dfsu |-> FALSE]
Tomb(k, r) == [key |-> k, rv |-> r, dfsu |-> TRUE]
Delta(t, o) == [type |-> t, obj |-> o]

Objs == {Obj(k, r) : k \in Keys, r \in RVs}
Tombs == {Tomb(k, r) : k \in Keys, r \in RVs \cup {0}}
Range(s) == {s[i] : i \in DOMAIN s}
Last(s) == s[Len(s)]
Orders(S) == {s \in [1..Cardinality(S) -> S] : Range(s) = S}
Lists == UNION {{s \in [1..n -> Objs] :
                    \A i, j \in 1..n : i # j => s[i].key # s[j].key}
                : n \in 0..Cardinality(Keys)}
Listed(l) == {l[i].key : i \in DOMAIN l}
StoredKeys == {k \in Keys : store[k] # 0}

(* Keys of the per-object entries in the log (not ReplacedAll / SyncAll). *)
IsObjectEntry(d) == d.type \in {"Added", "Updated", "Deleted", "Replaced", "Sync"}
LogKeys == {log[i].obj.key : i \in {j \in DOMAIN log : IsObjectEntry(log[j])}}
FirstIndex(k) == CHOOSE i \in DOMAIN log :
                    IsObjectEntry(log[i]) /\ log[i].obj.key = k
                    /\ \A j \in 1..(i - 1) : ~(IsObjectEntry(log[j]) /\ log[j].obj.key = k)
LastEntry(k) == log[CHOOSE i \in DOMAIN log :
                    IsObjectEntry(log[i]) /\ log[i].obj.key = k
                    /\ \A j \in (i + 1)..Len(log) : ~(IsObjectEntry(log[j]) /\ log[j].obj.key = k)]

ProducerMayRun == Len(log) < MaxQueued

Populate ==
    /\ populated' = TRUE
    /\ synced' = (synced \/ initialPopulationCount = 0)
    /\ UNCHANGED initialPopulationCount

Add(o) ==
    /\ ProducerMayRun /\ Populate
    /\ log' = Append(log, Delta("Added", o))
    /\ UNCHANGED <<processing, store>>

Update(o) ==
    /\ ProducerMayRun /\ Populate
    /\ log' = Append(log, Delta("Updated", o))
    /\ UNCHANGED <<processing, store>>

(* Never filtered: a delete for a key known nowhere is still queued.       *)
Delete(o) ==
    /\ ProducerMayRun /\ Populate
    /\ log' = Append(log, Delta("Deleted", o))
    /\ UNCHANGED <<processing, store>>

(* Non-atomic relist (reconcileReplacement): tombstones for logged keys    *)
(* not listed whose last entry is not a delete, in first-seen order; then  *)
(* for stored keys neither listed nor logged, in map order (any order);    *)
(* then Replaced for every listed object.                                  *)
ReconciledEntries(l, storeOrder) ==
    LET gone == {k \in LogKeys \ Listed(l) : LastEntry(k).type # "Deleted"}
        byFirst == CHOOSE s \in Orders(gone) :
                       \A i \in 1..(Len(s) - 1) : FirstIndex(s[i]) < FirstIndex(s[i + 1])
    IN [i \in DOMAIN byFirst |-> Delta("Deleted", Tomb(byFirst[i], LastEntry(byFirst[i]).obj.rv))]
       \o [i \in DOMAIN storeOrder |-> Delta("Deleted", Tomb(storeOrder[i], store[storeOrder[i]]))]
       \o [i \in DOMAIN l |-> Delta("Replaced", l[i])]

FirstPopulation(newLog) ==
    IF populated
    THEN UNCHANGED <<populated, initialPopulationCount, synced>>
    ELSE /\ populated' = TRUE
         /\ initialPopulationCount' = Len(newLog)
         /\ synced' = (Len(newLog) = 0)

Replace(l) ==
    /\ ProducerMayRun
    /\ IF Atomic
       THEN LET newLog == Append(log, Delta("ReplacedAll", l))
            IN log' = newLog /\ FirstPopulation(newLog)
       ELSE \E order \in Orders(StoredKeys \ (Listed(l) \cup LogKeys)) :
              LET newLog == log \o ReconciledEntries(l, order)
              IN log' = newLog /\ FirstPopulation(newLog)
    /\ UNCHANGED <<processing, store>>

Resync ==
    /\ ProducerMayRun
    /\ IF Atomic
       THEN log' = Append(log, Delta("SyncAll", <<>>))
       ELSE \E order \in Orders(StoredKeys \ LogKeys) :
              log' = log \o [i \in DOMAIN order |-> Delta("Sync", Obj(order[i], store[order[i]]))]
    /\ UNCHANGED <<processing, populated, initialPopulationCount, synced, store>>

(* processDeltas' effect on a store s (handlers are in Informer.tla).      *)
ApplyTo(s, d) ==
    CASE d.type = "ReplacedAll" ->
            [k \in Keys |-> IF k \in Listed(d.obj)
                            THEN d.obj[CHOOSE i \in DOMAIN d.obj : d.obj[i].key = k].rv
                            ELSE 0]
      [] d.type = "SyncAll" -> s
      [] d.type = "Deleted" -> [s EXCEPT ![d.obj.key] = 0]
      [] OTHER -> [s EXCEPT ![d.obj.key] = d.obj.rv]

Applied(d) == ApplyTo(store, d)

RECURSIVE ApplyAll(_, _)
ApplyAll(s, ds) == IF ds = <<>> THEN s ELSE ApplyAll(ApplyTo(s, Head(ds)), Tail(ds))

(* takeBatch: the longest head run of object entries (BATCHABLE_TYPES)    *)
(* with distinct keys that does not reach past the initial list while it  *)
(* is pending; a head entry that is not batchable goes alone.             *)
FitsBatch(n) ==
    /\ n <= Len(log)
    /\ \A i \in 1..n : IsObjectEntry(log[i])
    /\ \A i, j \in 1..n : i # j => log[i].obj.key # log[j].obj.key
    /\ initialPopulationCount = 0 \/ n <= initialPopulationCount

BatchLen ==
    IF log = <<>> THEN 0
    ELSE IF ~IsObjectEntry(Head(log)) THEN 1
    ELSE CHOOSE n \in 1..Len(log) : FitsBatch(n) /\ ~FitsBatch(n + 1)

(* The count drops only after processing: HasSynced cannot turn true while *)
(* the last initial entry is being processed (PR #136264).                 *)
FinishedN(n) ==
    IF initialPopulationCount > 0
    THEN /\ initialPopulationCount' = initialPopulationCount - n
         /\ synced' = (synced \/ (populated /\ initialPopulationCount = n))
    ELSE UNCHANGED <<initialPopulationCount, synced>>

Finished == FinishedN(1)

(* Non-atomic: pop and process under the FIFO lock, one step.              *)
Pop ==
    /\ ~Atomic
    /\ log # <<>>
    /\ log' = Tail(log)
    /\ store' = Applied(Head(log))
    /\ Finished
    /\ UNCHANGED <<processing, populated>>

(* Non-atomic PopBatch: take a batch of two or more and process it, under *)
(* the lock; one finish for the whole batch.                               *)
PopBatch ==
    /\ ~Atomic
    /\ BatchLen >= 2
    /\ log' = SubSeq(log, BatchLen + 1, Len(log))
    /\ store' = ApplyAll(store, SubSeq(log, 1, BatchLen))
    /\ FinishedN(BatchLen)
    /\ UNCHANGED <<processing, populated>>

(* Atomic: take the head, release the lock ...                             *)
Take ==
    /\ Atomic
    /\ processing = <<>>
    /\ log # <<>>
    /\ processing' = <<[delta |-> Head(log), initial |-> ~synced]>>
    /\ log' = Tail(log)
    /\ UNCHANGED <<populated, initialPopulationCount, synced, store>>

(* ... or take a batch of two or more, release the lock ...               *)
TakeBatch ==
    /\ Atomic
    /\ processing = <<>>
    /\ BatchLen >= 2
    /\ processing' = [i \in 1..BatchLen |-> [delta |-> log[i], initial |-> ~synced]]
    /\ log' = SubSeq(log, BatchLen + 1, Len(log))
    /\ UNCHANGED <<populated, initialPopulationCount, synced, store>>

TakenDeltas == [i \in DOMAIN processing |-> processing[i].delta]

(* ... process what was taken (producers may have run meanwhile), re-lock, *)
(* finish.                                                                  *)
Process ==
    /\ processing # <<>>
    /\ store' = ApplyAll(store, TakenDeltas)
    /\ processing' = <<>>
    /\ FinishedN(Len(processing))
    /\ UNCHANGED <<log, populated>>

Init ==
    /\ log = <<>>
    /\ processing = <<>>
    /\ populated = FALSE
    /\ initialPopulationCount = 0
    /\ synced = FALSE
    /\ store = [k \in Keys |-> 0]

Next ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process

(* The consumer keeps popping: whichever of its steps is enabled is taken. *)
Consume == Pop \/ PopBatch \/ Take \/ TakeBatch \/ Process

Spec == Init /\ [][Next]_vars /\ WF_vars(Consume)

-----------------------------------------------------------------------------
ObjectEntries == [type : {"Added", "Updated", "Deleted", "Replaced", "Sync"}, obj : Objs \cup Tombs]
Entries == ObjectEntries \cup [type : {"ReplacedAll"}, obj : Lists] \cup {Delta("SyncAll", <<>>)}

TypeOK ==
    /\ log \in Seq(Entries)
    /\ processing \in Seq([delta : Entries, initial : BOOLEAN])
    /\ populated \in BOOLEAN
    /\ initialPopulationCount \in Nat
    /\ synced \in BOOLEAN
    /\ store \in [Keys -> RVs \cup {0}]

SyncedMeansInitialListProcessed == synced <=> (populated /\ initialPopulationCount = 0)

InitialCountWithinLog == initialPopulationCount <= Len(log) + Len(processing)

(* Item 25, RealFIFO flavour: while an entry of the initial list is being  *)
(* processed, HasSynced is still false.  The count covers the first        *)
(* entries in FIFO order and drops only after processing, so the entry in  *)
(* flight belongs to the initial list exactly when the count is positive.  *)
NotSyncedWhileInitialEntryInFlight ==
    processing # <<>> /\ initialPopulationCount > 0 => ~synced

OnlyDeletesCarryTombstones ==
    \A i \in DOMAIN log : IsObjectEntry(log[i]) /\ log[i].obj.dfsu => log[i].type = "Deleted"

SyncedIsMonotone == [][synced => synced']_vars

(* Item 29: after a ReplacedAll is processed the store holds exactly the   *)
(* listed keys.  A step that ends the processing of a ReplacedAll entry   *)
(* (read off `processing`, not the action, so a mutated Process is judged *)
(* too; a ReplacedAll is never batched, so it is the only entry taken).    *)
ReplacedAllStep ==
    processing # <<>> /\ processing' = <<>> /\ processing[1].delta.type = "ReplacedAll" =>
        {k \in Keys : store'[k] # 0} = Listed(processing[1].delta.obj)

ReplacedAllSetsStoreKeys == [][ReplacedAllStep]_vars

(* A taken entry is processed (atomic mode: Take and Process are steps).   *)
TakenIsProcessed == (processing # <<>>) ~> (processing = <<>>)

(* What the store holds once everything in flight and queued is processed. *)
Eventually(s, pr, lg) == ApplyAll(ApplyAll(s, [i \in DOMAIN pr |-> pr[i].delta]), lg)
EventualKeys == {k \in Keys : Eventually(store, processing, log)[k] # 0}

(* A step that appended what a relist of l appends: tombstones, then       *)
(* Replaced for each object of l (non-atomic); one ReplacedAll (atomic).   *)
(* Read off the log, not the action, so a mutated Replace is judged too.   *)
Relisted(l) ==
    /\ Len(log') > Len(log)
    /\ SubSeq(log', 1, Len(log)) = log
    /\ LET new == SubSeq(log', Len(log) + 1, Len(log'))
           t == Len(new) - Len(l)
       IN IF Atomic
          THEN new = <<Delta("ReplacedAll", l)>>
          ELSE /\ t >= 0
               /\ \A i \in 1..t : new[i].type = "Deleted" /\ new[i].obj.dfsu
               /\ \A i \in 1..Len(l) : new[t + i] = Delta("Replaced", l[i])

(* FIFO-5 / RF-4, both modes: a relist queues what makes the store hold   *)
(* exactly the listed keys once everything queued is processed --          *)
(* tombstones for every stored or queued key not listed (non-atomic), or  *)
(* one ReplacedAll (atomic).                                                *)
RelistLeavesListedKeys ==
    [][\A l \in Lists : Relisted(l) => EventualKeys' = Listed(l)]_vars

(* RF-3, both modes: what a consumer step takes off the head of the log,   *)
(* when it is two entries or more (PopBatch, TakeBatch), has only object    *)
(* entries with distinct keys and stays inside the initial list while that *)
(* is pending.  Read off the log, not the action, so a mutated batch is    *)
(* judged too.  The 1000-entry cap is not modelled (MaxQueued is below it).*)
BatchOK(b) ==
    Len(b) >= 2 =>
        /\ \A i \in DOMAIN b : IsObjectEntry(b[i])
        /\ \A i, j \in DOMAIN b : i # j => b[i].obj.key # b[j].obj.key
        /\ initialPopulationCount = 0 \/ Len(b) <= initialPopulationCount

BatchIsWellFormed ==
    [][Len(log') < Len(log) => BatchOK(SubSeq(log, 1, Len(log) - Len(log')))]_vars

(* Liveness, both modes: the initial list is processed and HasSynced turns *)
(* true (every finish counts its entries down).                            *)
InitialListIsProcessed == populated ~> synced
=============================================================================
