"""Which pages to check by eye: a job's review pages, each page row's
confidence and flags (null on rows written before).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("review_pages", sa.JSON(), nullable=False, server_default="[]"))
    with op.batch_alter_table("job_pages") as batch:
        batch.add_column(sa.Column("confidence", sa.Float(), nullable=True))
        batch.add_column(sa.Column("flags", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("job_pages") as batch:
        batch.drop_column("flags")
        batch.drop_column("confidence")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("review_pages")
