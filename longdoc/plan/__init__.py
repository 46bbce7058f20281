"""Plan: split a document's pages into overlapping groups and decide what
each group may hold in flight (workspace, admission by watermark, boundary
cache) and when it gets the engine (fair turns across tenants)."""

from longdoc.plan.admission import Admission, Reservation
from longdoc.plan.boundary import BoundaryCache
from longdoc.plan.groups import DocumentPlan, Group, plan_groups
from longdoc.plan.turns import FairTurns
from longdoc.plan.workspace import Workspace

__all__ = ["Admission", "BoundaryCache", "DocumentPlan", "FairTurns", "Group", "Reservation", "Workspace", "plan_groups"]
