"""The access audit trail: its records and batched writer (`trail`) and the ASGI middleware that feeds it (`middleware`)."""
