"""The real deepagents context management behind ctxbench's protocol: `FilesystemMiddleware`
(large tool results evicted to files, huge user messages previewed) outer and deepagents'
`SummarizationMiddleware` (`create_summarization_middleware`, the factory `create_deep_agent()`
uses: trigger 0.85, keep 0.10 of the window, args truncation, budget clipping) inner, their
`wrap_model_call` hooks composed by LangChain's own `_chain_model_call_handlers` as
`create_agent()` does. The same replay as `testdata/deepagents-golden` was produced with.

`begin.config` (the variant's `external.config`):

* `max_output_tokens`: the main model's `max_tokens` (default: implied by ctxbench's input
  budget, i.e. the variant's `max_output_tokens`);
* `llm_type`: the main model's `_llm_type` (default `anthropic-chat…` when ctxbench counts with
  `approx-anthropic`, so LangChain counts 3.3 characters per token, else a generic name: 4);
* `tool_token_limit_before_evict`: FilesystemMiddleware's eviction limit (default 20000);
* `tools`: `"suite"` (default: the tool schemas ctxbench sends in `begin`, which it counts in
  every request) or `"deepagents"` (the FilesystemMiddleware's own tools, as in a deep agent);
* `trim_tokens_to_summarize`: passed to the factory (default None: no trimming).
"""

from __future__ import annotations

from typing import Any

from .common import Replayed
from .protocol import Channel, text_of


