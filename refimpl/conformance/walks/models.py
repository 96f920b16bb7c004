"""Every graphed model the spec walks drive, by name, with its request mapping.

Owns :data:`SPEC_MAPPINGS` (model name in spec/models.json -> its mapping): the one
place that lists which models ``refimpl conform --from-spec`` and ``refimpl peers``
walk, in the order they are walked.
"""

from __future__ import annotations

from refimpl.conformance.walks.fifo_mapping import DELTA_FIFO, REAL_FIFO, REAL_FIFO_ATOMIC
from refimpl.conformance.walks.informer_mapping import INFORMER, INFORMER_ATOMIC
from refimpl.conformance.walks.spec_mapping import SpecMapping
from refimpl.conformance.walks.workqueue_mapping import WORK_QUEUE

__all__ = ["SPEC_MAPPINGS"]

#: model name (spec/models.json) -> its request mapping
SPEC_MAPPINGS: dict[str, SpecMapping] = {
    WORK_QUEUE.model: WORK_QUEUE,
    DELTA_FIFO.model: DELTA_FIFO,
    REAL_FIFO.model: REAL_FIFO,
    REAL_FIFO_ATOMIC.model: REAL_FIFO_ATOMIC,
    INFORMER.model: INFORMER,
    INFORMER_ATOMIC.model: INFORMER_ATOMIC,
}
