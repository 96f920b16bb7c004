---------------------- MODULE MCInformerAtomicLarge ----------------------
(* A larger model of InformerAtomic.tla: three keys, three server writes, *)
(* with MCInformerAtomic.cfg.  Checked once, not by default (`refimpl     *)
(* spec check InformerAtomicLarge`); spec/models.json records its figures. *)
EXTENDS InformerAtomic

MCKeys == {"a", "b", "c"}
MCMaxRV == 3
=============================================================================
