"""Alembic migrations of the job database, shipped inside the package; run them with :func:`longdoc.jobs.db.migrate`."""
