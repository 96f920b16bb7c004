------------------------- MODULE WorkQueueRefinement -------------------------
(***************************************************************************)
(* WorkQueue refines AbstractWorkQueue under the mapping                   *)
(*     pending <- dirty,  holder <- holding,  closed <- shuttingDown.      *)
(* Every WorkQueue step is an AbstractWorkQueue step or a stutter of the   *)
(* mapped variables (AbstractSpec), and WorkQueue's fairness delivers the  *)
(* abstract Progress property.  The queue's order, the in-flight re-queue  *)
(* in Done, the waiting room and the drain are implementation detail.     *)
(***************************************************************************)
EXTENDS WorkQueue

Abstract == INSTANCE AbstractWorkQueue
    WITH pending <- dirty, holder <- holding, closed <- shuttingDown

AbstractSpec == Abstract!Spec
AbstractProgress == Abstract!Progress
AbstractOneHolderPerKey == Abstract!OneHolderPerKey
AbstractTypeOK == Abstract!TypeOK
=============================================================================
