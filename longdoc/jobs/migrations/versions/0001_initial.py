"""Initial schema: api_keys, jobs, job_pages, webhook_deliveries.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant", sa.String(63), nullable=False),
        sa.Column("key_prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("webhook_secret", sa.String(128), nullable=False),
        sa.Column("rate_limit_per_minute", sa.Integer(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("revoked_at"),
        _ts("last_used_at"),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )
    op.create_index("ix_api_keys_tenant", "api_keys", ["tenant"])

    op.create_table(
        "jobs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant", sa.String(63), nullable=False),
        sa.Column("api_key_id", sa.String(32), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("lane", sa.String(8), nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("media_type", sa.String(127), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("options_hash", sa.String(64), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("callback_url", sa.Text(), nullable=True),
        sa.Column("pages_total", sa.Integer(), nullable=True),
        sa.Column("pages_done", sa.Integer(), nullable=False),
        sa.Column("failed_pages", sa.JSON(), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("engine", sa.String(64), nullable=True),
        sa.Column("engine_version", sa.String(255), nullable=True),
        sa.Column("timings", sa.JSON(), nullable=False),
        sa.Column("peak_rss_bytes", sa.BigInteger(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _ts("created_at", nullable=False),
        _ts("queued_at"),
        _ts("started_at"),
        _ts("finished_at"),
        _ts("expires_at"),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("worker_id", sa.String(128), nullable=True),
        _ts("heartbeat_at"),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"], name="fk_jobs_api_key_id_api_keys"),
        sa.UniqueConstraint("tenant", "idempotency_key", name="uq_jobs_tenant_idempotency_key"),
    )
    op.create_index("ix_jobs_tenant_created", "jobs", ["tenant", "created_at"])
    op.create_index("ix_jobs_tenant_sha256", "jobs", ["tenant", "sha256"])
    op.create_index("ix_jobs_dispatch", "jobs", ["state", "priority", "queued_at"])

    op.create_table(
        "job_pages",
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("text_source", sa.String(16), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("job_id", "page", name="pk_job_pages"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_job_pages_job_id_jobs", ondelete="CASCADE"),
    )

    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        _ts("created_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_webhook_deliveries_job_id_jobs", ondelete="CASCADE"),
    )
    op.create_index("ix_webhook_deliveries_job_id", "webhook_deliveries", ["job_id"])


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_table("job_pages")
    op.drop_table("jobs")
    op.drop_table("api_keys")
