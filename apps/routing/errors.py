"""Problems of the SLA policies."""

from apps.core.errors import Conflict


class SlaDefaultExists(Conflict):
    """The widget has a default SLA policy (`department_id` null) already; there is at most one."""

    code, title = "sla_default_exists", "Default SLA policy exists"


class SlaDepartmentTaken(Conflict):
    """Another SLA policy of the widget is for this department; there is at most one per department."""

    code, title = "sla_department_taken", "Department has an SLA policy"
