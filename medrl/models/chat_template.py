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
