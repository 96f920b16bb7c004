"""The README's informer example runs and prints the request counts its comments state."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
CALL = "SharedIndexInformer(ApiServerListerWatcher(server))"


def informer_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    (code,) = [b for b in blocks if CALL in b]
    return str(code)


def run(code: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    return out.getvalue().splitlines()


@pytest.mark.timeout(30)
def test_the_default_informer_prints_what_the_comment_says() -> None:
    code = informer_example()
    stated = re.search(r"# (\d+ \d+ \d+): one streaming watch", code)
    assert stated is not None
    assert run(code)[-1] == stated.group(1) == "0 1 0"


@pytest.mark.timeout(30)
def test_list_watch_mode_prints_what_the_text_says() -> None:
    code = informer_example().replace(
        CALL, 'SharedIndexInformer(ApiServerListerWatcher(server), list_mode="list-watch")'
    )
    assert "`1 0 1`" in README.read_text()
    assert run(code)[-1] == "1 0 1"
