"""Object storage: the store interface, the local-folder store, the per-tenant
key layout and a pipeline checkpoint kept in the store.

The service builds one store with :func:`store_from_url` (``storage.url``)
and addresses objects only through :mod:`longdoc.storage.keys`.
"""

from longdoc.storage import keys
from longdoc.storage.base import ObjectStore, check_key
from longdoc.storage.checkpoint import StoreCheckpoint
from longdoc.storage.factory import store_from_url
from longdoc.storage.local import LocalStore

__all__ = ["LocalStore", "ObjectStore", "StoreCheckpoint", "check_key", "keys", "store_from_url"]
