"""Work queues: a port of client-go ``util/workqueue``.

``Queue`` (add/get/done with the dirty/processing rules), ``DelayingQueue``
(``add_after``), ``RateLimitingQueue`` (``add_rate_limited``/``forget``/``num_requeues``)
and the rate limiters. The decisions live in the cores (``core``, ``delaying_core``,
``backoff``); the classes here add locks, waiting and timer threads.
"""

from refimpl.blocking import WouldBlock
from refimpl.workqueue.core import FifoContainer, MeteredQueueCore, QueueContainer, QueueCore
from refimpl.workqueue.delaying import MAX_WAIT, DelayingQueue
from refimpl.workqueue.delaying_core import DelayingCore
from refimpl.workqueue.metrics import InMemoryMetricsProvider, MetricsProvider
from refimpl.workqueue.queue import Queue
from refimpl.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from refimpl.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "MAX_WAIT",
    "BucketRateLimiter",
    "DelayingCore",
    "DelayingQueue",
    "FifoContainer",
    "InMemoryMetricsProvider",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MeteredQueueCore",
    "MetricsProvider",
    "Queue",
    "QueueContainer",
    "QueueCore",
    "RateLimiter",
    "RateLimitingQueue",
    "WithMaxWaitRateLimiter",
    "WouldBlock",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]
