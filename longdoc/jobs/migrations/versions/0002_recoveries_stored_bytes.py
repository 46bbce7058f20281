"""Jobs: crash recoveries (attempt cap) and stored bytes (tenant quota).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("recoveries", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("stored_bytes", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("stored_bytes")
        batch.drop_column("recoveries")
