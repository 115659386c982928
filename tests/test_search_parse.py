"""Getting the file out of a model's answer: real replies from a public KernelBench run, and the
shapes replies take that the old longest-block parser got wrong."""

import json
from pathlib import Path

import pytest

from kernelevo.search.parse import NoCode, apply_edits, extract_candidate, extract_code

CORPUS = Path(__file__).parent / "corpus" / "replies" / "kernelbench_agentic_qwen.jsonl"
FILE = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def test_real_replies_are_read_as_their_authors_read_them():
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    outcome = {"accept": 0, "refuse": 0, "cut_off": 0}
    for row in rows:
        if row["expect"] == "accept":
            assert extract_code(row["reply"]).strip() == row["author_extracted"].strip()
        else:
            with pytest.raises(
                NoCode, match="cut off" if row["expect"] == "cut_off" else "defines class ModelNew"
            ):
                extract_code(row["reply"])
        outcome[row["expect"]] += 1
    assert outcome == {"accept": 24, "refuse": 5, "cut_off": 1}


def test_a_stray_fence_in_prose_does_not_swallow_the_real_block():
    reply = (
        "Use ``` fences like this: ```python then code.\n\nA note on `tl.dot` ```\n\n"
        f"```python\n{FILE}```\n\nDone."
    )
    assert extract_code(reply) == FILE


def test_a_fence_inside_a_docstring_line_does_not_close_the_block():
    body = FILE.replace("def forward", '"""Example: ```x = 1```"""\n    def forward')
    assert extract_code(f"```python\n{body}```\n") == body


def test_the_last_complete_block_wins_over_a_longer_draft():
    draft = FILE + "\n# a longer first draft\n" + "# padding\n" * 30
    final = FILE.replace("return x", "return x * 1")
    reply = f"Draft:\n```python\n{draft}```\nOn reflection, simpler:\n```python\n{final}```\n"
    assert extract_code(reply) == final


@pytest.mark.parametrize("tag", ["Python", "python3", "py", "PYTHON", ""])
def test_info_strings_people_write(tag):
    assert extract_code(f"```{tag}\n{FILE}```") == FILE


def test_a_cuda_block_before_the_python_block():
    reply = (
        f"The kernel:\n```cuda\n__global__ void k() {{}}\n```\nThe module:\n```python\n{FILE}```"
    )
    assert extract_code(reply) == FILE


def test_think_drafts_are_dropped():
    draft = FILE.replace("return x", "return x + 0  # draft")
    reply = f"<think>\nMaybe:\n```python\n{draft}```\n</think>\n```python\n{FILE}```"
    assert extract_code(reply) == FILE
    with pytest.raises(NoCode, match="no ```python code block"):  # only a draft inside the thinking
        extract_code(f"<think>```python\n{draft}```</think>The answer follows.")


def test_unclosed_block_and_empty_answer_get_messages_that_say_what_to_do():
    with pytest.raises(NoCode, match="cut off inside the code block"):
        extract_code("```python\n" + FILE)
    with pytest.raises(NoCode, match="the answer was empty"):
        extract_code("  \n")


def test_search_replace_edits_apply_to_the_file_shown():
    reply = "Faster:\n<<<<<<< SEARCH\n        return x\n=======\n        return x.contiguous()\n>>>>>>> REPLACE\n"
    assert extract_candidate(reply, FILE) == (
        FILE.replace("return x", "return x.contiguous()"),
        "edits",
    )
    assert extract_candidate(f"```python\n{FILE}```", "other") == (
        FILE,
        "file",
    )  # a whole file still wins


def test_edits_tolerate_trailing_spaces_and_refuse_what_is_not_there():
    reply = "<<<<<<< SEARCH\n        return x   \n=======\n        return -x\n>>>>>>> REPLACE"
    assert "return -x" in apply_edits(reply, FILE)
    with pytest.raises(NoCode, match="edit 1's SEARCH text is not in the file"):
        apply_edits("<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE", FILE)
    assert apply_edits("no edits here", FILE) is None


def test_an_edit_whose_search_stops_inside_a_line_keeps_the_rest_of_that_line():
    source = "class ModelNew:\n    def f(self, a):\n        return g(a, mask=m, other=0)\n"
    reply = "<<<<<<< SEARCH\n        return g(a, mask=m\n=======\n        return g(a, mask=m2\n>>>>>>> REPLACE"
    assert apply_edits(reply, source) == source.replace("mask=m,", "mask=m2,")
    twice = source + "    def h(self, a):\n        return g(a, mask=m, other=1)\n"
    with pytest.raises(NoCode, match="edit 1's SEARCH text is not in the file"):
        apply_edits(reply, twice)  # two places it could mean: not guessed
