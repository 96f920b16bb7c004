---------------------- MODULE MCInformerAtomicLonger ----------------------
(* A longer model of InformerAtomic.tla: two keys, four server writes     *)
(* (room for more drops, compactions and relists in one behaviour), with  *)
(* MCInformerAtomic.cfg.  Checked once, not by default (`refimpl spec     *)
(* check InformerAtomicLonger`); spec/models.json records its figures.     *)
EXTENDS InformerAtomic

MCKeys == {"a", "b"}
MCMaxRV == 4
=============================================================================
