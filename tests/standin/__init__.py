"""STAND-INS for what cannot run on a machine without a GPU: a model server
(:mod:`tests.standin.model_server`) for tests and demos. Nothing here is a
model; each says so in its name and docstring."""
