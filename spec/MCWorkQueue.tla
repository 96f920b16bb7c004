---------------------------- MODULE MCWorkQueue ----------------------------
(* Model: two keys, two workers.  Binds WorkQueue's constants.             *)
EXTENDS WorkQueue

MCKeys == {"a", "b"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"
=============================================================================
