"""Reports: the numbered table of a trace, the failure report, saved traces.

Stateless functions over :class:`~refimpl.conformance.search.config.Step` lists. Objects are
shown compactly (``ns/name@rv{labels}``, ``DFSU(key, obj)``); the raw request lines are
printed too, so a failure can be replayed by hand against a fresh adapter.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from refimpl.conformance.protocol import PROTOCOL_VERSION
from refimpl.conformance.reference.dispatch import ReferenceDriver
from refimpl.conformance.search.compare import agree
from refimpl.conformance.search.config import Config, Failure, Step
from refimpl.conformance.search.history import INPUTS, Inputs

__all__ = [
    "SavedTrace",
    "compact",
    "delta_difference",
    "failing_step",
    "finding_header",
    "format_failure",
    "format_table",
    "load_inputs",
    "load_traces",
    "save_findings",
    "show_request",
    "show_response",
]


def compact(value: Any) -> str:
    """A short rendering for tables: objects as ``ns/name@rv{labels}``, tombstones as
    ``DFSU(key, obj)``, get/pop answers without their JSON scaffolding."""
    if isinstance(value, dict):
        if {"name", "rv"} <= value.keys() and isinstance(value.get("name"), str):
            ns = value.get("namespace") or ""
            labels = value.get("labels") or {}
            shown = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
            key = f"{ns}/{value['name']}" if ns else value["name"]
            return f"{key}@{value['rv']}" + (f"{{{shown}}}" if shown else "")
        if "tombstone" in value and isinstance(value["tombstone"], dict):
            t = value["tombstone"]
            return f"DFSU({t.get('key')}, {compact(t.get('obj'))})"
        if "type" in value and "object" in value and len(value) == 2:
            return f"{value['type']} {compact(value['object'])}"
        if value.get("kind") == "item" and "deltas" in value:
            initial = " (initial)" if value.get("initial") else ""
            return compact(value["deltas"]) + initial
        if value.get("kind") == "item" and "item" in value:
            return f"item {json.dumps(value['item'])}"
        if set(value) == {"kind"}:
            return str(value["kind"])
        inner = ", ".join(f"{k}: {compact(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ", ".join(compact(v) for v in value) + "]"
    return json.dumps(value)


def show_response(response: dict[str, Any] | None) -> str:
    if response is None:
        return "(no answer)"
    if "error" in response:
        err = response["error"]
        return f"error {err.get('kind')}: {str(err.get('message'))[:60]}"
    return compact(response.get("result"))


def show_request(request: dict[str, Any]) -> str:
    op = request.get("op")
    if op == "call":
        args = request.get("args") or {}
        shown = " ".join(compact(v) for v in args.values())
        return f"{request.get('method')} {shown}".rstrip()
    if op == "create":
        options = request.get("options") or {}
        extra = " " + json.dumps(options, separators=(",", ":")) if options else ""
        return f"create {request.get('component')}{extra}"
    if op == "advance":
        return f"advance {request.get('seconds')}"
    return json.dumps(request)


HINTS = {
    "get_nowait": (
        "client-go's Get hands out the head of the queue. An item is queued by the first "
        "Add since it was last handed out, or by Done if it was re-added while in flight "
        "(Add never queues an in-flight item); queued items are still handed out after "
        "ShutDown, and only an empty shut-down queue answers shutdown."
    ),
    "len": "Len counts queued items only: not in-flight ones, not ones re-added in flight.",
    "num_requeues": "NumRequeues is the limiter's failure count since the item's last Forget.",
    "when": (
        "When: exponential = min(base*2^n, max) for the n-th call since Forget; fast_slow = "
        "fast for the first max_fast calls; bucket = token-bucket reservation; max_of calls "
        "every limiter and takes the longest; with_max_wait caps the delay."
    ),
    "shutting_down": "ShuttingDown becomes true at ShutDown and stays true.",
}


_STORY_ERRORS = {
    "expired": "410 Gone",
    "internal": "500",
    "too_many_requests": "429",
    "clean": "closed cleanly",
    "reset": "connection reset",
}


def _story_calls(response: dict[str, Any] | None) -> str:
    result = response.get("result") if response else None
    calls = result.get("calls") if isinstance(result, dict) else None
    if not isinstance(calls, list) or not calls:
        return ""
    shown = []
    for c in calls:
        if not isinstance(c, dict):
            continue
        what = f"{c.get('handler')}.on_{c.get('kind')}({c.get('key')}@{c.get('rv')})"
        if c.get("tombstone"):
            what = what[:-1] + " tombstone)"
        shown.append(what)
    return " → " + ", ".join(shown)


def informer_story(steps: Sequence[Step]) -> str:
    """An informer trace told as the server's side of the conversation, with the
    handler calls each step caused: "list → [a@2] at rv 2 → h0.on_add(a@2) · ..."."""
    parts: list[str] = []
    for step in steps:
        request = step.request
        args = request.get("args") or {}
        method = request.get("method")
        if request.get("op") == "advance":
            parts.append(f"{request.get('seconds')} s pass")
            continue
        if request.get("op") != "call":
            continue
        if method == "add_handler":
            text = f"handler {args.get('name')} added" + (" (raises)" if args.get("raises") else "")
        elif method == "list_reply":
            text = f"list → {compact(args.get('objects'))} at rv {args.get('rv')}"
        elif method == "list_error":
            text = f"list fails ({_STORY_ERRORS.get(str(args.get('reason')))})"
        elif method == "watch_open":
            text = "watch opens"
        elif method == "watch_error":
            text = f"watch request fails ({_STORY_ERRORS.get(str(args.get('reason')))})"
        elif method == "watch_event":
            text = f"{args.get('type')} {compact(args.get('object'))}"
        elif method == "watch_end":
            text = f"watch ends ({_STORY_ERRORS.get(str(args.get('how')))})"
        elif method == "state":
            text = ""
        else:
            text = str(method)
        text += _story_calls(step.adapter)
        if text:
            parts.append(text.lstrip(" →"))
    return " · ".join(parts)


def reference_states(steps: Sequence[Step]) -> list[str]:
    """The reference's internal state before each step, replayed with the same steering."""
    ref = ReferenceDriver(steered=True)
    states: list[str] = []
    for step in steps:
        instance = ref.instances.get(str(step.request.get("instance", "")))
        states.append(instance.describe() if instance is not None else "")
        ref.handle({"id": 0, **step.request}, step.adapter)
    return states


