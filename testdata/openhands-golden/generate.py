"""Generate golden fixtures for ctxbench's `openhands` preset from the real OpenHands SDK.

Usage (Python >= 3.12):
    python -m venv /tmp/ohvenv && /tmp/ohvenv/bin/pip install openhands-sdk==1.58.2
    OPENHANDS_SUPPRESS_BANNER=1 /tmp/ohvenv/bin/python generate.py > fixtures.json

A synthetic conversation (system prompt, user turns, assistant actions with one or two tool
calls each and their observations) is fed event by event to the SDK's
`LLMSummarizingCondenser`; before every model call the agent's loop is reproduced
(`View.from_events`, `condenser.condense(view)`, a returned `Condensation` is appended to the
event log and the view is rebuilt). The summarizing LLM is a fake that always answers
SUMMARY_TEXT (no network). For every call the fixture records the view the agent's LLM
would be sent, as canonical trace indexes (an action event maps to the index of the
assistant message that issued it) or "summary".
"""

import json

from openhands.sdk.context.condenser import LLMSummarizingCondenser
from openhands.sdk.context.view import View
from openhands.sdk.event import (
    ActionEvent,
    AgentErrorEvent,
    MessageEvent,
    SystemPromptEvent,
)
from openhands.sdk.event.condenser import Condensation, CondensationSummaryEvent
from openhands.sdk.llm import LLM, Message, MessageToolCall, TextContent

SUMMARY_TEXT = "USER_CONTEXT: golden fixture summary"


class _Resp:
    def __init__(self, n):
        self.id = f"summary-{n}"
        self.message = Message(role="assistant", content=[TextContent(text=SUMMARY_TEXT)])


def make_condenser(max_size, keep_first):
    llm = LLM(model="fake/fake", usage_id="condenser")
    c = LLMSummarizingCondenser(llm=llm, max_size=max_size, keep_first=keep_first)
    calls = {"n": 0}

    def generate(messages, **_):
        calls["n"] += 1
        return _Resp(calls["n"])

    object.__setattr__(c.llm, "generate", generate)
    return c


def conversation(steps, user_every):
    """Canonical messages of the synthetic session."""
    msgs = [{"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": "Task 0: fix the failing tests in the repository."}]
    call = 0
    for k in range(1, steps + 1):
        if k % user_every == 0:
            msgs.append({"role": "user", "content": f"Task {k}: also check module {k}."})
        n = 2 if k % 3 == 0 else 1
        tcs = []
        for j in range(n):
            call += 1
            tcs.append({"id": f"call_{call}", "name": "terminal",
                        "arguments": {"command": f"run step {k}.{j}"}})
        msgs.append({"role": "assistant", "content": f"Step {k}: running {n} command(s).",
                     "tool_calls": tcs})
        for tc in tcs:
            msgs.append({"role": "tool", "tool_call_id": tc["id"], "name": "terminal",
                         "content": f"output of {tc['arguments']['command']}: " + "ok " * (5 + k % 7)})
    msgs.append({"role": "assistant", "content": "All tasks are done."})
    return msgs


def events_of(msgs):
    """OpenHands events for each canonical message: (index, [events])."""
    out = []
    for i, m in enumerate(msgs):
        if m["role"] == "system":
            ev = [SystemPromptEvent(system_prompt=TextContent(text=m["content"]), tools=[])]
        elif m["role"] == "user":
            ev = [MessageEvent(source="user",
                               llm_message=Message(role="user", content=[TextContent(text=m["content"])]))]
        elif m["role"] == "assistant" and not m.get("tool_calls"):
            ev = [MessageEvent(source="agent",
                               llm_message=Message(role="assistant", content=[TextContent(text=m["content"])]),
                               llm_response_id=f"resp-{i}")]
        elif m["role"] == "assistant":
            ev = []
            for j, tc in enumerate(m["tool_calls"]):
                ev.append(ActionEvent(
                    thought=[TextContent(text=m["content"])] if j == 0 else [],
                    action=None,
                    tool_name=tc["name"],
                    tool_call_id=tc["id"],
                    tool_call=MessageToolCall(id=tc["id"], name=tc["name"],
                                              arguments=json.dumps(tc["arguments"]),
                                              origin="completion"),
                    llm_response_id=f"resp-{i}",
                ))
        else:
            ev = [AgentErrorEvent(tool_name=m["name"], tool_call_id=m["tool_call_id"],
                                  error=m["content"])]
        out.append((i, ev))
    return out


def run(max_size, keep_first, steps, user_every):
    msgs = conversation(steps, user_every)
    cond = make_condenser(max_size, keep_first)
    index_of = {}
    log = []
    calls = []
    for i, evs in events_of(msgs):
        if msgs[i]["role"] == "assistant":
            condensations = 0
            while True:
                view = View.from_events(log)
                r = cond.condense(view)
                if isinstance(r, Condensation):
                    log.append(r)
                    condensations += 1
                    continue
                break
            shown = []
            for e in view.events:
                if isinstance(e, CondensationSummaryEvent):
                    shown.append("summary")
                else:
                    k = index_of[e.id]
                    if not shown or shown[-1] != k:
                        shown.append(k)
            calls.append({"call": i, "condensations": condensations, "view": shown,
                          "events": len(view.events)})
        for e in evs:
            index_of[e.id] = i
            log.append(e)
    return {"max_size": max_size, "keep_first": keep_first, "summary_text": SUMMARY_TEXT,
            "messages": msgs, "calls": calls}


if __name__ == "__main__":
    import openhands.sdk
    cases = [run(20, 2, 40, 7), run(30, 4, 60, 5), run(16, 1, 30, 100)]
    print(json.dumps({"openhands_sdk": openhands.sdk.__version__ if hasattr(openhands.sdk, "__version__") else None,
                      "cases": cases}, indent=1))
