"""The minimal object model: objects, keys and tombstones.

Ports what tools/cache needs from apimachinery's ``ObjectMeta`` plus
``tools/cache/store.go`` (``MetaNamespaceKeyFunc``, ``SplitMetaNamespaceKey``,
``ExplicitKey``, ``KeyError``) and ``DeletedFinalStateUnknown`` from
``tools/cache/delta_fifo.go``. Values here are immutable; nothing blocks or reads a
clock. In the TLA+ specs an object is abstracted to ``[key, rv]`` records
(``spec/Informer.tla``: ``Obj``).

Resource versions are opaque strings, as in Kubernetes. The in-memory API server issues
decimal integers, so :func:`rv_int` can order them in tests and specs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, Self

import attrs

from refimpl._typing import TypeVar

__all__ = [
    "DataT",
    "DeletedFinalStateUnknown",
    "ExplicitKey",
    "KeyFunc",
    "ListOptions",
    "ListResult",
    "ObjT_co",
    "Object",
    "ObjectKeyError",
    "deletion_handling_meta_namespace_key_func",
    "meta_namespace_key_func",
    "object_key",
    "rv_int",
    "split_meta_namespace_key",
]


def _copy_labels(labels: Mapping[str, str]) -> dict[str, str]:
    return dict(labels)


#: The payload type of an :class:`Object`; ``Any`` unless named (``Object[PodSpec]``).
DataT = TypeVar("DataT", default=Any)
#: ``data``'s default, ``None``, typed so that it fits any ``DataT``.
_NO_DATA: Any = None


@attrs.frozen(unsafe_hash=False)
class Object(Generic[DataT]):
    """An API object: identity (namespace, name, uid), version, labels and a payload.

    ``data`` is free-form (the "spec and status" of a real object); refimpl never looks
    inside it. Its type is the parameter: ``Object[PodSpec]`` is an object whose
    ``data`` is a ``PodSpec`` for the type checker (plain ``Object`` is ``Object[Any]``);
    at run time ``Object[PodSpec](...)`` builds the same ``Object`` as ``Object(...)``.
    Left out, ``data`` is ``None`` whatever the parameter says.
    Use :meth:`evolve` to derive a changed copy.
    """

    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict, converter=_copy_labels)
    data: DataT = _NO_DATA

    def __attrs_post_init__(self) -> None:
        # Go's types make these strings; without the check a wrong type fails much later
        # and far away (``Object("a", 5)`` used to fail in the key function with
        # "object of type 'int' has no len()").
        for field in ("name", "namespace", "uid", "resource_version"):
            value = getattr(self, field)
            if not isinstance(value, str):
                raise TypeError(f"Object {field} must be a str, got {value!r}")
        for key, value in self.labels.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"Object labels must map str to str, got {key!r}: {value!r}")

    def evolve(self, **changes: Any) -> Self:
        return attrs.evolve(self, **changes)

    def __hash__(self) -> int:  # labels is a dict: hash the identity fields only
        return hash((self.namespace, self.name, self.uid, self.resource_version))


class ExplicitKey(str):
    """A string that *is* a key: key functions return it verbatim (client-go
    ``ExplicitKey``)."""

    __slots__ = ()


#: What a tombstone carries; an :class:`Object` unless named.
ObjT_co = TypeVar("ObjT_co", covariant=True, default=Object)


@attrs.frozen
class DeletedFinalStateUnknown(Generic[ObjT_co]):
    """A tombstone: ``key`` was deleted while we were not watching.

    ``obj`` is the last state we knew, possibly stale, possibly ``None`` (client-go
    logs and sends ``nil`` when the store lookup fails). It is never itself a
    tombstone: producers unwrap before wrapping.

    Generic in what it carries, so a typed handler's ``on_delete`` receives
    ``Pod | DeletedFinalStateUnknown[Pod]`` (client-go's typed handlers wrap every
    deletion in ``DeletedObject[T]`` instead; refimpl keeps handing over the object or
    the tombstone itself, as the untyped API does). Plain ``DeletedFinalStateUnknown``
    means ``DeletedFinalStateUnknown[Object]``.
    """

    key: str
    obj: ObjT_co | None

    def __attrs_post_init__(self) -> None:
        if isinstance(self.obj, DeletedFinalStateUnknown):
            raise TypeError("a DeletedFinalStateUnknown must not wrap another one")


class ObjectKeyError(Exception):
    """A key function could not key ``obj`` (client-go ``KeyError{Obj, Err}``)."""

    def __init__(self, obj: object, err: str) -> None:
        super().__init__(f"couldn't create key for object {obj!r}: {err}")
        self.obj = obj
        self.err = err


#: A key function maps an object (or tombstone) to its store key, or raises
#: :class:`ObjectKeyError`.
KeyFunc = Callable[[object], str]


def meta_namespace_key_func(obj: object) -> str:
    """``"<namespace>/<name>"``, or ``"<name>"`` for cluster-scoped objects.

    Like client-go this does not validate names: a name with "/" gives a key that
    :func:`split_meta_namespace_key` rejects.
    """
    if isinstance(obj, ExplicitKey):
        return str(obj)
    if not isinstance(obj, Object):
        raise ObjectKeyError(obj, f"object has no meta: {type(obj).__name__} is not an Object")
    if obj.namespace:
        return f"{obj.namespace}/{obj.name}"
    return obj.name


def deletion_handling_meta_namespace_key_func(obj: object) -> str:
    """Like :func:`meta_namespace_key_func`, but a tombstone yields its own key."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key_func(obj)


object_key = deletion_handling_meta_namespace_key_func


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """``(namespace, name)`` from a key; one part means cluster-scoped.

    Raises ``ValueError`` for more than one "/" (client-go: "unexpected key format").
    Empty parts are accepted, as in client-go. ``TypeError`` for a key that is not a str.
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {key!r}")
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")


def rv_int(resource_version: str) -> int:
    """Order resource versions issued by refimpl's API server (decimal strings)."""
    try:
        return int(resource_version)
    except ValueError:
        raise ValueError(
            f"resource version {resource_version!r} is not one refimpl's server issued"
        ) from None


# -- list requests and answers (metav1.ListOptions, a list's items and ListMeta) ------


@attrs.frozen
class ListOptions:
    """The subset of ``metav1.ListOptions`` the reflector sends.

    ``send_initial_events`` is tri-state like Go's ``*bool``: ``None`` = unset.
    ``resource_version_match`` is implied (``NotOlderThan`` whenever
    ``send_initial_events`` is set), so it is not a field.
    """

    resource_version: str = ""
    limit: int = 0
    continue_token: str = ""
    timeout_seconds: int | None = None
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.resource_version, str):
            raise TypeError(f"resource_version must be a str, got {self.resource_version!r}")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 0:
            raise ValueError(f"limit must be a non-negative int, got {self.limit!r}")


@attrs.frozen
class ListResult:
    """One list answer: items in key order, the list's resourceVersion and, when more
    pages follow, a continue token ("" on the last page)."""

    items: tuple[Object, ...]
    resource_version: str
    continue_token: str = ""
