------------------------- MODULE MCControllerReplay -------------------------
(* Replay model: two keys, two workers, desired values {1}, two user      *)
(* writes (a create and a delete, or two creates).  Its whole state graph *)
(* is committed (graphs/ControllerReplay.json.gz) and replayed by         *)
(* tests/test_spec_controller_replay.py through                           *)
(* refimpl/tla/refine_controller.py.                                      *)
EXTENDS Controller

MCKeys == {"a", "b"}
MCWorkers == {"w1", "w2"}
MCNoItem == "-"
MCValues == {1}
MCMaxWrites == 2
=============================================================================
