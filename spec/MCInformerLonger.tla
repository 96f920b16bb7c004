------------------------- MODULE MCInformerLonger -------------------------
(* A longer model of Informer.tla: two keys, four server writes (room for *)
(* more drops, compactions and relists in one behaviour), with            *)
(* MCInformer.cfg.  Checked once, not by default (`refimpl spec check     *)
(* InformerLonger`); spec/models.json records its figures.                 *)
EXTENDS Informer

MCKeys == {"a", "b"}
MCMaxRV == 4
=============================================================================
