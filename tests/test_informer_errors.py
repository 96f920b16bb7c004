"""Errors are loud by default and what can never work is refused (issue 13, item 2).

A raising handler or transform is reported on stderr without any logging configuration,
once per distinct error and with the informer's name (refimpl/cache/error_report.py);
a transform that keeps failing is visible from the informer and from
``wait_for_cache_sync``; bad arguments raise TypeError/ValueError naming the argument.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from refimpl.apiserver import ApiServer, ApiServerListerWatcher
from refimpl.cache import ResourceEventHandlerFuncs
from refimpl.cache.error_report import ErrorReporter
from refimpl.cache.shared_informer import SharedIndexInformer, wait_for_cache_sync
from refimpl.meta import Object

LOUD = textwrap.dedent(
    """
    import threading, time
    from refimpl.apiserver import ApiServer, ApiServerListerWatcher
    from refimpl.cache import (ResourceEventHandlerFuncs, SharedIndexInformer,
                               wait_for_cache_sync)
    from refimpl.meta import Object

    def boom(obj):
        raise RuntimeError("handler broke")

    server = ApiServer()
    for i in range(30):
        server.create(Object(f"o{i}", "default"))
    informer = SharedIndexInformer(ApiServerListerWatcher(server), name="pods")
    reg = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=boom), name="h1")
    stop = threading.Event()
    informer.start(stop)
    assert wait_for_cache_sync(stop, informer.has_synced, reg.has_synced, timeout=10)
    stop.set()
    time.sleep(0.2)
    print("done")
    """
)


def test_a_raising_handler_is_on_stderr_once_without_logging_configured() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOUD], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    # 30 failures, one distinct error: reported once, with the informer and the handler.
    assert done.stderr.count("RuntimeError('handler broke')") == 1, done.stderr
    assert "informer pods: handler h1 on_add raised" in done.stderr
    assert "Traceback" in done.stderr


def test_repeats_are_summarised_at_most_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    reporter = ErrorReporter("pods", interval=10.0, now=lambda: now[0])
    err = ValueError("bad")
    with caplog.at_level(logging.ERROR, logger="refimpl.errors"):
        for step in range(100):
            now[0] = step * 0.5  # 50 s in all: the first report, then one per 10 s
            reporter.report("transform", err)
        reporter.report("transform", KeyError("other"))
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 + 4 + 1, messages
    assert messages[0] == "informer pods: transform raised ValueError('bad')"
    assert messages[1].endswith("again (20 times since the last report)")
    assert reporter.count("transform", err) == 100


def _broken_transform(obj: Any) -> Any:
    raise ValueError("cannot transform")


def test_a_failing_transform_is_visible_and_wait_for_cache_sync_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = ApiServer()
    server.create(Object("a", "default"))
    informer = SharedIndexInformer(
        ApiServerListerWatcher(server), transform=_broken_transform, name="pods"
    )
    stop = threading.Event()
    informer.start(stop)
    try:
        with caplog.at_level(logging.ERROR, logger="refimpl.errors"):
            assert not wait_for_cache_sync(stop, informer.has_synced, timeout=0.5)
    finally:
        stop.set()
    err = informer.last_sync_error()
    assert isinstance(err, ValueError) and str(err) == "cannot transform"
    text = caplog.text
    assert "informer pods: transform raised ValueError('cannot transform')" in text
    assert "wait_for_cache_sync: timed out after 0.5 s" in text
    assert "informer pods has not synced: last error ValueError('cannot transform')" in text


def test_last_sync_error_is_none_once_synced() -> None:
    server = ApiServer()
    informer = SharedIndexInformer(ApiServerListerWatcher(server))
    stop = threading.Event()
    informer.start(stop)
    try:
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=10)
        assert informer.last_sync_error() is None
    finally:
        stop.set()


@pytest.mark.parametrize("handler", [None, object(), "on_add"])
def test_a_non_handler_is_refused(handler: Any) -> None:
    informer = SharedIndexInformer(ApiServerListerWatcher(ApiServer()))
    with pytest.raises(TypeError, match="handler must be a ResourceEventHandler"):
        informer.add_event_handler(handler)


@pytest.mark.parametrize(
    ("value", "error"),
    [(float("nan"), ValueError), (-1.0, ValueError), (float("inf"), ValueError), ("1", TypeError)],
)
def test_bad_resync_periods_are_refused(value: Any, error: type[Exception]) -> None:
    lw = ApiServerListerWatcher(ApiServer())
    with pytest.raises(error, match="resync_period"):
        SharedIndexInformer(lw, resync_period=value)
    informer = SharedIndexInformer(lw)
    with pytest.raises(error, match="resync_period"):
        informer.add_event_handler(ResourceEventHandlerFuncs(), value)


def test_bad_names_timeouts_and_transforms_are_refused() -> None:
    lw = ApiServerListerWatcher(ApiServer())
    with pytest.raises(TypeError, match="name must be a str"):
        SharedIndexInformer(lw, name=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="transform must be callable"):
        SharedIndexInformer(lw, transform="upper")  # type: ignore[arg-type]
    informer = SharedIndexInformer(lw)
    with pytest.raises(TypeError, match="name must be a str"):
        informer.add_event_handler(ResourceEventHandlerFuncs(), name=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        wait_for_cache_sync(threading.Event(), informer.has_synced, timeout=float("nan"))


def test_objects_and_keys_of_the_wrong_type_are_refused() -> None:
    with pytest.raises(TypeError, match="Object namespace must be a str, got 5"):
        Object("a", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Object labels must map str to str"):
        Object("a", labels={"app": 1})  # type: ignore[dict-item]
    informer = SharedIndexInformer(ApiServerListerWatcher(ApiServer()))
    with pytest.raises(TypeError, match="key must be a str, got None"):
        informer.get_indexer().get_by_key(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key must be a str, got None"):
        informer.lister().get_by_key(None)  # type: ignore[arg-type]
