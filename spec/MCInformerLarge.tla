------------------------- MODULE MCInformerLarge -------------------------
(* A larger model of Informer.tla: three keys, three server writes, with  *)
(* MCInformer.cfg.  Checked once, not by default (`refimpl spec check     *)
(* InformerLarge`); spec/models.json records its figures.                  *)
EXTENDS Informer

MCKeys == {"a", "b", "c"}
MCMaxRV == 3
=============================================================================
