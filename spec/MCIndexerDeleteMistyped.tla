------------------------- MODULE MCIndexerDeleteMistyped -------------------------
(* Mutation of Delete: the key is marked with a value outside its type.  *)
(* Expected: TypeOK violated (shows TypeOK can fail).                     *)
EXTENDS Indexer

MCKeys == {"a", "b"}
MCValues == {"x", "y"}
MCIndexOf == <<{}, {"x"}, {"x", "y"}, {"y"}>>

DeleteMistyped(k) ==
    /\ items[k] # Absent
    /\ items' = [items EXCEPT ![k] = Len(IndexOf) + 1]
    /\ indices' = Refile(indices, k, ValuesOf(items[k]), {})

NextDeleteMistyped ==
    \/ \E k \in Keys, n \in Versions : Add(k, n) \/ Update(k, n)
    \/ \E k \in Keys : DeleteMistyped(k)
    \/ \E s \in [Keys -> Versions \cup {Absent}] : Replace(s)

SpecDeleteMistyped == Init /\ [][NextDeleteMistyped]_vars
=============================================================================
