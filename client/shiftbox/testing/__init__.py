"""Test helpers shipped with shiftbox: a local fake OpenAI-compatible server for LLM code paths."""

import warnings

# `python -m shiftbox.testing.fake_openai` runs the module this package has just imported; runpy's warning about
# that is noise here (the program part only imports `fake_llm.main`), so it is not shown to the user.
warnings.filterwarnings("ignore", message=r"'shiftbox\.testing\.fake_openai' found in sys\.modules",
                        category=RuntimeWarning)

from .fake_openai import FakeOpenAI, Reply, ToolCallReply, count_tokens, fake_openai  # noqa: E402

__all__ = ["FakeOpenAI", "Reply", "ToolCallReply", "count_tokens", "fake_openai"]
