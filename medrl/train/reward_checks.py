"""What a reward function returns is checked before TRL turns it into a tensor.

TRL takes each reward's output as a list of one float (or None) per rollout. A broken reward
went wrong in two ways there: one that raises, or returns text, a single number or a list of the
wrong length stopped the run with a raw traceback from deep inside TRL; one that returns inf, NaN
or a number too large for float32 arithmetic (1e308) trained silently on nothing - the group's
mean and std become inf/NaN, every advantage is NaN or 0, and the gradient norm stays 0 at every
step while the run exits 0.

:func:`checked_rewards` wraps every reward function for one call of the trainer's
``_calculate_rewards`` (sync and async rewards alike; reward models, ``nn.Module``, are left to
TRL):

- a reward that raises, or whose output is not one value per rollout, or holds something other
  than a real number, None or :data:`medrl.types.UNSCORABLE`, stops the run with
  :class:`RewardError`: one line naming the reward, the step and the value (``medrl train``
  exits 11, :mod:`medrl.common.exit_codes`). Errors that already have their own exit code (a refused
  judge key) pass through unchanged.
- a non-finite value - NaN, ±inf, or a magnitude of at least :data:`MAX_ABS` (its square
  overflows float32, so the group's std would be inf) - makes that rollout *unscorable* for this
  step (excluded from the loss as :data:`~medrl.types.UNSCORABLE` rows are), with a warning
  naming the reward, the step, the value and the rows, and the share is logged as
  ``nonfinite_frac``. When more than half of a reward's rollouts are non-finite in
  :data:`PERSIST` batches in a row, the run stops with :class:`RewardError`: it would otherwise
  learn nothing from that reward, silently.
- what a reward returns is read as its typed result (:class:`medrl.types.RewardResult`; a plain
  list is a result with no extras, an ``UNSCORABLE`` in it an unscorable row) and kept in
  :attr:`RewardChecks.results` for the trainer; a result's unscorable rows outside the batch stop
  the run the same way.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import numbers
from typing import Any, Iterator

from medrl.types import UNSCORABLE, RewardResult

log = logging.getLogger("medrl.train")

#: sqrt(float32 max): a reward at least this large overflows float32 once squared (group std)
MAX_ABS = math.sqrt(3.4028234663852886e38)
#: batches in a row with more than half of a reward's rollouts non-finite before the run stops
PERSIST = 3


class RewardError(RuntimeError):
    """A reward function is broken; the message names it, the step and the value (exit code 11)."""


def _short(value: Any, n: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr that fails (a 5,000-digit int) is still named by type
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def check_output(name: str, values: Any, n: int, step: int) -> tuple[list, list[int], list[int], Any]:
    """A reward's output checked for a batch of ``n`` rollouts at ``step``.

    Returns ``(values for TRL, non-finite rows, UNSCORABLE rows, first non-finite value)``: the
    values are real numbers or None (non-finite and UNSCORABLE ones become None). Raises
    :class:`RewardError` when the output is not ``n`` values or a value is not a number, None or
    UNSCORABLE."""
    where = f"reward {name!r} at step {step}"
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__") or not hasattr(values, "__iter__"):
        raise RewardError(f"{where} returned {type(values).__name__} {_short(values)}, not a list of one value per "
                          f"rollout ({n})")
    shape = getattr(values, "shape", None)
    if shape is not None and len(shape) != 1:
        raise RewardError(f"{where} returned an array of shape {tuple(shape)}, not a list of one value per rollout "
                          f"({n})")
    if len(values) != n:
        raise RewardError(f"{where} returned {len(values)} values for {n} rollouts: {_short(list(values)[:8])}")
    out: list = []
    nonfinite: list[int] = []
    unscorable: list[int] = []
    first_bad = None
    for i, v in enumerate(values):
        if v is None:
            out.append(None)
            continue
        if v is UNSCORABLE:
            unscorable.append(i)
            out.append(None)
            continue
        if not isinstance(v, numbers.Real) and hasattr(v, "item") and tuple(getattr(v, "shape", (1,))) == ():
            v = v.item()  # a 0-d tensor or numpy scalar
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise RewardError(f"{where} returned {type(v).__name__} {_short(v)} for rollout {i}; a reward value is a "
                              "number, None (not applicable) or UNSCORABLE")
        try:
            x = float(v)
        except (OverflowError, ValueError):  # a Python int beyond float range
            x = math.inf
        if not math.isfinite(x) or abs(x) >= MAX_ABS:
            nonfinite.append(i)
            first_bad = v if first_bad is None else first_bad
            out.append(None)
        else:
            out.append(x)
    return out, nonfinite, unscorable, first_bad


class RewardChecks:
    """The checks of one trainer: the rows found unscorable in the current batch, and how many
    batches in a row each reward was mostly non-finite."""

    def __init__(self, persist: int = PERSIST, share: float = 0.5):
        self.persist, self.share = int(persist), float(share)
        self.rows: set[int] = set()
        self.nonfinite_rows: set[int] = set()
        #: ``{reward name: RewardResult}`` of the current batch (values as TRL took them)
        self.results: dict[str, RewardResult] = {}
        self.streak: dict[str, int] = {}
        self._warned = 0

    def _record(self, name: str, values: Any, n: int, step: int) -> list:
        out, nonfinite, unscorable, first_bad = check_output(name, values, n, step)
        marked = list(getattr(values, "unscorable", ())) if isinstance(values, RewardResult) else []
        bad = [i for i in marked if not 0 <= i < n]
        if bad:
            raise RewardError(f"reward {name!r} at step {step} marked rows {bad[:5]} unscorable, outside its batch of "
                              f"{n} rollouts")
        self.results[name] = RewardResult(out, unscorable=[*marked, *unscorable],
                                          outputs=values.outputs if isinstance(values, RewardResult) else None)
        self.rows.update(nonfinite)
        self.rows.update(unscorable)
        self.rows.update(marked)
        self.nonfinite_rows.update(nonfinite)
        mostly = len(nonfinite) > self.share * n
        self.streak[name] = self.streak.get(name, 0) + 1 if mostly else 0
        if nonfinite:
            self._warned += 1
            if self._warned <= 10 or self._warned % 100 == 0:
                log.warning("reward %r at step %d returned a non-finite value (%s) for %d of %d rollouts (rows %s): "
                            "those rollouts are unscorable for this step", name, step, _short(first_bad),
                            len(nonfinite), n, nonfinite[:8])
        if self.streak[name] >= self.persist:
            raise RewardError(f"reward {name!r} returned non-finite values ({_short(first_bad)}) for {len(nonfinite)} "
                              f"of {n} rollouts at step {step}, and for more than half of them in {self.streak[name]} "
                              "batches in a row: the run would learn nothing from it; fix the reward")
        return out

    def wrap(self, fn: Any, name: str, n: int, step: int) -> Any:
        """``fn`` with its exceptions and output checked (async stays async for TRL)."""
        from trl.trainer.utils import is_async_callable

        def failed(exc: Exception) -> Exception:
            from medrl.common.exit_codes import for_error

            if isinstance(exc, RewardError) or for_error(exc) is not None:
                return exc  # an error with its own exit code (a refused judge key) stays itself
            err = RewardError(f"reward {name!r} raised {type(exc).__name__} at step {step}: {_one_line(exc)}")
            err.__cause__ = exc
            return err

        if is_async_callable(fn):
            @functools.wraps(fn)
            async def checked(*args, **kwargs):
                try:
                    values = await fn(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001 - named and re-raised as one line
                    raise failed(exc) from exc
                return self._record(name, values, n, step)
        else:
            @functools.wraps(fn)
            def checked(*args, **kwargs):
                try:
                    values = fn(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001 - named and re-raised as one line
                    raise failed(exc) from exc
                return self._record(name, values, n, step)
        return checked

    def mask(self, n: int, device: Any = None, nonfinite_only: bool = False):
        """(n,) uint8: 1 for the rows of this batch that a check made unscorable (with
        ``nonfinite_only``: for a non-finite value)."""
        import torch

        rows = torch.zeros(n, dtype=torch.uint8, device=device)
        chosen = self.nonfinite_rows if nonfinite_only else self.rows
        if chosen:
            rows[sorted(chosen)] = 1
        return rows


@contextlib.contextmanager
def checked_rewards(trainer: Any, n: int) -> Iterator[RewardChecks]:
    """Wrap ``trainer.reward_funcs`` (not reward models) with :class:`RewardChecks` for one batch of
    ``n`` rollouts; the originals are back when the block ends. The checks live on the trainer
    (``trainer._reward_checks``) so a streak of non-finite batches carries over steps."""
    from torch import nn

    checks = getattr(trainer, "_reward_checks", None)
    if checks is None:
        checks = trainer._reward_checks = RewardChecks()
    checks.rows, checks.nonfinite_rows, checks.results = set(), set(), {}
    step = int(getattr(trainer.state, "global_step", 0) or 0) + 1
    originals = trainer.reward_funcs
    trainer.reward_funcs = [fn if isinstance(fn, nn.Module) else checks.wrap(fn, name, n, step)
                            for fn, name in zip(originals, trainer.reward_func_names)]
    try:
        yield checks
    finally:
        trainer.reward_funcs = originals
