"""The native engine (torch + transformers, the ``torch`` extra): see :mod:`.engine`.

Nothing here imports torch at import time except the modules that compute
(attention, kv_cache, rope, srswa, decoder); :mod:`.engine` is what the
registry imports.
"""
