"""Old name of :mod:`medrl.judges.replies` (the parsers of judge replies), kept so code that
imported it keeps working; new code imports :mod:`medrl.judges.replies`."""

from medrl.judges.replies import *  # noqa: F401,F403
from medrl.judges.replies import (  # noqa: F401 (the names this module always had)
    AUDIT_STATUSES,
    VERDICT_FIELDS,
    VerdictParseError,
    parse_audit,
    parse_json_object,
    parse_key_steps,
    parse_o_x,
    parse_score,
    parse_step_verdicts,
    parse_yes_no,
    strip_thinking,
)
