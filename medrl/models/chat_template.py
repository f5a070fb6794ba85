"""The ChatML chat template shared by medrl's offline models (tiny Qwen2.5-VL, SmolLM2 LLaVA).

Content may be a string or a list of parts; each image part becomes the model's image
placeholder (which the processor expands to the image tokens). Assistant turns are wrapped in
``{% generation %}`` so ``return_assistant_tokens_mask`` (TRL's assistant-only loss) works, and
no default system message is added.
"""


def chatml_template(image_placeholder: str) -> str:
    """A ChatML Jinja template whose image parts render as ``image_placeholder``."""
    image = image_placeholder.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return (
        "{%- for message in messages -%}"
        "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
        "{%- if message['role'] == 'assistant' -%}{%- generation -%}"
        "{%- if message['content'] is string -%}{{- message['content'] -}}"
        "{%- else -%}{%- for part in message['content'] -%}"
        "{%- if part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
        "{%- endfor -%}{%- endif -%}"
        "{{- '<|im_end|>' -}}{%- endgeneration -%}{{- '\\n' -}}"
        "{%- else -%}"
        "{%- if message['content'] is string -%}{{- message['content'] -}}"
        "{%- else -%}{%- for part in message['content'] -%}"
        "{%- if part['type'] == 'image' or 'image' in part or 'image_url' in part -%}"
        "{{- '" + image + "' -}}"
        "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
        "{%- endfor -%}{%- endif -%}"
        "{{- '<|im_end|>\\n' -}}"
        "{%- endif -%}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
    )


def turn_template(
    image_placeholder: str,
    prefix: dict[str, str],
    suffix: dict[str, str],
    *,
    bos: str = "",
    after_assistant: str = "",
    merge_system: bool = False,
) -> str:
    """A chat template from per-role ``prefix``/``suffix`` strings (keys ``system``, ``user``,
    ``assistant``); the generation prompt is ``prefix['assistant']``.

    Each turn renders ``prefix[role] + content + suffix[role]``; the assistant's content and
    suffix (its end-of-turn token) sit inside ``{% generation %}`` and ``after_assistant``
    follows outside it. ``merge_system`` puts a system message in front of the first user turn
    (separated by a blank line) for families without a system role (Gemma, Mistral/LLaVA-NeXT).
    Image parts render as ``image_placeholder``; no default system message is added.
    """

    def q(s: str) -> str:
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"

    content = (
        "{%- if message['content'] is string -%}{{- message['content'] -}}"
        "{%- else -%}{%- for part in message['content'] -%}"
        "{%- if part['type'] == 'image' or 'image' in part or 'image_url' in part -%}"
        "{{- " + q(image_placeholder) + " -}}"
        "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
        "{%- endfor -%}{%- endif -%}"
    )
    head = "{{- " + q(bos) + " -}}" if bos else ""
    if merge_system:
        head += (
            "{%- set ns = namespace(system='') -%}"
            "{%- if messages and messages[0]['role'] == 'system' -%}"
            "{%- if messages[0]['content'] is string -%}{%- set ns.system = messages[0]['content'] -%}"
            "{%- else -%}{%- for part in messages[0]['content'] -%}{%- if part['type'] == 'text' -%}"
            "{%- set ns.system = ns.system + part['text'] -%}{%- endif -%}{%- endfor -%}{%- endif -%}"
            "{%- set ns.system = ns.system + '\\n\\n' -%}"
            "{%- endif -%}"
        )
    body = (
        "{%- for message in messages -%}"
        + ("{%- if message['role'] == 'system' -%}{%- continue -%}{%- endif -%}" if merge_system else "")
        + "{%- if message['role'] == 'assistant' -%}"
        "{{- " + q(prefix["assistant"]) + " -}}{%- generation -%}" + content
        + "{{- " + q(suffix["assistant"]) + " -}}{%- endgeneration -%}"
        + ("{{- " + q(after_assistant) + " -}}" if after_assistant else "")
        + "{%- elif message['role'] == 'user' -%}"
        "{{- " + q(prefix["user"]) + " -}}"
        + ("{{- ns.system -}}{%- set ns.system = '' -%}" if merge_system else "")
        + content + "{{- " + q(suffix["user"]) + " -}}"
        "{%- else -%}"
        "{{- " + q(prefix.get("system", prefix["user"])) + " -}}" + content
        + "{{- " + q(suffix.get("system", suffix["user"])) + " -}}"
        "{%- endif -%}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- " + q(prefix["assistant"]) + " -}}{%- endif -%}"
    )
    return head + body
