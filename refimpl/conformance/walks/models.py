"""Every graphed model the spec walks drive, by name, with its request mapping.

Owns :data:`SPEC_MAPPINGS` (model name in spec/models.json -> its mapping): the one
place that lists which models ``refimpl conform --from-spec`` and ``refimpl peers``
walk, in the order they are walked; and :data:`NOT_WALKED`, the graphed models no walk
drives, each with the reason (``tests/test_contributing.py`` holds every graphed model
to one of the two).
"""

from __future__ import annotations

from refimpl.conformance.walks.fifo_mapping import (
    DELTA_FIFO,
    DELTA_FIFO_NO_REPLACED,
    REAL_FIFO,
    REAL_FIFO_ATOMIC,
)
from refimpl.conformance.walks.indexer_mapping import INDEXER
from refimpl.conformance.walks.informer_mapping import INFORMER, INFORMER_ATOMIC
from refimpl.conformance.walks.informer_resync_mapping import INFORMER_RESYNC
from refimpl.conformance.walks.spec_mapping import SpecMapping
from refimpl.conformance.walks.workqueue_mapping import WORK_QUEUE

__all__ = ["NOT_WALKED", "SPEC_MAPPINGS"]

#: model name (spec/models.json) -> its request mapping
SPEC_MAPPINGS: dict[str, SpecMapping] = {
    WORK_QUEUE.model: WORK_QUEUE,
    DELTA_FIFO.model: DELTA_FIFO,
    DELTA_FIFO_NO_REPLACED.model: DELTA_FIFO_NO_REPLACED,
    REAL_FIFO.model: REAL_FIFO,
    REAL_FIFO_ATOMIC.model: REAL_FIFO_ATOMIC,
    INFORMER.model: INFORMER,
    INFORMER_ATOMIC.model: INFORMER_ATOMIC,
    INFORMER_RESYNC.model: INFORMER_RESYNC,
    INDEXER.model: INDEXER,
}

#: Graphed models no walk drives (the code replay, ``refimpl spec replay``, covers them).
NOT_WALKED: dict[str, str] = {
    "InformerFaults": (
        "no request mapping yet: its faults (ListFail, WatchExpired, WatchRetry, "
        "WatchShort, bookmarks) have protocol requests, the mapping is not written"
    ),
    "ControllerReplay": (
        "the protocol has no controller component: workers and reconciles would be "
        "the harness's own"
    ),
}
