"""Judges: the protocol, an OpenAI-compatible client, an offline reference judge, a server.

``build_judge("reference")`` or ``build_judge("openai:gpt-5-mini", base_url=...)``; see
docs/judges.md. Importing this package stays light (no openai / torch until a judge is built).
"""

from medrl.judges.base import (
    JUDGES,
    Judge,
    JudgeAuthError,
    JudgeStats,
    gather_bounded,
    judge_identity,
    require_image_support,
    run_sync,
)
from medrl.judges.factory import build_judge, resolve_images, shared_judge

__all__ = ["JUDGES", "Judge", "JudgeAuthError", "JudgeStats", "build_judge", "gather_bounded", "judge_identity",
           "require_image_support", "resolve_images", "run_sync", "shared_judge"]
