"""The object key layout (one place builds every key)::

    tenants/{tenant}/jobs/{job_id}/original            the uploaded bytes
    tenants/{tenant}/jobs/{job_id}/checkpoint/...      pipeline checkpoint
    tenants/{tenant}/jobs/{job_id}/exports/result.{md,json,txt}
    tenants/{tenant}/jobs/{job_id}/work/group-000003/...  a page group prepared for an engine worker

Tenant names match ``[a-z0-9][a-z0-9_-]{0,62}`` and job ids are uuid4 hex
(32 lowercase hex digits); anything else raises :class:`InvalidTenant` or
:class:`InvalidObjectKey` before a key is built, so no caller-supplied value
can reach outside its tenant's folder.
"""

from __future__ import annotations

import re
import uuid

from longdoc.errors import InvalidObjectKey, InvalidTenant
from longdoc.export.formats import FORMATS

TENANT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
JOB_ID_RE = re.compile(r"[0-9a-f]{32}")
EXPORT_FORMATS = FORMATS  # longdoc.export.formats


def new_job_id() -> str:
    """A fresh job id (uuid4 hex)."""
    return uuid.uuid4().hex


def check_tenant(tenant: str) -> str:
    """Return ``tenant`` if it is a valid tenant name, else raise InvalidTenant."""
    if not isinstance(tenant, str) or not TENANT_RE.fullmatch(tenant):
        raise InvalidTenant(f"{tenant!r} is not a valid tenant name.", tenant=str(tenant)[:80])
    return tenant


def check_job_id(job_id: str) -> str:
    """Return ``job_id`` if it is 32 lowercase hex digits, else raise InvalidObjectKey."""
    if not isinstance(job_id, str) or not JOB_ID_RE.fullmatch(job_id):
        raise InvalidObjectKey(f"{job_id!r} is not a job id.", hint="Job ids are 32 lowercase hex digits (uuid4).")
    return job_id


def tenant_prefix(tenant: str) -> str:
    return f"tenants/{check_tenant(tenant)}"


def job_prefix(tenant: str, job_id: str) -> str:
    """Everything stored for one job (delete it with ``store.delete_prefix``)."""
    return f"{tenant_prefix(tenant)}/jobs/{check_job_id(job_id)}"


def original_key(tenant: str, job_id: str) -> str:
    return f"{job_prefix(tenant, job_id)}/original"


def checkpoint_prefix(tenant: str, job_id: str) -> str:
    return f"{job_prefix(tenant, job_id)}/checkpoint"


def work_prefix(tenant: str, job_id: str, group: int | None = None) -> str:
    """Where the fleet's render stage leaves page groups for engine workers
    (one group's, or all of them with ``group`` None)."""
    base = f"{job_prefix(tenant, job_id)}/work"
    return base if group is None else f"{base}/group-{int(group):06d}"


def export_key(tenant: str, job_id: str, fmt: str) -> str:
    """Key of the final export in ``fmt`` (one of :data:`EXPORT_FORMATS`)."""
    if fmt not in EXPORT_FORMATS:
        raise InvalidObjectKey(f"{fmt!r} is not an export format.", hint=f"Use one of {', '.join(EXPORT_FORMATS)}.")
    return f"{job_prefix(tenant, job_id)}/exports/result.{fmt}"
