------------------ MODULE MCWorkQueueDrainWaitsForShutDown ------------------
(* Mutation of ONE action of WorkQueue.tla: the draining caller returns  *)
(* only once nothing is in flight AND a plain ShutDown cut the drain     *)
(* short, which nobody has to call. Expected: DrainTerminates violated.  *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

DrainWaitsForShutDown ==
    /\ drainer = "waiting"
    /\ processing = {} /\ ~drain
    /\ drainer' = "returned"
    /\ UNCHANGED <<queueVars, holding, stopped, waiting>>

NextDrainWaitsForShutDown ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ Done(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainWaitsForShutDown

FairnessDrainWaitsForShutDown ==
    /\ \A w \in Workers : WF_vars(Get(w)) /\ WF_vars(Done(w)) /\ WF_vars(WorkerExit(w))
    /\ \A x \in Keys : WF_vars(Ready(x))
    /\ WF_vars(DrainWaitsForShutDown)

SpecDrainWaitsForShutDown == Init /\ [][NextDrainWaitsForShutDown]_vars /\ FairnessDrainWaitsForShutDown
=============================================================================
