------------------------- MODULE MCEdgeVsLevelEdge -------------------------
(* edge-triggered: expected to violate Converges.   *)
(* Three user changes, at most one lost or duplicated notification.        *)
EXTENDS EdgeVsLevel

MCMaxChanges == 3
MCMaxFaults == 1
MCLevel == FALSE
=============================================================================
