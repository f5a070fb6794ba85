"""The body of an OpenAI chat-completion reply, for the fake judge servers the tests start on 127.0.0.1."""

from __future__ import annotations


def chat_completion(content: str, model: str = "m", prompt_tokens: int = 5, completion_tokens: int = 1) -> dict:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}
