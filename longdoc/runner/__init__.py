"""What runs a job: the task steps (`steps`), what they write to the job's
record (`finisher`), leases and heartbeats (`lease`), the reconciler that
finds lost work and retries it (`reconciler`), the dispatcher the API hands a
new job to (`dispatch`), and the two transports that carry tasks to the
steps behind one protocol: Celery for the fleet (`celery_app`), pools of
threads in the server process for the embedded backend (`inprocess`)."""
