"""The fleet: job tasks (what the Celery workers run, with leases) and the
durable webhook outbox.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "job_tasks",
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("queue", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("takeovers", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("lease", sa.String(32), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        _ts("enqueued_at", nullable=False),
        _ts("started_at"),
        _ts("heartbeat_at"),
        _ts("finished_at"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_job_tasks_job_id_jobs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id", "name", name="pk_job_tasks"),
    )
    op.create_index("ix_job_tasks_state_queue", "job_tasks", ["state", "queue", "enqueued_at"])

    op.create_table(
        "webhook_outbox",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("delivery_id", sa.String(36), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _ts("next_attempt_at", nullable=False),
        sa.Column("claimed_by", sa.String(128), nullable=True),
        _ts("claimed_until"),
        sa.Column("last_error", sa.Text(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("delivered_at"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_webhook_outbox_job_id_jobs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_outbox"),
        sa.UniqueConstraint("job_id", "event", name="uq_webhook_outbox_job_id_event"),
    )
    op.create_index("ix_webhook_outbox_due", "webhook_outbox", ["state", "next_attempt_at"])
    op.create_index("ix_webhook_outbox_job_id", "webhook_outbox", ["job_id"])


def downgrade() -> None:
    op.drop_index("ix_webhook_outbox_job_id", table_name="webhook_outbox")
    op.drop_index("ix_webhook_outbox_due", table_name="webhook_outbox")
    op.drop_table("webhook_outbox")
    op.drop_index("ix_job_tasks_state_queue", table_name="job_tasks")
    op.drop_table("job_tasks")
