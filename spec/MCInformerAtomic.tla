------------------------- MODULE MCInformerAtomic -------------------------
(* Model: two keys, three server writes, atomic RealFIFO.                  *)
EXTENDS InformerAtomic

MCKeys == {"a", "b"}
MCMaxRV == 3
=============================================================================
