"""Real HTTP servers speaking LLM providers' protocols, for tests without network or keys.

Import as `from fakes.anthropic_server import serve_anthropic` (tests/ is on sys.path under
pytest's default rootdir-relative import mode).
"""

from .anthropic_server import FakeAnthropic, serve_anthropic
from .openai_server import FakeOpenAI, serve_openai
from .scripted_server import RecordedRequest, Reply, error, kernel_reply, sent_key, slow, text

__all__ = [
    "FakeAnthropic",
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "error",
    "kernel_reply",
    "sent_key",
    "serve_anthropic",
    "serve_openai",
    "slow",
    "text",
]
