------------------- MODULE MCWorkQueueDrainReturnMistyped -------------------
(* Mutation of ONE action of WorkQueue.tla: the draining caller's return *)
(* records a value outside its type. Expected: TypeOK violated (shows    *)
(* TypeOK can fail).                                                     *)
EXTENDS WorkQueue

MCKeys == {"a"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"

DrainReturnMistyped ==
    /\ drainer = "waiting"
    /\ processing = {} \/ ~drain
    /\ drainer' = "done"
    /\ UNCHANGED <<queueVars, holding, stopped, waiting>>

NextDrainReturnMistyped ==
    \/ \E x \in Keys : Add(x) \/ AddAfter(x) \/ Ready(x)
    \/ \E w \in Workers : Get(w) \/ WorkerExit(w) \/ Done(w)
    \/ ShutDown \/ ShutDownWithDrain \/ DrainReturnMistyped

FairnessDrainReturnMistyped ==
    /\ \A w \in Workers : WF_vars(Get(w)) /\ WF_vars(Done(w)) /\ WF_vars(WorkerExit(w))
    /\ \A x \in Keys : WF_vars(Ready(x))
    /\ WF_vars(DrainReturnMistyped)

SpecDrainReturnMistyped == Init /\ [][NextDrainReturnMistyped]_vars /\ FairnessDrainReturnMistyped
=============================================================================
