"""Jobs: database records, job states, repositories, task steps, reconciler and dispatch."""
