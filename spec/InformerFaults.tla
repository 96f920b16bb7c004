---------------------------- MODULE InformerFaults ----------------------------
(***************************************************************************)
(* Informer.tla (DeltaFIFO) with the reflector's faults and bookmarks that *)
(* Informer.tla leaves out, each bounded so that Converges still says      *)
(* something (a fault has no fairness and happens at most its    *)
(* bound's times in a behaviour):                                          *)
(*                                                                         *)
(*  - ListFail: the list request fails (a 5xx, a timeout); the reflector   *)
(*    backs off and lists again ("list" is also the backoff before a       *)
(*    relist).  Nothing reaches the FIFO, so it needs no FIFO lock.        *)
(*  - WatchExpired: an ERROR event with 410 on an already open watch (the  *)
(*    server dropped a watcher that fell behind).  client-go relists, from *)
(*    the last synced resourceVersion (REF-1 of docs/invariants.md): it    *)
(*    must not re-watch from there.                                        *)
(*  - WatchShort: an open watch ends cleanly with no event (bookmarks      *)
(*    count as events) within a second of its start: client-go takes it   *)
(*    as an error and relists; a watch that delivered an event, or lasted  *)
(*    longer (WatchDrop), is re-watched.  `eventSeen` says whether the open *)
(*    watch delivered one.                                                  *)
(*  - WatchRetry: the watch request is answered 429 TooManyRequests (or    *)
(*    the connection is refused): client-go backs off and requests the     *)
(*    watch again from the same last synced rv, with no relist.  The       *)
(*    backoff is a wait, so the 429 and the new request are one step.  (A  *)
(*    500 on an open watch ends the pass and relists, as a drop to "list"  *)
(*    would, with MaxInternalErrorRetryDuration 0, client-go's default.)   *)
(*  - BookmarkSend / WatchBookmark: the server puts a BOOKMARK at its       *)
(*    newest resourceVersion into the open watch's stream, after the       *)
(*    events before it; the reflector, on reaching it, takes its rv as the *)
(*    last synced one.  The DeltaFIFO gets nothing.                         *)
(*                                                                         *)
(* Not here: a bookmark moves lastSyncRV past the last delivered event     *)
(* only when the global rv moved for writes the watch does not carry       *)
(* (another resource, or a filtered-out object); every write of this       *)
(* model is one the watch carries, so a bookmark's rv equals the last      *)
(* event's and a reflector that ignores it is not told apart here.  Also   *)
(* not here: the same faults over InformerAtomic.tla, a 429 ERROR ending   *)
(* an already open watch (client-go backs off and re-watches: WatchDrop's  *)
(* edge, to the spec), internal-error re-watches (off by default),         *)
(* watch-list, and informer-level resync: DeltaFIFO.tla has Resync, but a *)
(* Sync delta's update reaches only the listeners whose own resync period *)
(* is due (the shared informer's syncing listeners), so it needs          *)
(* per-listener periods and a clock that no informer spec has yet.        *)
(*                                                                         *)
(* Informer.tla is INSTANCEd (its actions keep their names in the graph),  *)
(* and its actions keep their meaning; each leaves the new variables alone, *)
(* except that a delivered event sets eventSeen, the end of a watch clears *)
(* eventSeen and a pending bookmark, and an event past a pending bookmark  *)
(* waits for it.  Informer.tla's own graphs are unchanged (this module     *)
(* adds, it does not edit).                                                *)
(*                                                                         *)
(* Model: MCInformerFaults (spec/models.json); its graph is replayed over   *)
(* the code by refimpl/tla/refine_informer.py (faults=True), in            *)
(* tests/test_spec_informer_faults_replay.py.                              *)
(***************************************************************************)
EXTENDS Naturals, Sequences

CONSTANTS
    Keys,
    MaxRV,
    MaxFaults,      \* list failures, 410s on an open watch, very short
                    \* watches and 429s on a watch request, together, in a
                    \* behaviour
    MaxBookmarks    \* bookmarks the server sends

VARIABLES
    server, history, compacted, reflector, lastSyncRV, store,      \* Informer.tla's
    notifications, view, lastRV, applied,
    queue, items, populated, initialPopulationCount, synced, popped, outbox,
    bookmark,       \* <<>> or <<rv>>: a BOOKMARK in the open watch's stream
    eventSeen,      \* the open watch delivered an event (or a bookmark)
    faults,         \* how many faults so far
    bookmarks       \* how many bookmarks so far

I == INSTANCE Informer

serverVars == <<server, history, compacted>>
handlerVars == <<notifications, view, lastRV>>
ownVars == <<queue, items, populated, initialPopulationCount, synced, popped, outbox>>
vars == <<serverVars, reflector, lastSyncRV, store, handlerVars, applied, ownVars>>
faultVars == <<bookmark, eventSeen, faults, bookmarks>>
budgetVars == <<faults, bookmarks>>
allVars == <<vars, faultVars>>

(* The end of a watch: its stream (and a bookmark in it) is gone.          *)
WatchEnds == bookmark' = <<>> /\ eventSeen' = FALSE

-----------------------------------------------------------------------------
(* Informer.tla's actions.                                                 *)
Write(k) == I!Write(k) /\ UNCHANGED faultVars
Compact == I!Compact /\ UNCHANGED faultVars
List == I!List /\ UNCHANGED faultVars
Connect == I!Connect /\ UNCHANGED faultVars
(* Events up to a pending bookmark's rv come before it, the rest after.    *)
WatchEvent ==
    /\ I!WatchEvent
    /\ IF bookmark = <<>> THEN TRUE ELSE lastSyncRV < bookmark[1]
    /\ eventSeen' = TRUE
    /\ UNCHANGED <<bookmark, budgetVars>>
WatchDrop == I!WatchDrop /\ WatchEnds /\ UNCHANGED budgetVars
Pop == I!Pop /\ UNCHANGED faultVars
StoreWrite == I!StoreWrite /\ UNCHANGED faultVars
Distribute == I!Distribute /\ UNCHANGED faultVars
Handle == I!Handle /\ UNCHANGED faultVars

-----------------------------------------------------------------------------
(* The faults.                                                             *)
ListFail ==
    /\ reflector = "list"
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ UNCHANGED <<vars, bookmark, eventSeen, bookmarks>>

WatchExpired ==
    /\ reflector = "watch"
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ reflector' = "list"
    /\ WatchEnds
    /\ UNCHANGED <<serverVars, lastSyncRV, store, handlerVars, applied, ownVars, bookmarks>>

WatchShort ==
    /\ reflector = "watch"
    /\ ~eventSeen
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ reflector' = "list"
    /\ WatchEnds
    /\ UNCHANGED <<serverVars, lastSyncRV, store, handlerVars, applied, ownVars, bookmarks>>

WatchRetry ==
    /\ reflector = "connect"
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ UNCHANGED <<vars, bookmark, eventSeen, bookmarks>>

BookmarkSend ==
    /\ reflector = "watch"
    /\ bookmark = <<>>
    /\ bookmarks < MaxBookmarks
    /\ bookmarks' = bookmarks + 1
    /\ bookmark' = <<Len(history)>>
    /\ UNCHANGED <<vars, eventSeen, faults>>

WatchBookmark ==
    /\ reflector = "watch"
    /\ bookmark # <<>>
    /\ lastSyncRV = bookmark[1]
    /\ lastSyncRV' = bookmark[1]
    /\ bookmark' = <<>>
    /\ eventSeen' = TRUE
    /\ UNCHANGED <<serverVars, reflector, store, handlerVars, applied, ownVars, budgetVars>>

-----------------------------------------------------------------------------
Init ==
    /\ I!Init
    /\ bookmark = <<>>
    /\ eventSeen = FALSE
    /\ faults = 0
    /\ bookmarks = 0

Next ==
    \/ \E k \in Keys : Write(k)
    \/ Compact
    \/ List \/ WatchEvent \/ WatchDrop \/ Connect
    \/ Pop \/ StoreWrite \/ Distribute \/ Handle
    \/ ListFail \/ WatchExpired \/ WatchShort \/ WatchRetry
    \/ BookmarkSend \/ WatchBookmark

(* Informer.tla's fairness, and the reflector reads a bookmark it reached. *)
Fairness ==
    /\ WF_allVars(List) /\ SF_allVars(WatchEvent) /\ WF_allVars(Connect)
    /\ WF_allVars(Pop) /\ WF_allVars(StoreWrite) /\ WF_allVars(Distribute)
    /\ WF_allVars(Handle) /\ SF_allVars(WatchBookmark)

Spec == Init /\ [][Next]_allVars /\ Fairness

-----------------------------------------------------------------------------
(* Informer.tla's properties (InformerCommon.tla's), and its TypeOK with   *)
(* the new variables.                                                      *)
(* Restated, not referred to: TLC names a violated action property by its  *)
(* innermost definition.                                                   *)
StoreBeforeHandler == [][I!HandedOverReflected]_<<notifications, store>>
PerKeyRVOrder == I!PerKeyRVOrder
StoreFromServer == I!StoreFromServer
Converges == I!Converges

TypeOK ==
    /\ I!TypeOK
    /\ bookmark \in Seq(0..Len(history)) /\ Len(bookmark) <= 1
    /\ IF bookmark = <<>> THEN TRUE ELSE reflector = "watch" /\ lastSyncRV <= bookmark[1]
    /\ eventSeen \in BOOLEAN /\ (eventSeen => reflector = "watch")
    /\ faults \in 0..MaxFaults
    /\ bookmarks \in 0..MaxBookmarks
=============================================================================
