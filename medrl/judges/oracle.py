"""The oracle judge: exact verdicts for phantom records, with optional seeded noise.

On phantom records (:mod:`medrl.data.sources.phantom`) the truth of every step and answer is known
from the generator's parameters, so this judge computes the verdicts the Judge protocol asks for
exactly (:func:`~medrl.judges.phantom_truth.oracle_step_verdicts`,
:func:`~medrl.judges.phantom_truth.oracle_answer_correct`). Putting it, a noisy copy of it, or any
other judge (``reference``, ``openai:...``) behind the same recipe makes the judge an experimental
variable.

Where the parameters come from: the judge is called the way every judge is (question, reference,
prediction, steps, ``evidence``, ``image``); it reads the parameters from ``evidence["phantom"]``
when the record's evidence carries them, else from the item's image - a phantom PNG stores its
parameters in a ``medrl_phantom`` text chunk, which survives decoding to a PIL image. It never
looks at the pixels and never judges from the reference text alone: an item without parameters
is unscored (``Verdict.unscored``), never guessed.

Noise (``oracle:EPS``): each binary verdict - answer correctness, each step's gold alignment and
its answer contribution separately, consistency, a binary grade - is flipped with probability
``epsilon``. The flip is a pure function of (seed, item, rollout text, step index, verdict kind)
through BLAKE2b, so reruns, caches and several processes agree, and the flips are independent
across items, rollouts and steps.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from medrl.judges.base import JUDGES, JudgeStats
from medrl.types import StepVerdict, Verdict

_NO_PARAMS = ("oracle: no phantom parameters for this item (it reads them from evidence['phantom'] or from the "
              "phantom image's medrl_phantom text chunk); the oracle judges phantom records only")


def parse_oracle_spec(spec: str) -> float:
    """``"oracle"`` -> 0.0, ``"oracle:0.2"`` -> 0.2; ValueError for anything else."""
    kind, _, rest = spec.partition(":")
    if kind.strip().lower() != "oracle":
        raise ValueError(f"not an oracle judge spec: {spec!r}")
    if not rest.strip():
        return 0.0
    try:
        eps = float(rest)
    except ValueError:
        raise ValueError(f"judge spec {spec!r}: the noise after 'oracle:' must be a number in [0, 1], "
                         "e.g. 'oracle:0.2'") from None
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"judge spec {spec!r}: the noise must lie in [0, 1]")
    return eps


@JUDGES.register("oracle")
class OracleJudge:
    """Exact judge for phantom records; ``epsilon`` > 0 flips each verdict with that probability.

    Args:
        epsilon: flip probability of every binary verdict (0 = exact).
        seed: the noise seed (same seed, same flips).
        images: accepted for the factory's signature; the oracle always takes the item's image
            (``images`` is True so evaluation passes it) and reads only the parameters stored
            with it.
    """

    #: takes the item's image - to read the parameters stored in the file, never its pixels
    images = True
    supports_images = True

    def __init__(self, epsilon: float = 0.0, seed: int = 0, *, images: bool = True, **_ignored: Any):
        if not 0.0 <= float(epsilon) <= 1.0:
            raise ValueError(f"OracleJudge: epsilon must lie in [0, 1], got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.seed = int(seed)
        self.name = "oracle" if self.epsilon == 0 else f"oracle:{self.epsilon:g}"
        self.stats = JudgeStats()
        #: verdicts given / flipped by the noise, by kind ("answer", "alignment", ...)
        self.noise_counts: dict[str, list[int]] = {}

    def __repr__(self) -> str:
        return f"OracleJudge(epsilon={self.epsilon:g}, seed={self.seed})"

    def identity(self) -> dict:
        """What decides the verdicts (stored in eval folders' config.json)."""
        import sys

        import medrl.judges.phantom_truth as truth
        from medrl.judges.base import source_version

        return {"spec": self.name, "endpoint": None, "model": None, "epsilon": self.epsilon, "seed": self.seed,
                "prompt_version": source_version(truth) + "+" + source_version(sys.modules[__name__]),
                "images": False}

    # ---------------------------------------------------------------- noise
    def flip(self, kind: str, *key: Any) -> bool:
        """Whether the verdict identified by ``(kind, *key)`` is flipped (probability epsilon)."""
        if self.epsilon <= 0.0:
            return False
        text = "\x1f".join(str(k) for k in (self.seed, kind, *key))
        u = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") / 2.0**64
        return u < self.epsilon

    def _noisy(self, value: int | bool, kind: str, *key: Any) -> int:
        flipped = self.flip(kind, *key)
        c = self.noise_counts.setdefault(kind, [0, 0])
        c[0] += 1
        c[1] += int(flipped)
        return int(bool(value) ^ flipped)

    @staticmethod
    def _params(evidence: Any = None, image: Any = None) -> dict | None:
        from medrl.judges.phantom_truth import phantom_params

        return phantom_params(evidence) or phantom_params(image)

    # ---------------------------------------------------------------- protocol
    async def answer_correct(self, question: str, reference: str, prediction: str, *, image: Any = None,
                             evidence: dict | None = None, check: str = "strict") -> Verdict:
        """Exact correctness from the parameters (:func:`~medrl.judges.phantom_truth.oracle_answer_correct`),
        whichever check is asked (``check``: the truth is the same)."""
        from medrl.judges.phantom_truth import oracle_answer_correct

        self.stats.calls += 1
        p = self._params(evidence, image)
        if p is None:
            self.stats.failures += 1
            return Verdict.unscored(_NO_PARAMS)
        ok = oracle_answer_correct(p, prediction)
        out = self._noisy(ok, "answer", p.get("id"), prediction)
        return Verdict.ok(bool(out), raw=f"exact={int(bool(ok))} flipped={int(out != int(bool(ok)))}")

    async def verify_steps(self, question: str, reference: str, steps: Sequence[str], *,
                           gold_reasoning: str | None = None, evidence: dict | None = None,
                           image: Any = None, step_prompt: str = "hardened") -> Verdict:
        """Exact step verdicts (:func:`~medrl.judges.phantom_truth.oracle_step_verdicts`, MRPO App.
        H.2's criteria from the parameters, whichever ``step_prompt`` is named); with noise, each
        step's two fields flip independently."""
        from medrl.judges.phantom_truth import oracle_step_verdicts

        self.stats.calls += 1
        p = self._params(evidence, image)
        if p is None:
            self.stats.failures += 1
            return Verdict.unscored(_NO_PARAMS)
        steps = list(steps)
        exact = oracle_step_verdicts(p, steps)
        rollout = hashlib.blake2b("\n".join(steps).encode(), digest_size=16).hexdigest()  # this rollout
        out = []
        for k, v in enumerate(exact):
            ga = self._noisy(v.gold_alignment, "alignment", p.get("id"), rollout, k)
            ac = self._noisy(v.answer_contribution, "contribution", p.get("id"), rollout, k)
            why = v.reason if (ga, ac) == (v.gold_alignment, v.answer_contribution) else v.reason + " [noise flip]"
            out.append(StepVerdict(ga, ac, why))
        return Verdict.ok(out, raw=json.dumps([[v.gold_alignment, v.answer_contribution, v.reason] for v in out]))

    async def consistency(self, question: str, reasoning: str, answer: str, *, check: str = "paper") -> Verdict:
        """Whether the answer follows from the reasoning (texts only: consistency needs no truth;
        the same for every ``check``)."""
        from medrl.judges.phantom_truth import oracle_consistent

        self.stats.calls += 1
        ok = oracle_consistent(reasoning, answer)
        out = self._noisy(ok, "consistency", question, reasoning, answer)
        return Verdict.ok(bool(out), raw=f"exact={int(ok)}")

    async def grade(self, question: str, reference: str, prediction: str, *, rubric: str = "binary",
                    image: Any = None, evidence: dict | None = None, rounds: int = 1,
                    check: str = "paper") -> Verdict:
        """Binary: answer correctness as 0/1. Report rubric: 5 x the share of the answer's stated
        fields that are right (0 when it states none). ``rounds`` and ``check`` have no effect (the
        truth does not change when asked again, or asked otherwise)."""
        from medrl.judges.phantom_truth import claim_correct, parse_step_claims

        if rubric == "binary":
            v = await self.answer_correct(question, reference, prediction, image=image, evidence=evidence)
            return Verdict.ok(1.0 if v.value else 0.0, raw=v.raw) if v.scored else v
        if rubric != "report":
            raise ValueError(f"rubric must be 'binary' or 'report', got {rubric!r}")
        self.stats.calls += 1
        p = self._params(evidence, image)
        if p is None:
            self.stats.failures += 1
            return Verdict.unscored(_NO_PARAMS)
        claims = parse_step_claims(prediction)
        score = 5.0 * sum(claim_correct(f, v, p) for f, v in claims.items()) / len(claims) if claims else 0.0
        return Verdict.ok(round(score), raw=json.dumps(claims))

    async def audit_vqa(self, question: str, answer: str, *, answer_type: str | None = None) -> Verdict:
        """Phantom pairs are generated from their parameters: consistent unless empty."""
        self.stats.calls += 1
        if not (question or "").strip() or not (answer or "").strip():
            return Verdict.ok({"status": "drop", "new_q": question, "new_a": answer,
                               "notes": "empty question or answer"})
        return Verdict.ok({"status": "consistent", "new_q": question, "new_a": answer,
                           "notes": "oracle: pairs are generated from known parameters"})

    async def extract_key_steps(self, question: str, answer: str, reasoning: str) -> Verdict:
        """StepGRPO key steps: the values the reasoning states, in order (``CT``, ``hypodense``,
        ``liver``...); unscored when it states none."""
        from medrl.judges.phantom_truth import parse_step_claims
        from medrl.answers.completion import split_steps

        self.stats.calls += 1
        out: list[str] = []
        for st in split_steps(reasoning or ""):
            for f, v in parse_step_claims(st.text).items():
                if f == "presence":
                    v = "focal lesion" if v == "yes" else "no focal lesion" if v == "no" else v
                if "|" not in v and v not in out:
                    out.append(v)
        if not out:
            return Verdict.unscored("oracle: the reasoning states no phantom field")
        return Verdict.ok(out[:6])
