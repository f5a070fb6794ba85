"""Where one RL step's time goes: MedGRPOTrainer against a plain-PyTorch floor on the same batch.

The step is the effects harness's phantom GRPO step (:mod:`medrl.effects.runner`: the ``grpo``
recipe with :func:`~medrl.effects.runner.rl_overrides`, the oracle judge, a tiny Qwen2.5-VL built
by :func:`medrl.models.tiny.build_phantom_tiny_vlm` at the full profile's size), with ``--prompts``
prompts x ``--generations`` rollouts per step (default 4 x 8). Arms, run in turn in one process
(interleaved rounds, the order alternating), each for ``--steps`` steps per round; the first round
is a warm-up and is not timed:

- ``floor``: the same step written directly with the model: the prompts' images processed once,
  ``generate`` with ``num_return_sequences`` (transformers encodes each image once and shares the
  encoding among the rollouts), a reference forward and a policy forward that also encode each
  image once (``mm_encoder_outputs``) and score only the completion, the GRPO loss with the KL
  term, backward, gradient clipping and an AdamW step.
- ``medrl``: ``MedGRPOTrainer`` as the harness builds it (:mod:`medrl.train.speed`'s defaults and
  speed-ups included).
- ``before``: the same with gradient checkpointing on (TRL's default) and
  :func:`~medrl.train.speed.undo_step_speedups` (every image processed and encoded once per
  rollout, TRL's fused LM head scoring every position): what a step cost before them.
- ``trl``: plain ``trl.GRPOTrainer`` on the same recipe with
  :func:`~medrl.train.speed.speed_up_step`: what medrl's hooks add beyond TRL.
- on request, ``with_gc``, ``images_repeated``, ``every_position``: ``medrl`` with one change
  taken back (gradient checkpointing on; images processed and encoded once per rollout; TRL's
  head scoring every position): what each change buys.

Per step and arm the components are timed: generation (TRL's ``_generate``: prompt processing,
``generate``, decoding), the reference log-probs, rewards and medrl's hooks (``_calculate_rewards``
with the correctness decision and the methods' hooks, then medrl's metrics, monitor and credit
logging), the policy forward (``compute_loss``), the backward, and the rest (the step minus those:
TRL's second processor call, padding, advantages, the optimizer step, data loading, logging). A
trainer's step runs from one ``on_step_begin`` to the next, so it holds everything the training
loop does. Each time is taken twice: CPU seconds of this process (``time.process_time``; with one
torch thread this is the work done, unaffected by other processes on a shared machine: the
measure to compare on a CPU) and wall seconds (what a run waits; on a GPU only the wall time
means anything). Printed: the median of each component per arm and the ratio of each arm's
median step to the floor's, for both clocks, with the machine's load average at each round.

    python benchmarks/step_profile.py [--rounds 4] [--steps 4] [--prompts 4] [--generations 8]
        [--arms floor,medrl,before,trl,with_gc,images_repeated,every_position] [--model DIR] [--json FILE]
    python benchmarks/step_profile.py --smoke      # seconds: a smaller model, 2 x 2 rollouts (tests)

One torch thread unless ``--threads``. A random tiny model nearly always writes
``--max-completion-length`` tokens and earns no reward, so its rewards cost less than a warm
model's; ``--model`` takes a warm-up model folder (``<effects out>/models/warmup/final``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: trainer arms: (trainer, gradient checkpointing, image de-duplication, completion-only scoring)
TRAINER_ARMS = {
    "medrl": ("medrl", False, True, True),
    "before": ("medrl", True, False, False),
    "trl": ("trl", False, True, True),
    # one speed-up taken back at a time (not run by default): what each buys
    "with_gc": ("medrl", True, True, True),
    "images_repeated": ("medrl", False, False, True),
    "every_position": ("medrl", False, True, False),
}
ARMS = ("floor", *TRAINER_ARMS)
DEFAULT_ARMS = ("floor", "medrl", "before", "trl")
COMPONENTS = ("generation", "reference", "rewards_hooks", "policy_forward", "backward", "rest")


# ----------------------------------------------------------------------------- timing


def stamp():
    """(wall, CPU) seconds now: the CPU time of this process counts only what this process ran,
    so it is the fair measure on a machine shared with other work (one torch thread)."""
    return time.perf_counter(), time.process_time()


def since(t0) -> tuple[float, float]:
    t1 = stamp()
    return t1[0] - t0[0], t1[1] - t0[1]


class StepClock:
    """Per-step component times (wall, CPU) of one trainer: wrappers add into the current step's
    dict; a callback (:meth:`callback`) opens a step at each ``on_step_begin`` and closes the
    previous one."""

    def __init__(self, sync):
        self.sync = sync
        self.steps: list[dict[str, tuple[float, float]]] = []
        self.current: dict[str, tuple[float, float]] | None = None
        self.t_begin = stamp()
        self.in_rewards = False

    def add(self, key: str, seconds: tuple[float, float]) -> None:
        if self.current is not None:
            w, c = self.current.get(key, (0.0, 0.0))
            self.current[key] = (w + seconds[0], c + seconds[1])

    def wrap(self, obj, name: str, key):
        """Replace ``obj.name`` by a timed wrapper; ``key(args, kwargs)`` names the component (None:
        not timed)."""
        fn = getattr(obj, name)
        clock = self

        def timed(*args, **kwargs):
            k = key(args, kwargs) if callable(key) else key
            if k is None:
                return fn(*args, **kwargs)
            clock.sync()
            t = stamp()
            try:
                return fn(*args, **kwargs)
            finally:
                clock.sync()
                clock.add(k, since(t))

        setattr(obj, name, timed)

    def callback(self):
        from transformers import TrainerCallback

        clock = self

        class _Steps(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                clock.sync()
                if clock.current is not None:
                    clock.current["step"] = since(clock.t_begin)
                    clock.steps.append(clock.current)
                clock.current, clock.t_begin = {}, stamp()

            def on_train_end(self, args, state, control, **kw):
                clock.current = None  # the block's last step has no successor to close it

        return _Steps()


def instrument(tr, clock: StepClock) -> None:
    """Time ``tr``'s components (instance-level wrappers; TRL's and medrl's code unchanged)."""
    ref = tr.ref_model
    clock.wrap(tr, "_generate", "generation")
    clock.wrap(tr, "_get_per_token_logps_and_entropies",
               lambda a, k: "reference" if (a[0] if a else k.get("model")) is ref and ref is not None else None)
    clock.wrap(tr, "compute_loss", "policy_forward")
    clock.wrap(tr, "training_step", "training_step")
    clock.wrap(tr, "_prepare_inputs", "prepare")

    fn = tr._calculate_rewards

    def rewards(*a, **k):  # medrl's hooks inside the reward call are not counted twice
        clock.in_rewards = True
        clock.sync()
        t = stamp()
        try:
            return fn(*a, **k)
        finally:
            clock.in_rewards = False
            clock.add("rewards_hooks", since(t))

    tr._calculate_rewards = rewards
    if hasattr(tr, "_hook"):  # MedGRPOTrainer: method hooks and logging after the rewards
        clock.wrap(tr, "_hook", lambda a, k: None if clock.in_rewards else "rewards_hooks")
        clock.wrap(tr, "_log_medrl_metrics", "rewards_hooks")
        for attr, meth in (("_monitor", "observe"), ("_credit", "log")):
            obj = getattr(tr, attr, None)
            if obj is not None and hasattr(obj, meth):
                clock.wrap(obj, meth, "rewards_hooks")
    tr.add_callback(clock.callback())


