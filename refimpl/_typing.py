"""``TypeVar`` with defaults (PEP 696) on every Python refimpl supports.

The generic classes (``Object``, the handlers, ``Indexer``, the informer, the lister)
give their type parameters defaults, so that code which never names a parameter --
``SharedIndexInformer(lw)``, ``Indexer()`` -- keeps the types it had before they were
generic. ``typing`` has defaults from Python 3.13; before that ``typing_extensions``.
"""

import sys

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:
    from typing_extensions import TypeVar

__all__ = ["TypeVar"]
