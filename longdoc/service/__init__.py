"""The HTTP service: FastAPI app over the job layer (DESIGN §5)."""
