"""Judges: the protocol, an OpenAI-compatible client, an offline reference judge, a server."""

from medrl.judges.base import JUDGES, Judge, JudgeStats, gather_bounded, run_sync

__all__ = ["JUDGES", "Judge", "JudgeStats", "gather_bounded", "run_sync"]
