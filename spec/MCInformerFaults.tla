------------------------- MODULE MCInformerFaults -------------------------
(* Model of InformerFaults.tla: two keys, two server writes, one fault (a *)
(* list failure, a 410 on an open watch, a very short watch or a 429 on a  *)
(* watch request) and one bookmark in a behaviour.  Its graph is replayed  *)
(* over the code.                                                          *)
EXTENDS InformerFaults

MCKeys == {"a", "b"}
MCMaxRV == 2
MCMaxFaults == 1
MCMaxBookmarks == 1
=============================================================================
