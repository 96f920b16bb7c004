------------------------------ MODULE Indexer ------------------------------
(***************************************************************************)
(* client-go's indexed store (tools/cache/thread_safe_store.go:           *)
(* threadSafeMap with one index function, updateIndices / storeIndex).    *)
(*                                                                         *)
(* `items` maps each key to the version of its object, 0 when the key is  *)
(* absent.  The object's version fixes the set of values the index        *)
(* function files it under: IndexOf[version], which may be empty, one     *)
(* value or several.  `indices` maps each value to the keys filed under   *)
(* it.  Add, Update and Delete move one key's entries incrementally, from *)
(* the old object's values to the new one's, as the code does; Replace    *)
(* swaps in a whole new store and rebuilds the index from it.  The        *)
(* invariant IDX-1 (docs/invariants.md) is IndexMatchesItems.             *)
(*                                                                         *)
(* Refined by refimpl/cache/store.py (ThreadSafeMap) through              *)
(* refimpl/tla/refine_indexer.py: `items` is the map's items (absent keys *)
(* 0), `indices[v]` the keys of its one index under v (the code drops a   *)
(* value whose set empties, client-go #84970: the mapping reads an absent *)
(* value as {} and refuses a code state that holds an empty set).         *)
(*                                                                         *)
(* Left out: several index functions (each is maintained on its own, the  *)
(* same way), AddIndexers after items exist, the resource version, index  *)
(* functions that fail, and the reads (ByIndex, Index, IndexKeys): the    *)
(* replay reads the index back whole in every state instead.  The spec   *)
(* walk (refimpl/conformance/walks/indexer_mapping.py) drives it over the  *)
(* protocol's store; no trace module covers it yet (docs/07 says what one *)
(* would take).                                                           *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences

CONSTANTS
    Keys,       \* the object keys
    Values,     \* the index values the index function can return
    IndexOf     \* a sequence: IndexOf[n] is the value set of version n

Versions == DOMAIN IndexOf
Absent == 0

ASSUME \A n \in Versions : IndexOf[n] \subseteq Values

VARIABLES
    items,      \* [Keys -> Versions \cup {Absent}]
    indices     \* [Values -> SUBSET Keys]

vars == <<items, indices>>

-----------------------------------------------------------------------------
TypeOK ==
    /\ items \in [Keys -> Versions \cup {Absent}]
    /\ indices \in [Values -> SUBSET Keys]

(* The values the stored object of version n is filed under.              *)
ValuesOf(n) == IF n = Absent THEN {} ELSE IndexOf[n]

(* Move key k's entries from the values `old` to the values `new`: taken  *)
(* out of each old value, put in each new one (updateIndices).            *)
Refile(idx, k, old, new) ==
    [v \in Values |-> IF v \in new THEN idx[v] \cup {k}
                      ELSE IF v \in old THEN idx[v] \ {k}
                      ELSE idx[v]]

(* The index built from scratch over a whole store (Replace).             *)
Built(its) == [v \in Values |-> {k \in Keys : v \in ValuesOf(its[k])}]

Init ==
    /\ items = [k \in Keys |-> Absent]
    /\ indices = [v \in Values |-> {}]

(* Add and Update are one call in the code; the spec tells them apart by  *)
(* whether the key was stored.                                            *)
Add(k, n) ==
    /\ items[k] = Absent
    /\ items' = [items EXCEPT ![k] = n]
    /\ indices' = Refile(indices, k, {}, IndexOf[n])

Update(k, n) ==
    /\ items[k] # Absent
    /\ items' = [items EXCEPT ![k] = n]
    /\ indices' = Refile(indices, k, ValuesOf(items[k]), IndexOf[n])

Delete(k) ==
    /\ items[k] # Absent
    /\ items' = [items EXCEPT ![k] = Absent]
    /\ indices' = Refile(indices, k, ValuesOf(items[k]), {})

Replace(s) ==
    /\ items' = s
    /\ indices' = Built(s)

Next ==
    \/ \E k \in Keys, n \in Versions : Add(k, n) \/ Update(k, n)
    \/ \E k \in Keys : Delete(k)
    \/ \E s \in [Keys -> Versions \cup {Absent}] : Replace(s)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* IDX-1: a key is filed under a value exactly when it is stored and its  *)
(* object's value set holds that value.  Checked against the items, not   *)
(* against Built: no action's own definition implies it.                  *)
IndexMatchesItems ==
    \A v \in Values, k \in Keys :
        k \in indices[v] <=> (items[k] # Absent /\ v \in IndexOf[items[k]])
=============================================================================
