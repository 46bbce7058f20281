"""One execution model: leases live on task rows only. The job row's lease
(``worker_id``, ``heartbeat_at``) and its crash count (``recoveries``) go;
what the whole-job runner left behind is picked up by the reconciler (a
queued or running job with no task gets its first one, and resumes from
its checkpoint).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("heartbeat_at")
        batch.drop_column("worker_id")
        batch.drop_column("recoveries")


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("recoveries", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("worker_id", sa.String(128), nullable=True))
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
