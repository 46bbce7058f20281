"""The worker side: what runs jobs' tasks (the pipeline with its database,
store, scratch space and webhook outbox) and the two transports that hand
them tasks: Celery for ``longdoc worker`` processes on the fleet, pools of
threads in the server process for the embedded backend."""
