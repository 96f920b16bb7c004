---------------------------- MODULE MCInformer ----------------------------
(* Model: two keys, three server writes.                                   *)
EXTENDS Informer

MCKeys == {"a", "b"}
MCMaxRV == 3
=============================================================================
