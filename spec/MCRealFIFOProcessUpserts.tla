---------------------- MODULE MCRealFIFOProcessUpserts ----------------------
(* Mutation of ONE action of RealFIFOClose.tla (atomic): Process applies *)
(* a ReplacedAll entry as an upsert of the listed objects and removes no *)
(* stored key the list lacks. Expected: ReplacedAllSetsStoreKeys         *)
(* violated.                                                             *)
EXTENDS RealFIFOClose

MCKeys == {"a"}
MCRVs == {1}
MCMaxQueued == 1
MCAtomic == TRUE

(* A ReplacedAll applied as an upsert: listed objects written, unlisted  *)
(* stored keys kept.                                                      *)
UpsertTo(s, d) ==
    IF d.type = "ReplacedAll"
    THEN [k \in Keys |-> IF k \in F!Listed(d.obj)
                         THEN d.obj[CHOOSE i \in DOMAIN d.obj : d.obj[i].key = k].rv
                         ELSE s[k]]
    ELSE F!ApplyTo(s, d)

RECURSIVE UpsertAll(_, _)
UpsertAll(s, ds) == IF ds = <<>> THEN s ELSE UpsertAll(UpsertTo(s, Head(ds)), Tail(ds))

ProcessUpserts ==
    /\ processing # <<>>
    /\ store' = UpsertAll(store, F!TakenDeltas)
    /\ processing' = <<>>
    /\ F!FinishedN(Len(processing))
    /\ UNCHANGED <<log, populated, closeVars>>

NextProcessUpserts ==
    \/ \E o \in Objs : Add(o) \/ Update(o) \/ Delete(o)
    \/ \E l \in Lists : Replace(l)
    \/ Resync
    \/ Pop \/ PopBatch \/ Take \/ TakeBatch \/ ProcessUpserts
    \/ Wait \/ Close \/ Exit

SpecProcessUpserts == Init /\ [][NextProcessUpserts]_vars
=============================================================================
