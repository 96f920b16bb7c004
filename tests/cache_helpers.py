"""Shared test doubles for the FIFO and process_deltas tests."""

from __future__ import annotations

from typing import cast

from refimpl.cache import Delta, DeltaType
from refimpl.meta import DeletedFinalStateUnknown, Object, deletion_handling_meta_namespace_key_func

#: The delta types, as the FIFO and process_deltas tests spell them.
A, U, D, R, S = (
    DeltaType.ADDED,
    DeltaType.UPDATED,
    DeltaType.DELETED,
    DeltaType.REPLACED,
    DeltaType.SYNC,
)
RA, SA, BM = DeltaType.REPLACED_ALL, DeltaType.SYNC_ALL, DeltaType.BOOKMARK


class DictKnown:
    """A minimal KeyListerGetter over a dict; can be told to fail lookups."""

    def __init__(self, items: dict[str, object] | None = None) -> None:
        self.items: dict[str, object] = dict(items or {})
        self.fail_lookup: set[str] = set()
        self.hide: set[str] = set()  # listed by list_keys but reported missing by get_by_key

    def list_keys(self) -> list[str]:
        return list(self.items)

    def get_by_key(self, key: str) -> tuple[object | None, bool]:
        if key in self.fail_lookup:
            raise RuntimeError(f"lookup of {key} failed")
        if key in self.hide or key not in self.items:
            return None, False
        return self.items[key], True

    def apply(self, deltas: list[Delta]) -> None:
        """What an informer does with popped deltas (store side only)."""
        for d in deltas:
            k = deletion_handling_meta_namespace_key_func(d.object)
            if d.type is DeltaType.DELETED:
                self.items.pop(k, None)
            else:
                self.items[k] = d.object


def tag(obj: object) -> object:
    """The transformer used in tests: wraps ``data`` once, refuses data == "bad"."""
    assert isinstance(obj, Object), obj
    if obj.data == "bad":
        raise RuntimeError("transformer refuses this object")
    return obj.evolve(data=("t", obj.data))


def is_tagged_once(obj: object) -> bool:
    if not isinstance(obj, Object):
        return False
    d = obj.data
    return (
        isinstance(d, tuple)
        and len(d) == 2
        and d[0] == "t"
        and not (isinstance(d[1], tuple) and d[1][:1] == ("t",))
    )


def obj_key(obj: object) -> str:
    return deletion_handling_meta_namespace_key_func(obj)


def dfsu(key: str, obj: object) -> DeletedFinalStateUnknown:
    """A tombstone for tests; ``obj`` is whatever the FIFO last held (maybe None)."""
    return DeletedFinalStateUnknown(key, cast("Object | None", obj))
