--------------------------- MODULE MCWorkQueue3 ---------------------------
(* Model: three keys, three workers, the invariants under SYMMETRY on the  *)
(* keys and on the workers (docs/07, "Why these bounds").  Both are model  *)
(* values so that TLC can permute them; WorkQueue.tla chooses no key and  *)
(* no worker and names none.  The liveness properties are left to          *)
(* MCWorkQueue: their fairness is per key and per worker, and TLC cannot   *)
(* check liveness soundly under symmetry.                                  *)
EXTENDS WorkQueue, TLC

CONSTANTS k1, k2, k3, w1, w2, w3

MCKeys == {k1, k2, k3}
MCWorkers == {w1, w2, w3}
MCNoItem == "-"
KeyWorkerSymmetry == Permutations(MCKeys) \cup Permutations(MCWorkers)
=============================================================================