def components(step: dict[str, tuple[float, float]], which: int) -> dict[str, float]:
    """A trainer step's raw times -> the reported components (``rest`` = step minus the others);
    ``which``: 0 wall, 1 CPU."""
    t = {k: v[which] for k, v in step.items()}
    out = {k: t.get(k, 0.0) for k in ("generation", "reference", "rewards_hooks", "policy_forward")}
    out["backward"] = t.get("training_step", 0.0) - t.get("prepare", 0.0) - t.get("policy_forward", 0.0)
    out["rest"] = t["step"] - sum(out.values())
    out["step"] = t["step"]
    return out


# ----------------------------------------------------------------------------- the floor


class Floor:
    """The step written directly with the model (see the module docstring)."""

    def __init__(self, model_dir, records, args, sync, device):
        import torch
        from trl import prepare_multimodal_messages

        from medrl.data import to_hf_dataset
        from medrl.models import load_policy

        self.torch, self.sync, self.device, self.args = torch, sync, device, args
        self.policy, self.processor = load_policy(str(model_dir))
        self.ref, _ = load_policy(str(model_dir))
        for m in (self.policy, self.ref):
            m.to(device)
        self.policy.train()
        self.ref.eval()
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=args.lr)
        ds = to_hf_dataset(list(records)[: args.prompts])
        self.conversations = [prepare_multimodal_messages(row["prompt"], images=[row["image"]]) for row in ds]
        tok = self.processor.tokenizer
        gen = self.policy.generation_config
        eos = gen.eos_token_id if isinstance(gen.eos_token_id, list) else [gen.eos_token_id]
        self.eos = torch.tensor(eos, device=device)
        self.gen_kwargs = dict(do_sample=True, temperature=args.temperature, top_k=0, top_p=1.0,
                               max_new_tokens=args.max_completion_length, num_return_sequences=args.generations,
                               pad_token_id=tok.pad_token_id, eos_token_id=eos,
                               suppress_tokens=[self.policy.config.image_token_id])  # as TRL: no stray image token
        self.steps: list[dict[str, float]] = []

    def _timed(self, times, key, fn):
        self.sync()
        t = stamp()
        out = fn()
        self.sync()
        w, c = times.get(key, (0.0, 0.0))
        d = since(t)
        times[key] = (w + d[0], c + d[1])
        return out

    def _logps(self, model, seq, mask, enc, extra, keep):
        """Per-token log-probs of the last ``keep`` tokens, each image encoded once (``enc``)."""
        torch = self.torch
        out = model(input_ids=seq, attention_mask=mask, mm_encoder_outputs=enc, logits_to_keep=keep + 1, **extra)
        logits = out.logits[:, :-1].float()
        return torch.log_softmax(logits, -1).gather(-1, seq[:, -keep:, None]).squeeze(-1)

    def _encode(self, model, inputs, n):
        base = model.base_model
        enc = base.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"], return_dict=True) \
            if "image_grid_thw" in inputs else base.get_image_features(inputs["pixel_values"], return_dict=True)
        return model._expand_multimodal_outputs(inputs["input_ids"], {"image": enc}, expand_size=n)

    def step(self) -> None:
        torch, args = self.torch, self.args
        times: dict[str, tuple[float, float]] = {}
        self.sync()
        t0 = stamp()
        g = args.generations

        def process():
            enc = self.processor.apply_chat_template(self.conversations, add_generation_prompt=True, tokenize=True,
                                                     return_dict=True, return_tensors="pt", padding=True)
            return {k: v.to(self.device) for k, v in enc.items()}

        inputs = self._timed(times, "generation", process)
        with torch.no_grad():
            seq = self._timed(times, "generation", lambda: self.policy.generate(**inputs, **self.gen_kwargs))
        prompt_len = inputs["input_ids"].shape[1]
        comp = seq[:, prompt_len:]
        keep = comp.shape[1]
        is_eos = torch.isin(comp, self.eos)
        first = torch.where(is_eos.any(1), is_eos.int().argmax(1), torch.full_like(is_eos[:, 0], keep, dtype=torch.long))
        comp_mask = (torch.arange(keep, device=self.device)[None] <= first[:, None]).to(inputs["attention_mask"].dtype)
        mask = torch.cat([inputs["attention_mask"].repeat_interleave(g, 0), comp_mask], 1)
        extra = {}
        for k in ("image_grid_thw", "mm_token_type_ids", "token_type_ids"):
            if k in inputs:
                v = inputs[k].repeat_interleave(g, 0)
                if k != "image_grid_thw":
                    v = torch.cat([v, v.new_zeros(v.shape[0], keep)], 1)
                extra[k] = v
        advantages = torch.randn(seq.shape[0], 1, device=self.device)  # any values: the cost is the same

        def reference():
            with torch.no_grad():
                return self._logps(self.ref, seq, mask, self._encode(self.ref, inputs, g), extra, keep)

        ref = self._timed(times, "reference", reference)

        def forward():
            logps = self._logps(self.policy, seq, mask, self._encode(self.policy, inputs, g), extra, keep)
            d = ref - logps
            kl = torch.exp(d) - d - 1
            per_token = -(torch.exp(logps - logps.detach()) * advantages) + args.beta * kl
            m = comp_mask.float()
            return ((per_token * m).sum(1) / m.sum(1).clamp(min=1)).mean()

        loss = self._timed(times, "policy_forward", forward)
        self._timed(times, "backward", loss.backward)

        def update():
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), 1.0)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)

        self._timed(times, "rest", update)
        self.sync()
        times["step"] = since(t0)
        self.steps.append(times)

    @staticmethod
    def components(step: dict[str, tuple[float, float]], which: int) -> dict[str, float]:
        out = {k: step.get(k, (0.0, 0.0))[which] for k in COMPONENTS}
        out["step"] = step["step"][which]
        out["rest"] = out["step"] - sum(out[k] for k in COMPONENTS if k != "rest")
        return out


