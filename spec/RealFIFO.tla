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
(* Bookmarks and Close are not modelled.                                   *)
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

(* processDeltas' effect on the store (handlers are in Informer.tla).      *)
Applied(d) ==
    CASE d.type = "ReplacedAll" ->
            [k \in Keys |-> IF k \in Listed(d.obj)
                            THEN d.obj[CHOOSE i \in DOMAIN d.obj : d.obj[i].key = k].rv
                            ELSE 0]
      [] d.type = "SyncAll" -> store
      [] d.type = "Deleted" -> [store EXCEPT ![d.obj.key] = 0]
      [] OTHER -> [store EXCEPT ![d.obj.key] = d.obj.rv]

(* The count drops only after processing: HasSynced cannot turn true while *)
(* the last initial entry is being processed (PR #136264).                 *)
Finished ==
    IF initialPopulationCount > 0
    THEN /\ initialPopulationCount' = initialPopulationCount - 1
         /\ synced' = (synced \/ (populated /\ initialPopulationCount = 1))
    ELSE UNCHANGED <<initialPopulationCount, synced>>

(* Non-atomic: pop and process under the FIFO lock, one step.              *)
Pop ==
    /\ ~Atomic
    /\ log # <<>>
    /\ log' = Tail(log)
    /\ store' = Applied(Head(log))
    /\ Finished
    /\ UNCHANGED <<processing, populated>>

(* Atomic: take the head, release the lock ...                             *)
Take ==
    /\ Atomic
    /\ processing = <<>>
    /\ log # <<>>
    /\ processing' = <<[delta |-> Head(log), initial |-> ~synced]>>
    /\ log' = Tail(log)
    /\ UNCHANGED <<populated, initialPopulationCount, synced, store>>

(* ... process it (producers may have run meanwhile), re-lock, finish.     *)
Process ==
    /\ processing # <<>>
    /\ store' = Applied(processing[1].delta)
    /\ processing' = <<>>
    /\ Finished
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
    \/ Pop \/ Take \/ Process

Spec == Init /\ [][Next]_vars /\ WF_vars(Pop) /\ WF_vars(Take) /\ WF_vars(Process)

-----------------------------------------------------------------------------
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
(* listed keys.                                                            *)
ReplacedAllSetsStoreKeys ==
    [][Process /\ processing[1].delta.type = "ReplacedAll" =>
         {k \in Keys : store'[k] # 0} = Listed(processing[1].delta.obj)]_vars

(* A taken entry is processed.                                             *)
TakenIsProcessed == (processing # <<>>) ~> (processing = <<>>)
=============================================================================
