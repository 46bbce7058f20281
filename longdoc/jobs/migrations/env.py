"""Alembic environment for longdoc's job database.

Driven programmatically by :func:`longdoc.jobs.db.migrate`, which passes an
open connection in ``config.attributes["connection"]`` (inside its own
transaction and lock). Without one (the ``alembic`` command line with a
``sqlalchemy.url``), it connects itself. SQLite runs in batch mode so later
migrations can alter tables.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from longdoc.jobs.models import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    assert url is not None, "alembic_config(url) sets sqlalchemy.url"
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


def run_migrations_offline() -> None:
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
