--------------------- MODULE MCIndexerUpdateSkipsShared ---------------------
(* Mutation of Update: client-go 1.23's updateIndices (kubernetes PR      *)
(* #105234, fixed by #109137), each loop with its own one-value shortcut: *)
(* the old value is not removed if the new object has exactly that one    *)
(* value, a new value is not added if the old object had exactly that one *)
(* value.  Going from {x} to {x, y} removes the key from x and never puts *)
(* it back.  Expected: IndexMatchesItems violated (a missing entry).      *)
EXTENDS Indexer

MCKeys == {"a", "b"}
MCValues == {"x", "y"}
MCIndexOf == <<{}, {"x"}, {"x", "y"}, {"y"}>>

UpdateSkipsShared(k, n) ==
    LET old == ValuesOf(items[k])
        new == IndexOf[n]
        removed == {v \in old : new # {v}}
        added == {v \in new : old # {v}}
    IN /\ items[k] # Absent
       /\ items' = [items EXCEPT ![k] = n]
       /\ indices' = [v \in Values |->
                        (IF v \in removed THEN indices[v] \ {k} ELSE indices[v])
                        \cup (IF v \in added THEN {k} ELSE {})]

NextUpdateSkipsShared ==
    \/ \E k \in Keys, n \in Versions : Add(k, n) \/ UpdateSkipsShared(k, n)
    \/ \E k \in Keys : Delete(k)
    \/ \E s \in [Keys -> Versions \cup {Absent}] : Replace(s)

SpecUpdateSkipsShared == Init /\ [][NextUpdateSkipsShared]_vars
=============================================================================
