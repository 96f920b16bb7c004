---------------------------- MODULE MCController ----------------------------
(* Model: two keys, two workers, desired values {1, 2}, two user writes.   *)
EXTENDS Controller

MCKeys == {"a", "b"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"
MCValues == {1, 2}
MCMaxWrites == 2
=============================================================================
