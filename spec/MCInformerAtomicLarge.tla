---------------------- MODULE MCInformerAtomicLarge ----------------------
(* A larger model of InformerAtomic.tla: three keys, three server writes, *)
(* with MCInformerAtomic.cfg, no symmetry, so Converges too               *)
(* (MCInformerAtomic3 checks the safety properties under SYMMETRY).        *)
(* Checked by default.                                                     *)
EXTENDS InformerAtomic

MCKeys == {"a", "b", "c"}
MCMaxRV == 3
=============================================================================
