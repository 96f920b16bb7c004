------------------------------ MODULE MCIndexer ------------------------------
(* Model: two keys; four versions filed under no value, one, two, and the *)
(* other one, so an update can grow, shrink or swap an object's values.  *)
EXTENDS Indexer

MCKeys == {"a", "b"}
MCValues == {"x", "y"}
MCIndexOf == <<{}, {"x"}, {"x", "y"}, {"y"}>>
=============================================================================
