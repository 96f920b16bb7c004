-------------------------- MODULE AbstractWorkQueue --------------------------
(***************************************************************************)
(* What a work queue promises its workers, with no order and no queue:     *)
(* a set of keys that need processing, and at most one worker per key.    *)
(* A key marked while a worker holds it stays pending and is taken again   *)
(* after the worker lets go.  WorkQueue refines this module               *)
(* (proofs/WorkQueueRefinement.tla): pending <- dirty, holder <- holding,  *)
(* closed <- shuttingDown.                                                 *)
(***************************************************************************)
CONSTANTS Keys, Workers, NoItem

ASSUME NoItem \notin Keys

VARIABLES
    pending,    \* SUBSET Keys: keys that need processing and no one has taken
    holder,     \* [Workers -> Keys \cup {NoItem}]
    closed      \* BOOLEAN: no new keys are accepted

vars == <<pending, holder, closed>>

Held == {holder[w] : w \in Workers} \ {NoItem}

Init ==
    /\ pending = {}
    /\ holder = [w \in Workers |-> NoItem]
    /\ closed = FALSE

Mark(x) ==
    /\ ~closed
    /\ x \notin pending
    /\ pending' = pending \cup {x}
    /\ UNCHANGED <<holder, closed>>

(* Any pending key nobody holds, in any order.                             *)
Take(w, x) ==
    /\ holder[w] = NoItem
    /\ x \in pending
    /\ x \notin Held
    /\ pending' = pending \ {x}
    /\ holder' = [holder EXCEPT ![w] = x]
    /\ UNCHANGED closed

Release(w) ==
    /\ holder[w] # NoItem
    /\ holder' = [holder EXCEPT ![w] = NoItem]
    /\ UNCHANGED <<pending, closed>>

Close ==
    /\ closed' = TRUE
    /\ UNCHANGED <<pending, holder>>

Next ==
    \/ \E x \in Keys : Mark(x)
    \/ \E w \in Workers : Release(w) \/ \E x \in Keys : Take(w, x)
    \/ Close

Spec == Init /\ [][Next]_vars

TypeOK ==
    /\ pending \subseteq Keys
    /\ holder \in [Workers -> Keys \cup {NoItem}]
    /\ closed \in BOOLEAN

OneHolderPerKey ==
    \A v, w \in Workers : v # w /\ holder[v] # NoItem => holder[v] # holder[w]

(* Every pending key is eventually taken (the concrete spec's fairness     *)
(* must deliver this; the abstract one states it, it does not assume it).  *)
Progress == \A x \in Keys : (x \in pending) ~> (x \notin pending)
=============================================================================
