------------------------- MODULE MCIndexerUpdateStale -------------------------
(* Mutation of Update: the key is taken out only of the old values the    *)
(* new object still has, so it stays filed under every value the object  *)
(* lost.  Expected: IndexMatchesItems violated (a stale entry).          *)
EXTENDS Indexer

MCKeys == {"a", "b"}
MCValues == {"x", "y"}
MCIndexOf == <<{}, {"x"}, {"x", "y"}, {"y"}>>

UpdateStale(k, n) ==
    /\ items[k] # Absent
    /\ items' = [items EXCEPT ![k] = n]
    /\ indices' = Refile(indices, k, ValuesOf(items[k]) \cap IndexOf[n], IndexOf[n])

NextUpdateStale ==
    \/ \E k \in Keys, n \in Versions : Add(k, n) \/ UpdateStale(k, n)
    \/ \E k \in Keys : Delete(k)
    \/ \E s \in [Keys -> Versions \cup {Absent}] : Replace(s)

SpecUpdateStale == Init /\ [][NextUpdateStale]_vars
=============================================================================
