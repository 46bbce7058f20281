"""Migration scripts, applied in order by ``longdoc.jobs.db.migrate``."""