# ----------------------------------------------------------------------------- set-up


def settings(args):
    """The effects config whose RL step is profiled (the full profile's model and budget)."""
    from medrl.effects.config import make_config

    kw = dict(rl_prompts=args.prompts, num_generations=args.generations,
              max_completion_length=args.max_completion_length, rl_steps=args.steps)
    if args.smoke:
        kw.update(image_size=56, hidden_size=64, num_layers=2)
    return make_config("full", **kw)


def build_trainer(arm, config, model_dir, records, out: Path, args):
    from trl import GRPOTrainer

    from medrl.effects import runner
    from medrl.train.pipeline import train_rl
    from medrl.train.speed import speed_up_step, undo_step_speedups

    kind, gc, images, scoring = TRAINER_ARMS[arm]
    overrides = runner.rl_overrides(config, seed=0, steps=args.steps)
    overrides.append(f"grpo.gradient_checkpointing={'true' if gc else 'false'}")
    recipe = runner.load_run_recipe("grpo", overrides)
    judge = runner.judge_of(config.judge, 0)
    tr = train_rl(recipe, model_dir, records, out / arm, judge=judge, train=False,
                  trainer_cls=GRPOTrainer if kind == "trl" else None).trainer
    speed_up_step(tr)  # MedGRPOTrainer has done it already; a second call changes nothing
    undo_step_speedups(tr, images=not images, scoring=not scoring)
    return tr


