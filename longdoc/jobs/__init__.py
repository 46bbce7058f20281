"""Jobs: database records, job states, repositories, runner and dispatch."""