def trace_lines(steps: Sequence[Step]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [{"id": 0, "op": "hello", "protocol": PROTOCOL_VERSION}]
    lines += [{"id": i, **s.request} for i, s in enumerate(steps, start=1)]
    return lines


def format_table(steps: Sequence[Step]) -> list[str]:
    """The numbered steps with both sides' answers, the first difference marked."""
    lines: list[str] = []
    rows = [("#", "request", "reference", "adapter")]
    for n, step in enumerate(steps, start=1):
        differs = (
            step.reference is not None
            and step.adapter is not None
            and not agree(step.request, step.reference, step.adapter)
        )
        reference = step.reference
        if (
            reference is not None
            and step.adapter is not None
            and step.request.get("method") == "pop_nowait"
            and isinstance(step.adapter.get("result"), dict)
            and "initial" not in step.adapter["result"]
            and isinstance(reference.get("result"), dict)
        ):  # not compared, so not shown either
            result = {k: v for k, v in reference["result"].items() if k != "initial"}
            reference = {**reference, "result": result}
        rows.append(
            (
                str(n),
                show_request(step.request),
                show_response(reference)
                if reference is not None or step.adapter is None
                else "(not compared)",
                show_response(step.adapter) + ("   <== differs" if differs else ""),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        lines.append(
            "  "
            + "  ".join(
                [row[0].rjust(widths[0]), row[1].ljust(widths[1]), row[2].ljust(widths[2]), row[3]]
            ).rstrip()
        )
    return lines


def _filled(text: str) -> str:
    return textwrap.fill(text, 92, initial_indent="  ", subsequent_indent="    ")


#: Longest rendering of an answer shown whole in :func:`failing_step`; a longer one is
#: cut down to the fields where the two sides differ.
WHOLE_ANSWER = 100


def _answers(reference: dict[str, Any], adapter: dict[str, Any]) -> tuple[str, str]:
    """Both answers as :func:`show_response` renders them, or, when either is long and
    both are results with fields, only the fields whose values differ."""
    mine, theirs = show_response(reference), show_response(adapter)
    if len(mine) <= WHOLE_ANSWER and len(theirs) <= WHOLE_ANSWER:
        return mine, theirs
    ours, peer = reference.get("result"), adapter.get("result")
    if not isinstance(ours, dict) or not isinstance(peer, dict):
        return mine, theirs
    differ = [k for k in dict.fromkeys([*ours, *peer]) if ours.get(k) != peer.get(k)]
    if not differ:
        return mine, theirs
    return (
        compact({k: ours[k] for k in differ if k in ours}),
        compact({k: peer[k] for k in differ if k in peer}),
    )


def _deltas(response: dict[str, Any] | None) -> list[str] | None:
    """The deltas a pop answer handed out, each as ``Type obj`` (None: not a pop
    answer); an empty or closed FIFO handed out none."""
    result = response.get("result") if response else None
    if not isinstance(result, dict) or "kind" not in result:
        return None
    deltas = result.get("deltas", [])
    return [compact(d) for d in deltas] if isinstance(deltas, list) else None


def delta_difference(reference: dict[str, Any] | None, adapter: dict[str, Any] | None) -> str:
    """For a FIFO pop: the deltas the adapter's pop has and the reference's has not, and
    those it lacks (as multisets; "" when the answers are not pops or hand out the
    same deltas in the same order)."""
    ours, peer = _deltas(reference), _deltas(adapter)
    if ours is None or peer is None or ours == peer:
        return ""
    extra = list((Counter(peer) - Counter(ours)).elements())
    missing = list((Counter(ours) - Counter(peer)).elements())
    parts = []
    if extra:
        parts.append(f"has an extra {', '.join(extra)}")
    if missing:
        parts.append(f"is missing {', '.join(missing)}")
    if not parts:
        parts.append("has the same deltas in another order")
    return "the adapter's pop " + " and ".join(parts)


def failing_step(failure: Failure) -> list[str]:
    """What each side answered at the failing step (the reference's answer only when it
    is compared) and, for a FIFO pop, the extra or missing deltas. (What client-go does
    with the trace is the report's own line, under the signature.)"""
    lines: list[str] = []
    last = failure.steps[-1] if failure.steps else None
    if last is not None and last.adapter is not None and failure.kind != "adapter":
        where = f"at step {len(failure.steps)} ({show_request(last.request).split(' ')[0]})"
        if last.reference is None:
            lines.append(f"{where}: the adapter answered {show_response(last.adapter)}")
        else:
            mine, theirs = _answers(last.reference, last.adapter)
            lines.append(f"{where}: the reference answered {mine}; the adapter answered {theirs}")
            difference = delta_difference(last.reference, last.adapter)
            if difference:
                lines.append(difference)
    return lines


def format_failure(failure: Failure, config: Config) -> str:
    steps = failure.steps
    last = steps[-1] if steps else None
    title = {
        "disagreement": "the adapter's answer differs from the reference",
        "invariant": "the adapter broke an invariant",
        "adapter": "the adapter failed",
    }[failure.kind]
    origin = (
        f"  replayed from {config.replay}"
        if config.replay
        else f"  seed {config.seed}; first failure after {failure.found_after:.2f} s"
    ) + f"; inputs {config.inputs}"
    lines = [f"FAIL {failure.component}: {title} (step {len(steps)} of {len(steps)})", origin]
    if failure.kind != "disagreement":
        lines.append("  " + failure.message.replace("\n", "\n  "))
    lines.append(
        f"  signature: {failure.signature}"
        + (f" (known: {failure.known})" if failure.known else "")
    )
    if failure.client_go is not None:
        lines.append(f"  client-go: {failure.client_go}")
    if failure.component == "informer":
        lines.append("  story: " + informer_story(steps))
    if failure.consequence:
        said = (
            "end to end (each side's pops applied to a store as an informer's "
            "processDeltas does; a FIFO that reads known objects reads that store): "
            f"{failure.consequence}"
        )
        lines.append(_filled(said))
    lines += [_filled(said) for said in failing_step(failure)]
    compared = any(step.reference is not None for step in steps)
    states = reference_states(steps) if steps and compared else []
    lines.append("")
    lines += format_table(steps)
    if last is not None and states and states[-1]:
        lines.append("")
        lines.append(f"  reference state before step {len(steps)}: {states[-1]}")
    if last is not None:
        hint = HINTS.get(str(last.request.get("method")))
        if hint and failure.kind != "adapter":
            lines.append(f"  what client-go does: {hint}")
    lines.append("")
    lines.append("  replay by hand (the lines sent to a fresh adapter):")
    for message in trace_lines(steps):
        lines.append("    " + json.dumps(message, separators=(",", ":")))
    return "\n".join(lines)


def finding_header(failure: Failure, number: int, count: int) -> str:
    """The line above a finding's report: its number, signature, acknowledgement, and
    why its shrinking ended early if it did."""
    text = f"finding {number} of {count}: {failure.signature}"
    if failure.known is not None:
        text += f" (known: {failure.known})"
    if failure.shrink_note:
        text += f" [{failure.shrink_note}]"
    return text


def save_findings(path: str, failures: Sequence[Failure], config: Config) -> str:
    """Write ``failures`` to ``path`` as one trace file (each trace under a header line
    naming its component and signature); the lines that say so and how to replay it."""
    with open(path, "w", encoding="utf-8") as fh:
        for number, failure in enumerate(failures, start=1):
            header = {
                "conform_trace": 1,
                "component": failure.component,
                "seed": config.seed,
                "kind": failure.kind,
                "signature": failure.signature,
                "finding": number,
                "findings": len(failures),
                "inputs": config.inputs,
            }
            if config.release is not None:
                header["release"] = config.release  # what the reference followed
            fh.write(json.dumps(header) + "\n")
            for step in failure.steps:
                fh.write(json.dumps(step.request) + "\n")
    shown = "1 finding" if len(failures) == 1 else f"{len(failures)} findings"
    return (
        f"  saved {shown} to {path}; replay with:\n"
        f"    refimpl conform --replay {path} -- {' '.join(config.command)}"
    )


def load_inputs(path: str) -> Inputs | None:
    """The ``--inputs`` mode a saved trace was found with (None: not recorded)."""
    with open(path, encoding="utf-8") as fh:
        header = json.loads(fh.readline() or "null")
    found = header.get("inputs") if isinstance(header, dict) else None
    return next((mode for mode in INPUTS if mode == found), None)


def load_release(path: str) -> str | None:
    """The ``--release`` a saved trace was found with (None: not recorded)."""
    with open(path, encoding="utf-8") as fh:
        header = json.loads(fh.readline() or "null")
    found = header.get("release") if isinstance(header, dict) else None
    return found if isinstance(found, str) else None


@dataclass
class SavedTrace:
    """One trace of a saved file: its component, its requests, and the signature of the
    finding it was saved as (None for a trace written by hand or by an older version)."""

    component: str
    requests: list[dict[str, Any]]
    signature: str | None = None


def load_traces(path: str) -> list[SavedTrace]:
    """The traces of a file :func:`save_findings` wrote (a header line starts each), or
    of a file of request lines alone (one trace, component ``replay``)."""
    traces: list[SavedTrace] = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError(f"{path}:{number}: not a JSON object")
            if "conform_trace" in message:
                signature = message.get("signature")
                component = str(message.get("component", "replay"))
                traces.append(SavedTrace(component, [], signature if signature else None))
                continue
            message.pop("id", None)
            if message.get("op") == "hello":
                continue
            if not traces:
                traces.append(SavedTrace("replay", []))
            traces[-1].requests.append(message)
    return traces or [SavedTrace("replay", [])]
