"""System prompts per recipe style, the chat prompt TRL expects, and SFT targets.

Styles: ``think_answer`` (MRPO, ARMed, CAPO, StepGRPO: reasoning in ``<think>``, answer in
``<answer>``), ``modality_think_answer`` (MediX-R1 Sec. 2.2: the same,
preceded by one of the 16 modality tags) and ``plain`` (a direct answer; the SFT baseline).
The wording is this project's own.
"""

from __future__ import annotations

from medrl.common.modality import MODALITY_TAGS

_THINK_ANSWER = (
    "You are a careful medical imaging specialist answering a question about the image. "
    "First reason about it step by step inside <think> </think>: say what kind of image it is, "
    "which anatomy and findings you see, and how they lead to your conclusion, one sentence per "
    "step. Then write only the final, concise answer inside <answer> </answer>.\n"
    "Format: <think> your reasoning </think> <answer> your answer </answer>"
)

_MODALITY_THINK_ANSWER = (
    "You are a careful medical imaging specialist answering a question about the image. "
    "Begin your reply with the imaging modality, written as exactly one of these tags: "
    + ", ".join(MODALITY_TAGS)
    + ". Then reason about the image step by step inside <think> </think>, and finally give only "
    "the concise answer inside <answer> </answer>.\n"
    "Format: MODALITY_TAG <think> your reasoning </think> <answer> your answer </answer>"
)

_PLAIN = (
    "You are a medical imaging specialist. Answer the question about the image with a short, "
    "precise answer and nothing else."
)

SYSTEM_PROMPTS: dict[str, str] = {
    "think_answer": _THINK_ANSWER,
    "modality_think_answer": _MODALITY_THINK_ANSWER,
    "plain": _PLAIN,
}


def _check_style(style: str) -> None:
    if style not in SYSTEM_PROMPTS:
        raise ValueError(f"unknown prompt style {style!r}; known: {sorted(SYSTEM_PROMPTS)}")


def build_prompt(record, style: str = "think_answer", *, system: str | None = None) -> list[dict]:
    """Conversational prompt for TRL: a system turn and a user turn whose content is one
    ``{"type": "image"}`` placeholder per image followed by the question text. GRPOTrainer fills
    the placeholders from the dataset's ``image`` column (trl ``prepare_multimodal_messages``).
    Every content is a list of parts, so the column has one Arrow type.
    """
    _check_style(style)
    text = system if system is not None else SYSTEM_PROMPTS[style]
    user = [{"type": "image", "text": None} for _ in record.images]
    user.append({"type": "text", "text": record.question})
    return [
        {"role": "system", "content": [{"type": "text", "text": text}]},
        {"role": "user", "content": user},
    ]


def evidence_reasoning(record) -> str:
    """A short reasoning written from the record's own evidence (modality, organ/location,
    detected organs, answer), for SFT targets of records without gold reasoning.

    This is a heuristic template, not expert reasoning: it restates what the dataset annotates
    about the image and ties it to the reference answer.
    """
    ev = record.evidence()
    steps = []
    if ev.get("modality"):
        steps.append(f"The imaging modality is {ev['modality']}.")
    if ev.get("organ"):
        steps.append(f"It shows the {str(ev['organ']).lower()} region.")
    if ev.get("findings"):
        steps.append("Visible structures include " + ", ".join(ev["findings"]) + ".")
    if ev.get("modality") and ev.get("organ"):
        # a focusing step tied to the evidence; restating the question ("The question asks ...")
        # would be meta-commentary, which the step judges rate invalid (MRPO Eq. 3)
        steps.append(f"The question is answered by examining the {str(ev['organ']).lower()} "
                     f"on this {ev['modality']} image.")
    steps.append(f"Based on these observations, the answer is {ev['answer']}.")
    return " ".join(steps)


def format_target(record, style: str = "think_answer") -> str:
    """SFT target text for ``record`` in ``style``.

    ``think_answer``: ``<think>reasoning</think><answer>answer</answer>`` where the reasoning is
    the gold reasoning, or :func:`evidence_reasoning` (a heuristic template) when there is none.
    ``modality_think_answer``: the record's modality tag (``OTHER`` when unknown) first.
    ``plain``: the answer alone.
    """
    _check_style(style)
    if style == "plain":
        return record.answer
    reasoning = (record.gold_reasoning or "").strip() or evidence_reasoning(record)
    body = f"<think>{reasoning}</think><answer>{record.answer}</answer>"
    if style == "modality_think_answer":
        return f"{record.modality_tag or 'OTHER'} {body}"
    return body
