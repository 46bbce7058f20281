"""The worker side: what runs jobs (the pipeline with its database,
store, scratch space and webhook outbox), in the server process for the
embedded backend or in ``longdoc worker`` processes on the Celery fleet."""
