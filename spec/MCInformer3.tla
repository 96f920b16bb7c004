---------------------------- MODULE MCInformer3 ----------------------------
(* Model: three keys, three server writes, the safety properties under    *)
(* SYMMETRY on the keys (docs/07, "Why these bounds").  The keys are model *)
(* values so that TLC can permute them; Informer.tla treats them alike:    *)
(* its only CHOOSEs (DeltaFIFO's SumLen and EnqEach) pick an element whose *)
(* result does not depend on which one, and every ordering of keys is an   *)
(* existential over all orders.  Converges is a liveness property, which   *)
(* TLC cannot check soundly under symmetry: MCInformerLarge checks it at   *)
(* three keys without (not by default), MCInformer at two keys.            *)
EXTENDS Informer, TLC

CONSTANTS k1, k2, k3

MCKeys == {k1, k2, k3}
MCMaxRV == 3
KeySymmetry == Permutations(MCKeys)
=============================================================================
