"""LangChain's own context middleware behind ctxbench's protocol, as `create_agent()` runs it:
`SummarizationMiddleware.before_model` rewrites the state (summary + kept messages) before the
model node, then `ContextEditingMiddleware.wrap_model_call` (the `ClearToolUsesEdit` strategy,
Anthropic's `clear_tool_uses_20250919` semantics) edits the request only.

`begin.config` (the variant's `external.config`), both tables optional:

* `summarization` — `false` to turn it off, or LangChain's arguments: `trigger` (`["tokens", N]`,
  `["messages", N]`, `["fraction", F]`, a list of those (any), or a table `{tokens = N, messages
  = M}` (all)); `keep` (default `["fraction", 0.10]`); `trim_tokens_to_summarize` (default
  LangChain's 4000; `false` for none); `summary_prompt`. Default trigger `["fraction", 0.85]`.
  Fractions are of the window ctxbench sends in `begin`.
* `context_editing` — `false` (default) or a table of `ClearToolUsesEdit` fields: `trigger`
  (default 100000), `keep` (3), `clear_at_least` (0), `clear_tool_inputs` (false),
  `exclude_tools` ([]), `placeholder` (`"[cleared]"`).
* `max_output_tokens`, `llm_type`: the fake main model, as for the deepagents engine.

Events: `summarized` (`tokens_before` = ctxbench's overhead + what the middleware counted: it
counts the messages only), `cleared` (tool results shown as the placeholder in this request).
"""

from __future__ import annotations

from typing import Any

from .common import Replayed
from .protocol import Channel, text_of


def _context_size(v: Any, what: str) -> Any:
    if isinstance(v, (list, tuple)) and len(v) == 2 and isinstance(v[0], str):
        return (v[0], v[1])
    if isinstance(v, dict):
        return dict(v)
    if isinstance(v, list):
        return [_context_size(x, what) for x in v]
    raise ValueError(f"external.config.summarization.{what}: expected [\"tokens\"|\"messages\"|\"fraction\", N], a list of them or a table, got {v!r}")


class LangChainEngine(Replayed):
    def __init__(self, begin: dict[str, Any], channel: Channel) -> None:
        super().__init__(begin, channel)
        from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware
        from langchain_core.messages import SystemMessage

        cfg = self.config
        summ_cfg = cfg.get("summarization", {})
        self.summ = None
        if summ_cfg is not False:
            if not isinstance(summ_cfg, dict):
                raise ValueError("external.config.summarization: expected a table or false")
            kwargs: dict[str, Any] = {
                "trigger": _context_size(summ_cfg.get("trigger", ["fraction", 0.85]), "trigger"),
                "keep": _context_size(summ_cfg.get("keep", ["fraction", 0.10]), "keep"),
                "summarizer": self.bridge,
            }
            if "trim_tokens_to_summarize" in summ_cfg:
                t = summ_cfg["trim_tokens_to_summarize"]
                kwargs["trim_tokens_to_summarize"] = None if t is False else t
            if "summary_prompt" in summ_cfg:
                kwargs["summary_prompt"] = summ_cfg["summary_prompt"]
            self.summ = SummarizationMiddleware(self.model, **kwargs)
            self.hook_summary_prompt(self.summ)
        ce_cfg = cfg.get("context_editing", False)
        self.ce = None
        if ce_cfg is not False:
            if ce_cfg is True:
                ce_cfg = {}
            if not isinstance(ce_cfg, dict):
                raise ValueError("external.config.context_editing: expected a table or false")
            fields = {"trigger", "keep", "clear_at_least", "clear_tool_inputs", "exclude_tools", "placeholder"}
            unknown = set(ce_cfg) - fields
            if unknown:
                raise ValueError(f"external.config.context_editing: unknown keys {sorted(unknown)} (known: {sorted(fields)})")
            self.edit = ClearToolUsesEdit(**ce_cfg)
            self.ce = ContextEditingMiddleware(edits=[self.edit])
        prompt = begin.get("system_prompt")
        self.system_message = SystemMessage(content=prompt) if prompt else None
        self.tools = list(begin.get("tools") or [])
        self.messages: list[Any] = []
        self.summary_count = 0
        self.state_cutoff = 0
        self.cleared_before: set[int] = set()

    def message(self, index: int, msg: dict[str, Any]) -> None:
        self.messages.append(self.lc_message(index, msg))

    def call(self, index: int) -> dict[str, Any]:
        from langchain.agents.middleware.types import ModelRequest, ModelResponse
        from langchain_core.messages import AIMessage, RemoveMessage, ToolMessage

        events: list[dict[str, Any]] = []
        if self.summ is not None:
            counted = self.summ.token_counter(self.messages)
            state_len = len(self.messages)
            update = self.summ.before_model({"messages": self.messages}, None)
            if update:
                new = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
                summary_msg, preserved = new[0], new[1:]
                cutoff = state_len - len(preserved)
                first_kept = self.index_of(preserved[0]) if preserved else index
                text = text_of(summary_msg)
                events.append(
                    {
                        "layer": "summarization",
                        "tokens_before": int(self.begin.get("overhead_tokens") or 0) + counted,
                        "detail": {
                            "type": "summarized",
                            "state_len": index,
                            "view_cutoff": cutoff,
                            "state_cutoff": first_kept,
                            "summarized_from": self.state_cutoff,
                            "chained": self.summary_count > 0,
                            "newly_summarized": first_kept - self.state_cutoff,
                            "kept": len(preserved),
                            "history_file": "",
                            "summary_chars": len(text),
                            "summary_message": text,
                        },
                    }
                )
                self.summary_count += 1
                self.state_cutoff = first_kept
                self.messages = new
        sent: list[Any] = list(self.messages)
        if self.ce is not None:
            captured: dict[str, Any] = {}

            def handler(req: ModelRequest) -> ModelResponse:
                captured["req"] = req
                return ModelResponse(result=[AIMessage(content="")])

            request = ModelRequest(
                model=self.model,
                messages=list(self.messages),
                system_message=self.system_message,
                tools=self.tools,
                state={"messages": self.messages},
                runtime=None,
            )
            self.ce.wrap_model_call(request, handler)
            sent = list(captured["req"].messages)
            cleared = [
                self.index_of(m)
                for m in sent
                if isinstance(m, ToolMessage) and m.response_metadata.get("context_editing", {}).get("cleared")
            ]
            cleared = [k for k in cleared if k is not None]
            if cleared:
                tools = [m for m in sent if isinstance(m, ToolMessage)]
                excluded = sum(1 for m in tools if m.name in set(self.edit.exclude_tools))
                events.append(
                    {
                        "layer": "context_editing",
                        "detail": {
                            "type": "cleared",
                            "cleared": len(cleared),
                            "newly_cleared": [k for k in cleared if k not in self.cleared_before],
                            "kept": min(self.edit.keep, len(tools)),
                            "excluded": excluded,
                            "placeholder": self.edit.placeholder,
                        },
                    }
                )
            self.cleared_before = set(cleared)
        return self.view(sent, events, None)


def make(begin: dict[str, Any], channel: Channel) -> LangChainEngine:
    return LangChainEngine(begin, channel)
