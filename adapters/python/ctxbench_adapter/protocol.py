"""ctxbench's external-engine protocol (version 2) on stdin/stdout, and the conversions between
its canonical messages and LangChain messages.

`Channel` reads and writes the JSON lines; `run(engine_factory)` is the main loop every engine of
this package shares: `begin` builds a fresh engine, `message` feeds it, `call` asks it for a view,
`end` drops it. `SummaryBridge` is the chat model handed to the middleware as its summary model:
each call becomes a `summarize` request to ctxbench, answered by the suite's summary provider.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, Callable

PROTOCOL_VERSION = 2


class ProtocolError(Exception):
    """ctxbench sent something this adapter does not understand."""


class Channel:
    """JSON lines: one object per line on stdin (from ctxbench) and stdout (to ctxbench)."""

    def __init__(self, inp=None, out=None) -> None:  # noqa: ANN001
        self.inp = inp if inp is not None else sys.stdin
        self.out = out if out is not None else sys.stdout
        self._next_id = 0
        # The `seq` of the call being answered: every `view` and `summarize` carries it back.
        self.seq: int | None = None

    def send(self, obj: dict[str, Any]) -> None:
        self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self.out.flush()

    def recv(self) -> dict[str, Any] | None:
        line = self.inp.readline()
        if not line:
            return None
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"not JSON ({exc}): {line[:200]!r}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise ProtocolError(f"expected an object with a 'type': {line[:200]!r}")
        return obj

    def summarize(self, messages: list[dict[str, Any]], prompt: str, previous_summary: str | None = None) -> str:
        """Ask ctxbench for a summary and wait for its answer."""
        self._next_id += 1
        rid = str(self._next_id)
        req: dict[str, Any] = {"type": "summarize", "seq": self.seq, "id": rid, "messages": messages, "prompt": prompt}
        if previous_summary is not None:
            req["previous_summary"] = previous_summary
        self.send(req)
        answer = self.recv()
        if answer is None:
            raise ProtocolError("stdin closed while waiting for a summary")
        if answer.get("type") != "summary" or answer.get("id") != rid:
            raise ProtocolError(f"expected the summary {rid}, got {json.dumps(answer)[:200]}")
        if answer.get("error"):
            raise RuntimeError(f"ctxbench's summarizer failed: {answer['error']}")
        return answer.get("text", "")


# ------------------------------------------------------------------------------------------------
# Messages


def trace_id(index: int) -> str:
    """The LangChain message id of trace message `index` (`m<5 digits>`, as the golden fixtures)."""
    return f"m{index:05d}"


def to_langchain(index: int, msg: dict[str, Any]):  # noqa: ANN201
    """A canonical trace message as a LangChain message with id `m<index>`."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.messages.tool import tool_call

    mid = trace_id(index)
    role = msg.get("role")
    content = msg.get("content", "")
    if role == "system":
        return SystemMessage(content=content, id=mid)
    if role == "user":
        return HumanMessage(content=content, id=mid)
    if role == "assistant":
        calls = []
        for c in msg.get("tool_calls", []):
            args = c.get("arguments", {})
            if not isinstance(args, dict):
                args = {"arguments": args}
            calls.append(tool_call(name=c["name"], args=args, id=c["id"]))
        return AIMessage(content=content, tool_calls=calls, id=mid)
    if role == "tool":
        return ToolMessage(content=content, tool_call_id=msg.get("tool_call_id") or "", name=msg.get("name"), id=mid)
    raise ProtocolError(f"message {index}: unknown role {role!r}")


def text_of(m: Any) -> str:
    c = m.content
    if isinstance(c, str):
        return c
    parts = []
    for block in c:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def role_of(m: Any) -> str:
    return {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}.get(m.type, "user")


def to_canonical(m: Any, original: dict[str, Any] | None) -> dict[str, Any]:
    """A LangChain message as a canonical one. When it stands for a trace message (`original`),
    the original is returned as it is unless the middleware changed its text or tool-call
    arguments (then a copy with those changed), so unchanged messages compare equal."""
    if original is not None:
        out = original
        text = text_of(m)
        if text != original.get("content", ""):
            out = dict(out)
            out["content"] = text
        if role_of(m) == "assistant" and original.get("tool_calls"):
            new_args = {c["id"]: c["args"] for c in getattr(m, "tool_calls", [])}
            calls = []
            changed = False
            for c in original["tool_calls"]:
                args = new_args.get(c["id"], c.get("arguments"))
                if args != c.get("arguments"):
                    changed = True
                    c = dict(c, arguments=args)
                calls.append(c)
            if changed:
                out = dict(out) if out is original else out
                out["tool_calls"] = calls
        return out
    msg: dict[str, Any] = {"role": role_of(m), "content": text_of(m)}
    if msg["role"] == "assistant" and getattr(m, "tool_calls", None):
        msg["tool_calls"] = [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for c in m.tool_calls]
    if msg["role"] == "tool":
        msg["tool_call_id"] = m.tool_call_id
        if m.name:
            msg["name"] = m.name
    return msg


# ------------------------------------------------------------------------------------------------
# The summary model


def make_summary_bridge(channel: Channel, engine: Any):  # noqa: ANN201
    """A LangChain chat model whose every call is a `summarize` request to ctxbench.

    It receives the middleware's fully formatted summary prompt (as a real summary model
    would). ctxbench is sent the messages being summarized, the previous summary's text apart,
    and the middleware's prompt template (`engine.pending_summary`, set just before the
    middleware calls the model); its answer is the model's reply."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class CtxbenchSummaryModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "ctxbench-summarizer"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001, ANN202
            pending = engine.pending_summary
            engine.pending_summary = None
            if pending is not None:
                msgs, prompt, previous = pending
            else:  # called some other way: send the prompt as one message
                msgs, prompt, previous = [to_canonical(m, None) for m in messages], "", None
            text = channel.summarize(msgs, prompt, previous)
            engine.summaries += 1
            engine.last_summary = text
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    return CtxbenchSummaryModel()


# ------------------------------------------------------------------------------------------------
# Main loop


def run(make_engine: Callable[[dict[str, Any], Channel], Any], channel: Channel | None = None) -> int:
    """Serve replays until stdin closes. `make_engine(begin, channel)` builds the engine of one
    replay; it must have `message(index, msg)` and `call(index) -> view dict`."""
    ch = channel or Channel()
    engine = None
    try:
        while True:
            m = ch.recv()
            if m is None:
                return 0
            kind = m["type"]
            if kind == "begin":
                if m.get("protocol") != PROTOCOL_VERSION:
                    raise ProtocolError(f"protocol {m.get('protocol')!r} not supported (this adapter speaks {PROTOCOL_VERSION})")
                engine = make_engine(m, ch)
            elif kind == "end":
                engine = None
            elif engine is None:
                raise ProtocolError(f"'{kind}' before 'begin'")
            elif kind == "message":
                engine.message(m["index"], m["message"])
            elif kind == "call":
                ch.seq = m["seq"]
                view = engine.call(m["index"])
                view["seq"] = m["seq"]
                ch.send(view)
                ch.seq = None
            else:
                raise ProtocolError(f"unexpected line of type {kind!r}")
    except Exception as exc:  # noqa: BLE001 - reported to ctxbench through stderr and the exit code
        traceback.print_exc(file=sys.stderr)
        print(f"ctxbench_adapter: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
