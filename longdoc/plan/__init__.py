"""Plan: split a document's pages into overlapping groups and decide what
each group may hold in flight (workspace admission, boundary cache)."""

from longdoc.plan.boundary import BoundaryCache
from longdoc.plan.groups import Group, plan_groups
from longdoc.plan.workspace import Workspace

__all__ = ["BoundaryCache", "Group", "Workspace", "plan_groups"]
