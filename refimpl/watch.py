"""Watch events: what a watch stream carries.

Ports the part of ``k8s.io/apimachinery/pkg/watch`` that ``tools/cache`` reads
(``watch.Event`` and its ``EventType`` values) and ``metav1.InitialEventsAnnotationKey``;
:class:`WatchTimeout` is what a pull-style watch (``refimpl/cache/listwatch.py``:
``Watch.next_event``) raises when nothing arrived in time. A neutral module: the
reflector (``refimpl/cache/reflector.py``) reads these events and the in-memory API
server (``refimpl/apiserver.py``) makes them. In the TLA+ specs a watch event is the
``[type, obj]`` record of ``spec/Informer.tla``'s ``WatchEvent`` action.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

import attrs

from refimpl.apierrors import ApiError
from refimpl.meta import Object

__all__ = [
    "ADDED",
    "BOOKMARK",
    "DELETED",
    "ERROR",
    "INITIAL_EVENTS_END_ANNOTATION",
    "MODIFIED",
    "EventType",
    "WatchEvent",
    "WatchTimeout",
]

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]
ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"
BOOKMARK: Final = "BOOKMARK"
ERROR: Final = "ERROR"

#: The annotation on the bookmark that ends the initial events of a watch with
#: ``send_initial_events=True`` (metav1.InitialEventsAnnotationKey).
INITIAL_EVENTS_END_ANNOTATION: Final = "k8s.io/initial-events-end"


class WatchTimeout(TimeoutError):
    """``next_event(timeout)`` found nothing to read within ``timeout``."""


def _frozen_mapping(m: Mapping[str, str]) -> Mapping[str, str]:
    return dict(m)


@attrs.frozen
class WatchEvent:
    """One event on a watch (client-go ``watch.Event``).

    ``object`` is the object's state at ``object.resource_version``; for DELETED the last
    state stamped with the deletion's resourceVersion; for BOOKMARK an object with only
    ``resource_version`` set; for ERROR an empty object and ``error`` holds the status.
    ``annotations`` are the bookmark object's annotations (``meta.Object`` has no
    annotations field, so they travel on the event).
    """

    type: EventType
    object: Object
    annotations: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    error: ApiError | None = attrs.field(default=None, eq=False)

    @property
    def resource_version(self) -> str:
        return self.object.resource_version

    @property
    def is_initial_events_end(self) -> bool:
        return (
            self.type == BOOKMARK and self.annotations.get(INITIAL_EVENTS_END_ANNOTATION) == "true"
        )
