"""medrl.models.chat_template: ChatML and per-role turn templates, rendered by transformers'
own Jinja renderer (the one ``apply_chat_template`` uses), assistant spans included."""

from __future__ import annotations

from transformers.utils.chat_template_utils import render_jinja_template

from medrl.models.chat_template import chatml_template, turn_template

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What organ?"}]},
    {"role": "assistant", "content": "Liver"},
]


def render(template, messages, **kw):
    texts, spans = render_jinja_template(conversations=[messages], chat_template=template, **kw)
    return texts[0], (spans[0] if spans else [])


def test_chatml_renders_turns_image_placeholder_and_no_default_system():
    text, _ = render(chatml_template("<image>\n"), MESSAGES)
    assert text == ("<|im_start|>system\nBe brief.<|im_end|>\n"
                    "<|im_start|>user\n<image>\nWhat organ?<|im_end|>\n"
                    "<|im_start|>assistant\nLiver<|im_end|>\n")
    only_user, _ = render(chatml_template("<image>\n"), [{"role": "user", "content": "Hi"}],
                          add_generation_prompt=True)
    assert only_user == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_chatml_assistant_mask_covers_the_answer_and_its_end_token():
    text, spans = render(chatml_template("<image>\n"), MESSAGES, return_assistant_tokens_mask=True)
    assert len(spans) == 1
    start, end = spans[0]
    assert text[start:end] == "Liver<|im_end|>"


def test_placeholder_with_quotes_and_backslashes_is_rendered_literally():
    placeholder = "<img a='1'>\\"
    text, _ = render(chatml_template(placeholder), [{"role": "user", "content": [{"type": "image"}]}])
    assert text == f"<|im_start|>user\n{placeholder}<|im_end|>\n"
    # any part carrying an image key counts as an image part
    text, _ = render(chatml_template("<I>"), [{"role": "user", "content": [{"type": "x", "image_url": "u"}]}])
    assert text == "<|im_start|>user\n<I><|im_end|>\n"


def test_turn_template_merges_system_into_first_user_turn():
    tpl = turn_template("<img>", {"user": "U:", "assistant": "A:"}, {"user": "\n", "assistant": "</s>"},
                        bos="<s>", after_assistant="\n", merge_system=True)
    text, spans = render(tpl, MESSAGES, return_assistant_tokens_mask=True)
    assert text == "<s>U:Be brief.\n\n<img>What organ?\nA:Liver</s>\n"
    (start, end), = spans
    assert text[start:end] == "Liver</s>"  # after_assistant sits outside the generation block
    prompt, _ = render(tpl, MESSAGES[:2], add_generation_prompt=True)
    assert prompt == "<s>U:Be brief.\n\n<img>What organ?\nA:"


def test_turn_template_with_a_system_role():
    tpl = turn_template("<img>", {"system": "S:", "user": "U:", "assistant": "A:"},
                        {"system": "|", "user": "|", "assistant": "|"})
    text, _ = render(tpl, MESSAGES)
    assert text == "S:Be brief.|U:<img>What organ?|A:Liver|"
