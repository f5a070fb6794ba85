"""The papers medrl implements and the baselines they compare with: one table, cited by name.

Everything a user reads (recipe ``paper:`` lines, a run's ``config.yaml``, eval reports,
``--help``, docs) names a paper by its short name and, where one exists, its arXiv id, never by
an internal file name. :func:`cite` formats one citation; :func:`resolve_citation` rewrites an
old-style citation that still names a seed file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    name: str
    title: str
    authors: str
    year: int
    arxiv: str | None = None
    code: str | None = None

    @property
    def ref(self) -> str:
        """``"MRPO (Jung et al. 2026, arXiv 2606.31825)"``."""
        where = f"arXiv {self.arxiv}" if self.arxiv else "arXiv id: see the paper"
        return f"{self.name} ({self.authors} {self.year}, {where})"


#: The five methods medrl implements.
METHODS: dict[str, Paper] = {p.name: p for p in (
    Paper("MRPO", "Breaking Failure Cascades: Step-Aware Reinforcement Learning for Medical Multimodal Reasoning",
          "Jung et al.", 2026, "2606.31825", "https://github.com/dmis-lab/MRPO"),
    Paper("ARMed", "Breaking Reward Collapse: Adaptive Reinforcement for Open-ended Medical Reasoning with "
          "Enhanced Semantic Discrimination", "Liu et al.", 2025, "2508.12957"),
    Paper("CAPO", "CAPO: Reinforcing Consistent Reasoning in Medical Decision-Making", "Jiang et al.", 2025,
          "2506.12849"),
    Paper("MediX-R1", "MediX-R1: Open Ended Medical Reinforcement Learning", "Mullappilly et al.", 2026,
          "2602.23363", "https://github.com/mbzuai-oryx/MediX-R1"),
    Paper("StepGRPO", "R1-VL: Learning to Reason with Multimodal Large Language Models via Step-wise Group "
          "Relative Policy Optimization", "Zhang et al.", 2025, "2503.12937", "https://github.com/jingyi0000/R1-VL"),
)}

#: The RL baselines the papers compare with.
BASELINES: dict[str, Paper] = {p.name: p for p in (
    Paper("GRPO", "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models",
          "Shao et al.", 2024, "2402.03300"),
    Paper("DAPO", "DAPO: An Open-Source LLM Reinforcement Learning System at Scale", "Yu et al.", 2025, "2503.14476"),
    Paper("Dr. GRPO", "Understanding R1-Zero-Like Training: A Critical Perspective", "Liu et al.", 2025, "2503.20783"),
    Paper("GSPO", "Group Sequence Policy Optimization", "Zheng et al.", 2025, "2507.18071"),
    Paper("GDPO", "GDPO: Group reward-Decoupled Normalization Policy Optimization for Multi-reward RL Optimization", "Liu et al.", 2026, "2601.05242"),
)}

PAPERS: dict[str, Paper] = {**METHODS, **BASELINES}

#: Internal seed-file stems of the five papers -> paper name (for rewriting old citations).
_SEED_FILES = {"000_20b05565d28598f4": "MRPO", "001_46ab1c0cc2c66f17": "ARMed", "002_37d042df30c2f660": "CAPO",
               "003_d5d6a0d73a50ab79": "MediX-R1", "004_e0b907c1e61319f8": "StepGRPO"}
_SEED_RE = re.compile(r"\b(00[0-4])_[0-9a-f]{0,16}(?:\.txt)?")


def paper(name: str) -> Paper:
    """The :class:`Paper` called ``name`` (case-insensitive; "MediX", "Dr.GRPO" accepted)."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    for p in PAPERS.values():
        if re.sub(r"[^a-z0-9]", "", p.name.lower()) == key or (key == "medix" and p.name == "MediX-R1"):
            return p
    raise KeyError(f"unknown paper {name!r}; known: {', '.join(PAPERS)}")


def cite(name: str, where: str = "") -> str:
    """``"MRPO (Jung et al. 2026, arXiv 2606.31825) Eq. 7"``: a paper by name with its arXiv id,
    plus a section/equation/table when given."""
    return paper(name).ref + (f" {where}" if where else "")


def resolve_citation(text: str) -> str:
    """Replace seed-file names ("000_20b05565d28598f4.txt", "003_") in ``text`` by the paper's
    name and arXiv id; text without them is returned unchanged. Used on recipe ``paper:`` lines
    read from older recipe files, so a run's config.yaml and reports never show file names."""
    if not text or not _SEED_RE.search(text):
        return text

    def sub(m: re.Match) -> str:
        name = next(v for k, v in _SEED_FILES.items() if k.startswith(m.group(1)))
        p = METHODS[name]
        return f"arXiv {p.arxiv}" if p.arxiv else "arXiv id: see the paper"

    return _SEED_RE.sub(sub, text)


def bibliography() -> list[str]:
    """One line per paper (methods first): name, title, authors, year, arXiv id, code."""
    out = []
    for p in PAPERS.values():
        out.append(f"{p.name}: {p.title}. {p.authors} {p.year}. "
                   + (f"arXiv:{p.arxiv}" if p.arxiv else "arXiv id: see the paper")
                   + (f". Code: {p.code}" if p.code else ""))
    return out