class DeepAgentsEngine(Replayed):
    def __init__(self, begin: dict[str, Any], channel: Channel) -> None:
        super().__init__(begin, channel)
        from deepagents.backends import FilesystemBackend
        from deepagents.middleware.filesystem import FilesystemMiddleware
        from deepagents.middleware.summarization import create_summarization_middleware
        from langchain.agents.factory import _chain_model_call_handlers
        from langchain_core.messages import SystemMessage

        cfg = self.config
        self.backend = FilesystemBackend(root_dir=str(self.root), virtual_mode=True)
        fs_kwargs = {}
        if "tool_token_limit_before_evict" in cfg:
            fs_kwargs["tool_token_limit_before_evict"] = cfg["tool_token_limit_before_evict"]
        self.fs = FilesystemMiddleware(backend=self.backend, **fs_kwargs)
        sm_kwargs = {}
        if "trim_tokens_to_summarize" in cfg:
            sm_kwargs["trim_tokens_to_summarize"] = cfg["trim_tokens_to_summarize"]
        self.summ = create_summarization_middleware(self.model, self.backend, summarizer=self.bridge, **sm_kwargs)
        self.hook_summary_prompt(self.summ._lc_helper)
        self.composed = _chain_model_call_handlers([self.fs.wrap_model_call, self.summ.wrap_model_call])
        prompt = begin.get("system_prompt")
        self.system_message = SystemMessage(content=prompt) if prompt else None
        tools_mode = cfg.get("tools", "suite")
        if tools_mode == "deepagents":
            self.tools = list(self.fs.tools)
        elif tools_mode == "suite":
            self.tools = list(begin.get("tools") or [])
        else:
            raise ValueError(f"external.config.tools: expected 'deepagents' or 'suite', got {tools_mode!r}")
        self.state: dict[str, Any] = {"messages": []}
        self.calls_by_id: dict[str, Any] = {}
        self.stopped: str | None = None
        self._spy()

    # -- instrumentation: what the summarization middleware decided, in its own steps ----------

    def _spy(self) -> None:
        summ = self.summ
        orig_truncate = summ._truncate_args
        orig_cutoff = summ._determine_cutoff_index

        def truncate_spy(messages, total_tokens):  # noqa: ANN001, ANN202
            out, modified = orig_truncate(messages, total_tokens)
            self.effective_tokens = total_tokens
            if modified:
                self.truncation = (messages, out, total_tokens)
            return out, modified

        def cutoff_spy(messages):  # noqa: ANN001, ANN202
            cut = orig_cutoff(messages)
            self.effective_cutoff = cut
            return cut

        summ._truncate_args = truncate_spy
        summ._determine_cutoff_index = cutoff_spy

    def _reset_call(self) -> None:
        self.effective_tokens: int | None = None
        self.truncation: tuple[list, list, int] | None = None
        self.effective_cutoff: int | None = None
        self.sent: Any = None

    def _count_alone(self, message: Any) -> int:
        """One message counted alone, as deepagents' summarization counts it (no system
        message, no tools)."""
        return self.summ._lc_helper._partial_token_counter([message])

    # -- the protocol ----------------------------------------------------------------------------

    def message(self, index: int, msg: dict[str, Any]) -> None:
        from langchain_core.messages import AIMessage, ToolMessage
        from langchain_core.messages.tool import tool_call as make_tool_call
        from langgraph.prebuilt.tool_node import ToolCallRequest

        m = self.lc_message(index, msg)
        messages = self.state["messages"]
        if isinstance(m, ToolMessage):
            call = self.calls_by_id.get(m.tool_call_id) or make_tool_call(name=m.name or "", args={}, id=m.tool_call_id)
            request = ToolCallRequest(tool_call=call, tool=None, state=self.state, runtime=None)
            result = self.fs.wrap_tool_call(request, lambda _req, _m=m: _m)
            if not isinstance(result, ToolMessage):  # a Command: its messages enter the state
                new = list((result.update or {}).get("messages", []))
                result = new[0] if len(new) == 1 and isinstance(new[0], ToolMessage) else None
                if result is None:
                    raise RuntimeError(f"message {index}: FilesystemMiddleware answered a tool result with {new!r}")
            self._on_tool_result(index, m, result)
            if result is not m and result.id != m.id:
                result.id = m.id
            messages.append(result)
        else:
            if isinstance(m, AIMessage):
                for c in m.tool_calls:
                    self.calls_by_id[c["id"]] = c
            messages.append(m)

    def _on_tool_result(self, index: int, original: Any, result: Any) -> None:
        """Events of a tool result entering the state: evicted to a file, or too large but from
        a tool deepagents never evicts (README §3 of the golden fixtures)."""
        from deepagents.backends.utils import sanitize_tool_call_id
        from deepagents.middleware.filesystem import NUM_CHARS_PER_TOKEN, TOOLS_EXCLUDED_FROM_EVICTION

        limit = self.fs._tool_token_limit_before_evict
        before, after = text_of(original), text_of(result)
        too_large = bool(limit) and len(before) >= NUM_CHARS_PER_TOKEN * limit
        if original.name in TOOLS_EXCLUDED_FROM_EVICTION:
            if too_large:
                self.pending_events.append(
                    {
                        "trace_index": index,
                        "layer": "evict_tool_results",
                        "detail": {"type": "eviction_skipped", "tool": original.name, "chars": len(before), "reason": "excluded tool"},
                    }
                )
            return
        if before == after or not too_large:
            return  # unchanged, or answered otherwise (e.g. the parallel-file-mutation guard)
        path = f"{self.fs._large_tool_results_prefix}/{sanitize_tool_call_id(original.tool_call_id)}"
        self.pending_events.append(
            {
                "trace_index": index,
                "layer": "evict_tool_results",
                "tokens_before": self._count_alone(original),
                "tokens_after": self._count_alone(result),
                "detail": {
                    "type": "evicted",
                    "tool": original.name or "",
                    "tool_call_id": original.tool_call_id,
                    "chars_before": len(before),
                    "chars_after": len(after),
                    "path": path,
                    "replacement": after,
                },
            }
        )

    def call(self, index: int) -> dict[str, Any]:
        from deepagents.middleware.summarization import SUMMARIZATION_EVENT_KEY
        from langchain.agents.middleware.types import ModelRequest, ModelResponse
        from langchain_core.exceptions import ContextOverflowError
        from langchain_core.messages import AIMessage

        messages = self.state["messages"]
        if self.stopped is not None:
            return self.view(list(messages), [], None)
        self._reset_call()
        answer = ModelResponse(result=[AIMessage(content="")])

        def handler(req: ModelRequest) -> ModelResponse:
            self.sent = req
            return answer

        request = ModelRequest(
            model=self.model,
            messages=list(messages),
            system_message=self.system_message,
            tools=self.tools,
            state=self.state,
            runtime=None,
        )
        prior_event = self.state.get(SUMMARIZATION_EVENT_KEY)
        before = list(messages)
        try:
            result = self.composed(request, handler)
        except ContextOverflowError as exc:
            self.stopped = str(exc)
            ev = {"layer": "summarize", "detail": {"type": "overflow", "tokens": self.effective_tokens or 0, "limit": self.window, "message": str(exc)}}
            return self.view(list(messages), [ev], self.effective_tokens)
        events = self._call_events(index, before, prior_event, result.commands)
        for cmd in result.commands:
            if cmd.update:
                self._apply_update(cmd.update)
        return self.view(list(self.sent.messages), events, self.effective_tokens)

    def _apply_update(self, update: dict[str, Any]) -> None:
        """A Command update applied as the agent graph would: messages replaced by id, other
        keys overwritten."""
        for key, value in update.items():
            if key == "messages":
                msgs = self.state["messages"]
                pos = {m.id: k for k, m in enumerate(msgs)}
                for m in value:
                    k = pos.get(m.id)
                    if k is None:
                        raise RuntimeError(f"state update carries a message with unknown id {m.id!r}")
                    msgs[k] = m
            else:
                self.state[key] = value

    def _call_events(self, index: int, state_before: list[Any], prior_event: Any, commands: list[Any]) -> list[dict[str, Any]]:
        from deepagents.middleware.filesystem import _build_truncated_human_message
        from deepagents.middleware.summarization import SUMMARIZATION_EVENT_KEY
        from langchain_core.messages import AIMessage

        req = self.sent
        events: list[dict[str, Any]] = []
        updates: dict[str, Any] = {}
        fs_messages: list[Any] = []
        summ_messages: list[Any] = []
        for cmd in commands:
            upd = cmd.update or {}
            if SUMMARIZATION_EVENT_KEY in upd:
                summ_messages.extend(upd.get("messages", []))
            else:
                fs_messages.extend(upd.get("messages", []))
            updates.update({k: v for k, v in upd.items() if k != "messages"})
        new_event = updates.get(SUMMARIZATION_EVENT_KEY)
        for tagged in fs_messages:
            path = tagged.additional_kwargs.get("lc_evicted_to")
            preview = text_of(_build_truncated_human_message(tagged, path))
            events.append(
                {
                    "layer": "evict_user_messages",
                    "detail": {
                        "type": "user_message_evicted",
                        "evicted_index": self.index_of(tagged),
                        "path": path,
                        "chars_before": len(text_of(tagged)),
                        "chars_after": len(preview),
                        "preview": preview,
                    },
                }
            )
        if self.truncation is not None:
            msgs_before, msgs_after, tokens_before = self.truncation
            truncated = []
            for mb, ma in zip(msgs_before, msgs_after, strict=True):
                if mb is ma or not isinstance(mb, AIMessage):
                    continue
                for cb, ca in zip(mb.tool_calls, ma.tool_calls, strict=True):
                    if cb["args"] != ca["args"]:
                        truncated.append(
                            {
                                "trace_index": self.index_of(mb),
                                "tool_call_id": cb["id"],
                                "tool": cb["name"],
                                "args": [k for k in cb["args"] if cb["args"][k] != ca["args"].get(k)],
                            }
                        )
            events.append(
                {
                    "layer": "truncate_args",
                    "tokens_before": tokens_before,
                    # The recount of the truncated request: before any summary of this call.
                    "tokens_after": self.summ._count_tokens(msgs_after, req.system_message, req.tools),
                    "detail": {"type": "args_truncated", "calls": truncated, "summarized_in_same_call": new_event is not None},
                }
            )
        if new_event is not None:
            prior_cutoff = prior_event["cutoff_index"] if prior_event else 0
            summary = text_of(new_event["summary_message"])
            events.append(
                {
                    "layer": "summarize",
                    "tokens_before": self.effective_tokens,
                    "detail": {
                        "type": "summarized",
                        "state_len": len(state_before),
                        "view_cutoff": self.effective_cutoff,
                        "state_cutoff": new_event["cutoff_index"],
                        "summarized_from": prior_cutoff,
                        "chained": prior_event is not None,
                        "newly_summarized": new_event["cutoff_index"] - prior_cutoff,
                        "kept": len(req.messages) - 1,
                        "history_file": new_event["file_path"] or "",
                        "summary_chars": len(summary),
                        "summary_message": summary,
                    },
                }
            )
        by_id = {m.id: m for m in state_before}
        for clipped in summ_messages:
            orig = by_id[clipped.id]
            text = text_of(clipped)
            path = None
            if "/large_tool_results/" in text:
                from deepagents.backends.utils import sanitize_tool_call_id

                path = f"{self.fs._large_tool_results_prefix}/{sanitize_tool_call_id(orig.tool_call_id)}"
            events.append(
                {
                    "layer": "summarize",
                    "detail": {
                        "type": "clipped",
                        "clipped_index": self.index_of(clipped),
                        "tool": orig.name or "",
                        "chars_before": len(text_of(orig)),
                        "chars_after": len(text),
                        "replacement": text,
                        "path": path,
                    },
                }
            )
        return events


def make(begin: dict[str, Any], channel: Channel) -> DeepAgentsEngine:
    return DeepAgentsEngine(begin, channel)
