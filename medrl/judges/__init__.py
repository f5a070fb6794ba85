"""Judges: the protocol, an OpenAI-compatible client, an offline reference judge, a server.

``build_judge("reference")`` or ``build_judge("openai:gpt-5-mini", base_url=...)``; see
docs/judges.md. Importing this package stays light (no openai / torch until a judge is built).
"""

from medrl.judges.base import JUDGES, Judge, JudgeStats, gather_bounded, run_sync
from medrl.judges.factory import build_judge, shared_judge

__all__ = ["JUDGES", "Judge", "JudgeStats", "build_judge", "gather_bounded", "run_sync", "shared_judge"]
