------------------------- MODULE MCEdgeVsLevelLevel -------------------------
(* level-triggered: expected to pass.   *)
(* Three user changes, at most one lost or duplicated notification.        *)
EXTENDS EdgeVsLevel

MCMaxChanges == 3
MCMaxFaults == 1
MCLevel == TRUE
=============================================================================