def quiet(fn):
    """Run ``fn`` with its prints (log dicts, monitor alerts) kept off the report."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return fn()


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4, help="timed rounds (each arm runs once per round, after an "
                                                          "untimed warm-up round)")
    ap.add_argument("--steps", type=int, default=4, help="steps per arm per round (a trainer's last step of a "
                                                         "round is not timed: it has no next step to close it)")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--generations", type=int, default=8)
    ap.add_argument("--max-completion-length", type=int, default=64)
    ap.add_argument("--arms", default=",".join(DEFAULT_ARMS), help=f"comma-separated, among {', '.join(ARMS)} "
                                                                   "(the last three take back one speed-up each)")
    ap.add_argument("--model", default=None, help="policy folder (default: build the harness's tiny Qwen2.5-VL)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    ap.add_argument("--smoke", action="store_true", help="seconds: a smaller model, 2 prompts x 2 rollouts, 8 "
                                                          "tokens, 1 round of 2 steps without a warm-up round")
    ap.add_argument("--json", default=None, help="also write the per-step times to this JSON file")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rounds, args.steps, args.prompts, args.generations, args.max_completion_length = 1, 2, 2, 2, 8
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    bad = [a for a in arms if a not in ARMS]
    if bad:
        ap.error(f"unknown arm(s) {bad}; choose among {', '.join(ARMS)}")

    import torch
    import transformers

    from medrl.data.sources.phantom import phantom_records
    from medrl.effects import runner

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    config = settings(args)
    args.lr, args.beta, args.temperature = config.rl_lr, config.beta, config.temperature
    tmp = tempfile.TemporaryDirectory(prefix="medrl-step-profile-")
    work = Path(tmp.name)
    model_dir = Path(args.model) if args.model else runner.build_base(config, work / "base", 0)
    # enough records that a round never runs out of prompts
    records = phantom_records("train", max(16, args.prompts * (args.steps + 1)), seed=0,
                              config=config.phantom_config())

    runners, clocks = {}, {}
    for arm in arms:
        if arm == "floor":
            floor = Floor(model_dir, records, args, sync, "cuda" if cuda else "cpu")
            runners[arm] = lambda n, f=floor: [f.step() for _ in range(n)]
            clocks[arm] = floor
        else:
            tr = build_trainer(arm, config, model_dir, records, work, args)
            clock = StepClock(sync)
            instrument(tr, clock)
            runners[arm] = lambda n, t=tr: quiet(t.train)
            clocks[arm] = clock

    t0 = time.perf_counter()
    loads = [load_average()]
    warmup = 0 if args.smoke else 1  # a first round (lazy loads, caches) that is not timed
    for r in range(args.rounds + warmup):
        order = arms if r % 2 == 0 else list(reversed(arms))
        for arm in order:
            runners[arm](args.steps)
        if r < warmup:
            for c in clocks.values():
                c.steps.clear()
        loads.append(load_average())
    wall = time.perf_counter() - t0

    tables = {}
    for which, label in ((1, "cpu"), (0, "wall")):
        per_arm = {}
        for arm in arms:
            split = Floor.components if arm == "floor" else components
            steps = [split(s, which) for s in clocks[arm].steps]
            per_arm[arm] = {k: statistics.median(s[k] for s in steps) for k in (*COMPONENTS, "step")}
            per_arm[arm]["n"] = len(steps)
        tables[label] = per_arm

    model_text = (f"--model {model_dir}" if args.model else
                  f"tiny Qwen2.5-VL (hidden {config.hidden_size}, {config.num_layers} layers, {config.image_size} px)")
    print(f"setup: {'smoke, ' if args.smoke else ''}{args.prompts} prompts x {args.generations} rollouts, at most "
          f"{args.max_completion_length} new tokens, {model_text}, {torch.get_num_threads()} torch thread(s), "
          f"{'cuda' if cuda else 'cpu'}; {args.rounds} timed rounds x {args.steps} steps per arm, interleaved")
    print(f"load average (1/5/15 min) before each round and at the end: {' | '.join(loads)}")
    for label, per_arm in tables.items():
        what = ("CPU seconds of this process" if label == "cpu" else "wall seconds")
        print(f"median {what} per step")
        print(f"{'arm':15s}" + "".join(f"{c:>15s}" for c in (*COMPONENTS, "step")) + f"{'vs floor':>10s}{'n':>4s}")
        base = per_arm.get("floor", {}).get("step")
        for arm, v in per_arm.items():
            ratio = f"{v['step'] / base:.2f}" if base else "-"
            print(f"{arm:15s}" + "".join(f"{v[c]:15.3f}" for c in (*COMPONENTS, "step")) + f"{ratio:>10s}{v['n']:4d}")
    for label, per_arm in tables.items():
        base = per_arm.get("floor", {}).get("step")
        if base and "medrl" in per_arm:
            before = per_arm.get("before")
            print(f"{label}: ratio medrl / floor = {per_arm['medrl']['step'] / base:.2f}, medrl step "
                  f"{per_arm['medrl']['step']:.3f} s" + (f" (before: {before['step'] / base:.2f}, {before['step']:.3f} s)"
                                                         if before else ""))
    print(f"wall {wall:.0f} s")
    tmp.cleanup()
    if args.json:
        Path(args.json).write_text(json.dumps({
            "medians": tables, "loads": loads, "wall_seconds": wall,
            "steps": {a: clocks[a].steps for a in arms}, "settings": dict(vars(args))}, indent=1, default=list))
    return 0


if __name__ == "__main__":
    sys.exit(main())
