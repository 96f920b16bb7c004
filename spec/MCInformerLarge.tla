------------------------- MODULE MCInformerLarge -------------------------
(* A larger model of Informer.tla: three keys, three server writes, with  *)
(* MCInformer.cfg, no symmetry, so Converges too (MCInformer3 checks the   *)
(* safety properties under SYMMETRY).  Checked by default.                 *)
EXTENDS Informer

MCKeys == {"a", "b", "c"}
MCMaxRV == 3
=============================================================================
