"""Job records: the database models, connections and migrations, job states, and the repositories (jobs, keys, tasks) that are the only code reading and writing them."""
