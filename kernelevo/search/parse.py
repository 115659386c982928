"""Getting the candidate file out of a model's answer."""
from __future__ import annotations

import re

FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


class NoCode(Exception):
    pass


def extract_code(text: str) -> str:
    """The fenced block that defines ModelNew (the longest one if several do)."""
    blocks = FENCE.findall(text)
    if not blocks:
        open_fence = re.search(r"```(?:python|py)?[ \t]*\n(.*)$", text, re.DOTALL)
        if open_fence and "class ModelNew" in open_fence.group(1):
            raise NoCode("the answer was cut off inside the code block; answer with a shorter complete file")
        raise NoCode("no ```python code block found in the answer")
    with_model = [b for b in blocks if "class ModelNew" in b]
    if not with_model:
        raise NoCode("the code block does not define class ModelNew")
    return max(with_model, key=len).strip() + "\n"
