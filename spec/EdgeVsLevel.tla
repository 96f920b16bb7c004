------------------------------ MODULE EdgeVsLevel ------------------------------
(***************************************************************************)
(* Why controllers are level-triggered.  A user keeps changing a counter; *)
(* an informer-like cache follows it and sends notifications that carry   *)
(* the change (old, new); notifications can be lost or duplicated (at     *)
(* most MaxFaults times), and a periodic resync sends a no-change update.  *)
(*                                                                         *)
(* An edge-triggered handler (Level = FALSE) applies the change it is      *)
(* told about: one lost or duplicated notification and the world is off   *)
(* for good -- the resync carries no change to apply.  A level-triggered   *)
(* handler (Level = TRUE) ignores the payload and makes the world match   *)
(* the cache it reads now: any later notification, including a resync,    *)
(* repairs it.  Converges holds for the level-triggered handler and is    *)
(* violated for the edge-triggered one (an expected-failure model).        *)
(***************************************************************************)
EXTENDS Integers, Sequences

CONSTANTS
    MaxChanges, \* user changes, in all
    MaxFaults,  \* lost or duplicated notifications, in all
    Level       \* BOOLEAN: the handler reads the cache (TRUE) or applies deltas

VARIABLES desired, cache, channel, actual, changes, faults

vars == <<desired, cache, channel, actual, changes, faults>>

UserChange ==
    /\ changes < MaxChanges
    /\ desired' = desired + 1
    /\ changes' = changes + 1
    /\ UNCHANGED <<cache, channel, actual, faults>>

(* The cache catches up and notifies (old, new).                           *)
Sync ==
    /\ cache # desired
    /\ cache' = desired
    /\ channel' = Append(channel, [old |-> cache, new |-> desired])
    /\ UNCHANGED <<desired, actual, changes, faults>>

(* The periodic resync: an update without change, when nothing is pending. *)
Resync ==
    /\ channel = <<>>
    /\ channel' = <<[old |-> cache, new |-> cache]>>
    /\ UNCHANGED <<desired, cache, actual, changes, faults>>

Lose ==
    /\ faults < MaxFaults
    /\ channel # <<>>
    /\ channel' = Tail(channel)
    /\ faults' = faults + 1
    /\ UNCHANGED <<desired, cache, actual, changes>>

Duplicate ==
    /\ faults < MaxFaults
    /\ channel # <<>>
    /\ channel' = <<Head(channel)>> \o channel
    /\ faults' = faults + 1
    /\ UNCHANGED <<desired, cache, actual, changes>>

Handle ==
    /\ channel # <<>>
    /\ LET n == Head(channel) IN
         actual' = IF Level THEN cache ELSE actual + (n.new - n.old)
    /\ channel' = Tail(channel)
    /\ UNCHANGED <<desired, cache, changes, faults>>

Init ==
    /\ desired = 0 /\ cache = 0 /\ actual = 0
    /\ channel = <<>> /\ changes = 0 /\ faults = 0

Next == UserChange \/ Sync \/ Resync \/ Lose \/ Duplicate \/ Handle

Spec == Init /\ [][Next]_vars /\ WF_vars(Sync) /\ WF_vars(Resync) /\ WF_vars(Handle)

(* What each variable holds.  The edge-triggered handler's world can drift *)
(* off by any amount, so actual is only an integer.                        *)
TypeOK ==
    /\ desired \in 0..MaxChanges /\ cache \in 0..MaxChanges /\ actual \in Int
    /\ \A i \in 1..Len(channel) :
          channel[i] \in [old : 0..MaxChanges, new : 0..MaxChanges]
    /\ changes \in 0..MaxChanges /\ faults \in 0..MaxFaults

(* Once the user stops, the world matches what was asked.                  *)
Converges == <>[](actual = desired)
=============================================================================
