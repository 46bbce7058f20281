"""The HTTP routes, one module per area: jobs, operations, administration, the console."""
