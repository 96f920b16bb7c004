"""Event handlers: what an informer tells about each object, and the adapters client-go offers.

The :class:`ResourceEventHandler` protocol (``on_add``/``on_update``/``on_delete``) and
the function-based and filtering handlers, generic in the object type like client-go's
typed handlers. Ports the ``ResourceEventHandler`` part of client-go
``tools/cache/controller.go`` (``ResourceEventHandlerFuncs``,
``ResourceEventHandlerDetailedFuncs``, ``FilteringResourceEventHandler``). In the specs
a handler is the receiver of ``notifications`` (``spec/Informer.tla``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, runtime_checkable

import attrs

from refimpl._typing import TypeVar
from refimpl.meta import DeletedFinalStateUnknown, Object

__all__ = [
    "FilteringResourceEventHandler",
    "ObjT",
    "ObjT_contra",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
]


#: The object type a handler is written for (contravariant: a handler of ``Object``
#: serves an informer of any ``Object[...]``). Plain ``ResourceEventHandler`` means
#: ``ResourceEventHandler[Object]``.
ObjT_contra = TypeVar("ObjT_contra", contravariant=True, default=Object)
#: The object type of the function-based handlers below.
ObjT = TypeVar("ObjT", default=Object)


@runtime_checkable
class ResourceEventHandler(Protocol[ObjT_contra]):
    """Receives notifications (client-go ``ResourceEventHandler``; generic like its
    ``TypedResourceEventHandler[T]``).

    ``on_delete`` may receive a :class:`~refimpl.meta.DeletedFinalStateUnknown` whose
    ``obj`` is stale or ``None``, hence its parameter type
    ``T | DeletedFinalStateUnknown[T]``. Handlers must not change the objects they
    get: they are the store's own.

    The type parameter is for the type checker only: the informer does not check at
    run time that what it delivers is a ``T`` (``SharedIndexInformer[Pod]`` promises
    that the list/watch produces ``Pod``s).
    """

    def on_add(self, obj: ObjT_contra, is_in_initial_list: bool) -> None: ...
    def on_update(self, old: ObjT_contra, new: ObjT_contra) -> None: ...
    def on_delete(self, obj: ObjT_contra | DeletedFinalStateUnknown[ObjT_contra]) -> None: ...


@attrs.frozen
class ResourceEventHandlerFuncs(Generic[ObjT]):
    """A handler from optional callables; ``add_func`` does not see the initial-list
    flag (client-go ``ResourceEventHandlerFuncs`` and ``TypedResourceEventHandlerFuncs``:
    one generic class serves both here)."""

    add_func: Callable[[ObjT], None] | None = None
    update_func: Callable[[ObjT, ObjT], None] | None = None
    delete_func: Callable[[ObjT | DeletedFinalStateUnknown[ObjT]], None] | None = None

    def on_add(self, obj: ObjT, is_in_initial_list: bool) -> None:
        if self.add_func is not None:
            self.add_func(obj)

    def on_update(self, old: ObjT, new: ObjT) -> None:
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: ObjT | DeletedFinalStateUnknown[ObjT]) -> None:
        if self.delete_func is not None:
            self.delete_func(obj)


@attrs.frozen
class ResourceEventHandlerDetailedFuncs(Generic[ObjT]):
    """Like :class:`ResourceEventHandlerFuncs`, but ``add_func`` also receives
    ``is_in_initial_list`` (client-go ``ResourceEventHandlerDetailedFuncs``)."""

    add_func: Callable[[ObjT, bool], None] | None = None
    update_func: Callable[[ObjT, ObjT], None] | None = None
    delete_func: Callable[[ObjT | DeletedFinalStateUnknown[ObjT]], None] | None = None

    def on_add(self, obj: ObjT, is_in_initial_list: bool) -> None:
        if self.add_func is not None:
            self.add_func(obj, is_in_initial_list)

    def on_update(self, old: ObjT, new: ObjT) -> None:
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: ObjT | DeletedFinalStateUnknown[ObjT]) -> None:
        if self.delete_func is not None:
            self.delete_func(obj)


@attrs.frozen
class FilteringResourceEventHandler(Generic[ObjT]):
    """Forwards only objects that pass ``filter_func``.

    An update whose new object starts passing becomes ``on_add(new, False)``; one whose
    old object stops passing becomes ``on_delete(old)`` (the old object, not a
    tombstone). ``filter_func`` must also cope with tombstones in ``on_delete``, hence
    its parameter type ``T | DeletedFinalStateUnknown[T]`` (client-go's typed variant
    filters the tombstone's possibly-nil object instead).
    """

    filter_func: Callable[[ObjT | DeletedFinalStateUnknown[ObjT]], bool]
    handler: ResourceEventHandler[ObjT]

    def on_add(self, obj: ObjT, is_in_initial_list: bool) -> None:
        if self.filter_func(obj):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: ObjT, new: ObjT) -> None:
        new_passes = self.filter_func(new)
        old_passes = self.filter_func(old)
        if new_passes and old_passes:
            self.handler.on_update(old, new)
        elif new_passes:
            self.handler.on_add(new, False)
        elif old_passes:
            self.handler.on_delete(old)

    def on_delete(self, obj: ObjT | DeletedFinalStateUnknown[ObjT]) -> None:
        if self.filter_func(obj):
            self.handler.on_delete(obj)
