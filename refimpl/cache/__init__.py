"""The informer's building blocks: a port of client-go ``tools/cache``.

``Reflector`` (list then watch), ``DeltaFIFO`` and ``RealFIFO`` (the queues between the
reflector and the store), ``Indexer`` (the local cache with indices),
``process_deltas`` (store first, then handlers) and ``SharedIndexInformer`` (all of it
wired together, fanning out to many handlers). Each part is a non-blocking core plus a
thin threaded shell.

The public classes are generic in the object type, as client-go's ``Typed*`` variants
are (``TypedResourceEventHandler[T]``, ``TypedIndexer[T]``,
``TypedSharedIndexInformer[T]`` in ``tools/cache``): ``SharedIndexInformer[Pod]``,
``ResourceEventHandlerFuncs[Pod]``, ``Indexer[Pod]``. Left unnamed the parameter is
``Object`` (``object`` for a bare ``Indexer``/``Store``), which is what these were typed
with before. Types only: nothing about run-time behaviour depends on them.
"""

from refimpl.cache.delta_fifo import DeltaFIFO, DeltaFIFOCore
from refimpl.cache.deltas import (
    BATCHABLE_TYPES,
    BookmarkInfo,
    Delta,
    Deltas,
    DeltaType,
    FIFOClosedError,
    KeyListerGetter,
    PopProcessFunc,
    ProcessBatchFunc,
    ReplacedAllInfo,
    SyncAllInfo,
    TransformFunc,
    newest,
    oldest,
    tombstone,
)
from refimpl.cache.handlers import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
)
from refimpl.cache.informer_core import InformerCore
from refimpl.cache.listwatch import ListerWatcher, ListPager, ListWatch
from refimpl.cache.process_deltas import (
    BatchProcessingError,
    process_deltas,
    process_deltas_in_batch,
    process_replaced_all,
)
from refimpl.cache.processor import (
    AddNotification,
    DeleteNotification,
    ProcessorListener,
    SharedProcessor,
    SingleFileTracker,
    UpdateNotification,
)
from refimpl.cache.real_fifo import (
    DEFAULT_BATCH_SIZE,
    RealFIFO,
    RealFIFOCore,
    reconcile_replacement,
)
from refimpl.cache.reflector import (
    ListMode,
    Reflector,
    ReflectorCore,
    ReflectorStore,
    SteppedReflector,
)
from refimpl.cache.shared_informer import (
    FifoMode,
    GenericLister,
    InformerStoppedError,
    ResourceEventHandlerRegistration,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from refimpl.cache.store import (
    NAMESPACE_INDEX,
    Indexer,
    IndexerConflictError,
    IndexFunc,
    IndexFuncError,
    Selector,
    Store,
    ThreadSafeMap,
    Transaction,
    TransactionError,
    TransactionStore,
    TransactionType,
    TypedIndexFunc,
    UnknownIndexError,
    list_all,
    list_all_by_namespace,
    meta_namespace_index_func,
)
from refimpl.meta import DeletedFinalStateUnknown

__all__ = [
    "BATCHABLE_TYPES",
    "DEFAULT_BATCH_SIZE",
    "NAMESPACE_INDEX",
    "AddNotification",
    "BatchProcessingError",
    "BookmarkInfo",
    "DeleteNotification",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaFIFOCore",
    "DeltaType",
    "Deltas",
    "FIFOClosedError",
    "FifoMode",
    "FilteringResourceEventHandler",
    "GenericLister",
    "IndexFunc",
    "IndexFuncError",
    "Indexer",
    "IndexerConflictError",
    "InformerCore",
    "InformerStoppedError",
    "KeyListerGetter",
    "ListMode",
    "ListPager",
    "ListWatch",
    "ListerWatcher",
    "PopProcessFunc",
    "ProcessBatchFunc",
    "ProcessorListener",
    "RealFIFO",
    "RealFIFOCore",
    "Reflector",
    "ReflectorCore",
    "ReflectorStore",
    "ReplacedAllInfo",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "Selector",
    "SharedIndexInformer",
    "SharedProcessor",
    "SingleFileTracker",
    "SteppedReflector",
    "Store",
    "SyncAllInfo",
    "ThreadSafeMap",
    "Transaction",
    "TransactionError",
    "TransactionStore",
    "TransactionType",
    "TransformFunc",
    "TypedIndexFunc",
    "UnknownIndexError",
    "UpdateNotification",
    "list_all",
    "list_all_by_namespace",
    "meta_namespace_index_func",
    "newest",
    "oldest",
    "process_deltas",
    "process_deltas_in_batch",
    "process_replaced_all",
    "reconcile_replacement",
    "tombstone",
    "wait_for_cache_sync",
]
