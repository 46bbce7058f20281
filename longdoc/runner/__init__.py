"""What runs a job: the task steps (`steps`), what they write to the job's
record (`finisher`), leases and heartbeats (`lease`), the reconciler that
finds lost work and retries it (`reconciler`), room to start a job
(`starts`), and the two transports that carry tasks to the steps behind one
protocol (`transport`): Celery for the fleet (`celery_app`), pools of
threads in the server process for the embedded backend (`inprocess`)."""
