--------------------- MODULE MCWorkQueueDrainNoShutDown ---------------------
(* Mutation of ONE action of WorkQueue.tla: ShutDownWithDrain sets the   *)
(* drain flag but not shuttingDown. Expected: DrainImpliesShuttingDown   *)
(* violated.                                                             *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

DrainNoShutDown ==
    /\ drainer = "idle"
    /\ drain' = TRUE
    /\ waiting' = {}
    /\ drainer' = "waiting"
    /\ UNCHANGED <<queue, dirty, processing, shuttingDown, holding, stopped>>

NextDrainNoShutDown ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ Done(w)
    \/ ShutDown \/ DrainNoShutDown \/ DrainReturn

FairnessDrainNoShutDown ==
    /\ \A w \in Workers : WF_vars(Get(w)) /\ WF_vars(Done(w)) /\ WF_vars(WorkerExit(w))
    /\ \A x \in Keys : WF_vars(Ready(x))
    /\ WF_vars(DrainReturn)

SpecDrainNoShutDown == Init /\ [][NextDrainNoShutDown]_vars /\ FairnessDrainNoShutDown
=============================================================================
