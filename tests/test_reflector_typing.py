"""mypy --strict catches a wrong answer sent into the reflector loop.

The loop (:class:`refimpl.cache.reflector.ReflectorLoop`) is a generator resumed with
the answer to the wait it yielded; each wait kind has its own answer type
(``EventAnswer``, ``UntilAnswer``, ``ListAnswer``) and the generator's send type is
their union (``Answer``). This runs mypy over a small driver: the lines marked ``# ok``
must check, each line marked ``# wrong`` must be an error, and nothing else may be.
"""

from __future__ import annotations

import re
from pathlib import Path

from mypy import api

SNIPPET = """\
from refimpl.cache.reflector import (
    EventAnswer, ListAnswer, Steps, UntilAnswer, WaitForEvent, WaitForList, WaitUntil, Wake,
)

def resume(steps: Steps[None]) -> None:
    steps.send(None)  # ok
    steps.send(Wake.DEADLINE)  # ok
    steps.send(True)  # wrong: the bool answer of the untyped protocol
    steps.send("resync")  # wrong: a string, not Wake.RESYNC

def until(wait: WaitUntil, stopped: bool) -> UntilAnswer:
    if stopped:
        return Wake.STOP  # ok
    return Wake.LISTED  # wrong: a WaitUntil is never answered with LISTED

def listed(wait: WaitForList) -> ListAnswer:
    return None  # wrong: a WaitForList is answered with LISTED or STOP

def event(wait: WaitForEvent) -> EventAnswer:
    if wait.resync_at is None:
        return wait.watch.next_event(0)  # ok
    return Wake.DEADLINE  # wrong: a WaitForEvent is never answered with DEADLINE
"""


def test_mypy_rejects_a_wrong_answer_and_accepts_the_right_ones(tmp_path: Path) -> None:
    path = tmp_path / "driver.py"
    path.write_text(SNIPPET)
    lines = SNIPPET.splitlines()
    wrong = {n for n, line in enumerate(lines, 1) if "# wrong" in line}
    assert len(wrong) == 5 and any("# ok" in line for line in lines)
    # A cache of its own: mypy's shared cache keys the snippet by module name ("driver")
    # and would replay errors recorded under an earlier run's temporary path.
    cache = tmp_path / "mypy-cache"
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--follow-imports=silent",
            "--no-error-summary",
            "--cache-dir",
            str(cache),
            str(path),
        ]
    )
    flagged = {
        int(m.group(1)) for m in re.finditer(rf"^{re.escape(str(path))}:(\d+): error", stdout, re.M)
    }
    assert flagged == wrong, (stdout, stderr)
    assert status == 1
