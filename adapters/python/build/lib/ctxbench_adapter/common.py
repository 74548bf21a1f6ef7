"""What the deepagents and LangChain engines share: the replayed state, the fake main model, the
backend folder whose files go back to ctxbench, the summary prompt hand-off."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from .protocol import Channel, ProtocolError, make_summary_bridge, to_canonical, to_langchain


def fake_main_model(llm_type: str, window: int, max_tokens: int | None):  # noqa: ANN201
    """The agent's model as the middleware sees it. Never called (ctxbench replays the recorded
    answer): only its profile `max_input_tokens`, `_llm_type` (`anthropic-chat…` makes LangChain
    count 3.3 characters per token instead of 4) and `max_tokens` are read."""
    from langchain_core.language_models import BaseChatModel

    class ReplayedModel(BaseChatModel):
        llm_type: str = "generic-fake-chat-model"
        max_tokens: int | None = None

        @property
        def _llm_type(self) -> str:
            return self.llm_type

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001, ANN202
            raise RuntimeError("the replay never calls the main model: ctxbench replays the recorded answer")

    return ReplayedModel(llm_type=llm_type, max_tokens=max_tokens, profile={"max_input_tokens": window})


def llm_type_for(begin: dict[str, Any], config: dict[str, Any]) -> str:
    if isinstance(config.get("llm_type"), str):
        return config["llm_type"]
    return "anthropic-chat-ctxbench" if begin.get("counter") == "approx-anthropic" else "generic-fake-chat-model"


def max_output_tokens_for(begin: dict[str, Any], config: dict[str, Any]) -> int | None:
    """`config.max_output_tokens`, else what ctxbench's input budget implies
    (`budget = int(0.95·window) − max_output_tokens`); None when that is 0."""
    if "max_output_tokens" in config:
        v = config["max_output_tokens"]
        return int(v) if v else None
    window = int(begin["window"])
    budget = begin.get("input_budget")
    if budget is None:
        return None
    implied = int(0.95 * window) - int(budget)
    return implied if implied > 0 else None


class Replayed:
    """Base of an engine: the trace messages as ctxbench sent them, their LangChain twins, the
    state, the backend folder and the summary bridge."""

    def __init__(self, begin: dict[str, Any], channel: Channel) -> None:
        self.begin = begin
        self.config: dict[str, Any] = begin.get("config") or {}
        if not isinstance(self.config, dict):
            raise ProtocolError("begin.config must be an object (the variant's external.config table)")
        self.channel = channel
        self.originals: dict[int, dict[str, Any]] = {}
        self.id_to_index: dict[str, int] = {}
        self.pending_summary: tuple[list[dict[str, Any]], str, str | None] | None = None
        self.last_summary: str | None = None
        self.summaries = 0
        self.pending_events: list[dict[str, Any]] = []
        self.tmp = tempfile.TemporaryDirectory(prefix="ctxbench-adapter-")
        self.root = Path(self.tmp.name)
        self._sent_files: dict[str, tuple[int, int]] = {}
        self.bridge = make_summary_bridge(channel, self)
        self.window = int(begin["window"])
        self.model = fake_main_model(llm_type_for(begin, self.config), self.window, max_output_tokens_for(begin, self.config))

    # -- messages --------------------------------------------------------------------------------

    def lc_message(self, index: int, msg: dict[str, Any]):  # noqa: ANN201
        self.originals[index] = msg
        m = to_langchain(index, msg)
        self.id_to_index[m.id] = index
        return m

    def index_of(self, m: Any) -> int | None:
        return self.id_to_index.get(m.id) if m.id is not None else None

    def canonical(self, messages: list[Any]) -> tuple[list[dict[str, Any]], list[int | None]]:
        """The messages as canonical messages, with the trace index each stands for (None for
        messages of the middleware's own, such as a summary)."""
        out, idx = [], []
        for m in messages:
            k = self.index_of(m)
            out.append(to_canonical(m, self.originals.get(k) if k is not None else None))
            idx.append(k)
        return out, idx

    def hook_summary_prompt(self, helper: Any) -> None:
        """Hand the messages the middleware summarizes (after its trimming) and its prompt to the
        bridge: wraps `helper._format_summary_prompt`, which runs just before the model call."""
        orig = helper._format_summary_prompt

        def spy(messages):  # noqa: ANN001, ANN202
            template = getattr(helper, "summary_prompt", "") or ""
            prompt = template.replace("{messages}", "(the messages to summarize follow)").strip()
            # A previous summary message among them (LangChain and deepagents tag theirs with
            # `lc_source = "summarization"`) goes as `previous_summary`, the text ctxbench gave.
            fresh = [m for m in messages if m.additional_kwargs.get("lc_source") != "summarization"]
            previous = self.last_summary if len(fresh) < len(messages) else None
            self.pending_summary = (self.canonical(fresh)[0], prompt, previous)
            return orig(messages)

        helper._format_summary_prompt = spy

    # -- files -----------------------------------------------------------------------------------

    def changed_files(self) -> dict[str, str]:
        """Files the backend wrote or changed since the last view (virtual path → content)."""
        out: dict[str, str] = {}
        for dirpath, _dirs, files in os.walk(self.root):
            for f in files:
                p = Path(dirpath) / f
                st = p.stat()
                sig = (st.st_size, st.st_mtime_ns)
                vpath = "/" + p.relative_to(self.root).as_posix()
                if self._sent_files.get(vpath) != sig:
                    self._sent_files[vpath] = sig
                    out[vpath] = p.read_text(encoding="utf-8", errors="replace")
        return out

    def view(self, messages: list[Any], events: list[dict[str, Any]], effective_tokens: int | None) -> dict[str, Any]:
        msgs, indexes = self.canonical(messages)
        out: dict[str, Any] = {
            "type": "view",
            "messages": msgs,
            "indexes": indexes,
            "events": self.pending_events + events,
            "files": self.changed_files(),
        }
        if effective_tokens is not None:
            out["effective_tokens"] = effective_tokens
        self.pending_events = []
        return out

