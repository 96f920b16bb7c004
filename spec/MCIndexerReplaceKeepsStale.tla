------------------------- MODULE MCIndexerReplaceKeepsStale -------------------------
(* Mutation of Replace: the new index is added to the old one instead of  *)
(* replacing it, so keys the relist dropped or moved stay filed.         *)
(* Expected: IndexMatchesItems violated.                                 *)
EXTENDS Indexer

MCKeys == {"a", "b"}
MCValues == {"x", "y"}
MCIndexOf == <<{}, {"x"}, {"x", "y"}, {"y"}>>

ReplaceKeepsStale(s) ==
    /\ items' = s
    /\ indices' = [v \in Values |-> indices[v] \cup Built(s)[v]]

NextReplaceKeepsStale ==
    \/ \E k \in Keys, n \in Versions : Add(k, n) \/ Update(k, n)
    \/ \E k \in Keys : Delete(k)
    \/ \E s \in [Keys -> Versions \cup {Absent}] : ReplaceKeepsStale(s)

SpecReplaceKeepsStale == Init /\ [][NextReplaceKeepsStale]_vars
=============================================================================
