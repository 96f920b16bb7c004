------------------------- MODULE MCInformerAtomic3 -------------------------
(* Model: three keys, three server writes, atomic RealFIFO, the safety    *)
(* properties under SYMMETRY on the keys (docs/07, "Why these bounds").    *)
(* The keys are model values so that TLC can permute them.  RealFIFO.tla's *)
(* CHOOSEs all pick the one element that fits (a key's first or last log   *)
(* index, the keys in first-seen order, a batch's length), never one of    *)
(* several keys; every other ordering of keys is an existential over all   *)
(* orders.  Converges is a liveness property, which TLC cannot check       *)
(* soundly under symmetry: MCInformerAtomicLarge checks it at three keys   *)
(* without (not by default), MCInformerAtomic at two keys.                 *)
EXTENDS InformerAtomic, TLC

CONSTANTS k1, k2, k3

MCKeys == {k1, k2, k3}
MCMaxRV == 3
KeySymmetry == Permutations(MCKeys)
=============================================================================
