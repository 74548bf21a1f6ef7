#!/usr/bin/env python3
"""Write a big trace for the replay-memory measurement (benches/README.md, "Memory of a replay"): the golden
synthetic-s7 trace repeated N times (default 14, ~27.6 MB), tool-call ids made unique.

--format picks how it is written (default `fixture`):
  fixture        fixture-style JSON Lines of messages ({"role", "content", "tool_calls":[{id,name,args}]})
  canonical      ctxbench's canonical JSONL (a header line, then {"type":"message",…} lines)
  openai         one OpenAI document {"model", "messages":[…]} (tool calls {id, type, function:{name,
                 arguments: JSON string}}), pretty-printed so it is not read as JSON Lines
  openai-lines   OpenAI conversations per line ({"id", "messages":[…]}), one per copy of the trace
  anthropic      one Anthropic Messages document (text/tool_use/tool_result blocks)
  claude-code    a Claude Code session: one JSONL record per message
  tau            a τ-bench results array, one run ({"task_id", "trial", "traj": OpenAI messages}) per copy
  swe-agent      one SWE-agent .traj document ({"history": OpenAI messages, "trajectory": [], "info"})
  atif           one ATIF v1.2 document (agent steps with tool calls and observation results)
  mini-swe       one mini-swe-agent .traj.json document (tool calls as ```bash blocks, results
                 as user observations), pretty-printed
`--canonical` is kept as a synonym of `--format canonical`.
Usage: python3 benches/runner/big_trace.py OUT [N] [--format F]"""
import json, sys

argv = sys.argv[1:]
fmt = "fixture"
if "--canonical" in argv:
    argv.remove("--canonical")
    fmt = "canonical"
if "--format" in argv:
    i = argv.index("--format")
    fmt = argv[i + 1]
    del argv[i : i + 2]
FORMATS = ["fixture", "canonical", "openai", "openai-lines", "anthropic", "claude-code", "mini-swe",
           "tau", "swe-agent", "atif"]
if fmt not in FORMATS:
    sys.exit(f"unknown --format {fmt!r}; expected one of {', '.join(FORMATS)}")
src = "testdata/deepagents-golden/synthetic-s7/trace.jsonl"
out, n = argv[0], int(argv[1]) if len(argv) > 1 else 14
lines = [json.loads(l) for l in open(src)]


def copy(k):
    """Copy k of the golden messages, fixture-style, ids made unique."""
    for m in lines:
        m = json.loads(json.dumps(m))
        for c in m.get("tool_calls", []):
            c["id"] += f"_r{k}"
        if "tool_call_id" in m:
            m["tool_call_id"] += f"_r{k}"
        yield m


def openai(m):
    o = {"role": m["role"], "content": m["content"]}
    if m.get("tool_calls"):
        o["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}))}}
            for c in m["tool_calls"]
        ]
    if "tool_call_id" in m:
        o["tool_call_id"] = m["tool_call_id"]
    if "name" in m:
        o["name"] = m["name"]
    return o


def anthropic(msgs):
    """Anthropic messages: tool results become user turns of tool_result blocks."""
    out = []
    for m in msgs:
        if m["role"] == "assistant":
            blocks = [{"type": "text", "text": m["content"]}] if m["content"] else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c.get("args", {})}
                       for c in m.get("tool_calls", [])]
            out.append({"role": "assistant", "content": blocks})
        elif m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def mini_swe(m):
    """A mini-swe-agent message: the first tool call as a bash block, results as observations."""
    if m["role"] == "tool":
        return {"role": "user", "content": m["content"]}
    content = m["content"]
    if m.get("tool_calls"):
        content += "\n```bash\n" + json.dumps(m["tool_calls"][0].get("args", {})) + "\n```"
    return {"role": m["role"], "content": content}


def atif(msgs):
    """ATIF steps: tool results become the observation of the agent step that called them."""
    steps = []
    for m in msgs:
        if m["role"] == "tool":
            steps[-1].setdefault("observation", {"results": []})["results"].append(
                {"source_call_id": m["tool_call_id"], "content": m["content"]})
            continue
        step = {"step_id": len(steps) + 1, "source": "agent" if m["role"] == "assistant" else m["role"],
                "message": m["content"]}
        if m.get("tool_calls"):
            step["tool_calls"] = [{"tool_call_id": c["id"], "function_name": c["name"],
                                   "arguments": c.get("args", {})} for c in m["tool_calls"]]
        steps.append(step)
    return steps


with open(out, "w") as f:
    if fmt in ("fixture", "canonical"):
        if fmt == "canonical":
            meta = {"id": f"synthetic-s7-x{n}", "source_format": "openai"}
            f.write(json.dumps({"type": "header", "schema_version": 1, "meta": meta}) + "\n")
        for k in range(n):
            for m in copy(k):
                if fmt == "canonical":
                    for c in m.get("tool_calls", []):
                        c["arguments"] = c.pop("args", {})
                    m = {"type": "message", **m}
                f.write(json.dumps(m) + "\n")
    elif fmt == "openai":
        msgs = [openai(m) for k in range(n) for m in copy(k)]
        json.dump({"model": "gpt-4o", "messages": msgs}, f, indent=1)
    elif fmt == "openai-lines":
        for k in range(n):
            f.write(json.dumps({"id": f"c{k}", "messages": [openai(m) for m in copy(k)]}) + "\n")
    elif fmt == "anthropic":
        msgs = anthropic([m for k in range(n) for m in copy(k)])
        json.dump({"model": "claude", "system": "be brief", "messages": msgs}, f, indent=1)
    elif fmt == "claude-code":
        for i, m in enumerate(anthropic([m for k in range(n) for m in copy(k)])):
            rec = {"type": m["role"], "uuid": f"u{i}", "sessionId": "s",
                   "timestamp": "2025-06-01T12:00:00Z",
                   "message": {**m, **({"id": f"msg{i}", "model": "claude"} if m["role"] == "assistant" else {})}}
            f.write(json.dumps(rec) + "\n")
    elif fmt == "mini-swe":
        msgs = [mini_swe(m) for k in range(n) for m in copy(k)]
        doc = {"trajectory_format": "mini-swe-agent-1", "instance_id": "big", "info": {}, "messages": msgs}
        json.dump(doc, f, indent=1)
    elif fmt == "tau":
        runs = [{"task_id": k, "trial": 0, "reward": 1.0, "info": {}, "traj": [openai(m) for m in copy(k)]}
                for k in range(n)]
        json.dump(runs, f, indent=1)
    elif fmt == "swe-agent":
        msgs = [openai(m) for k in range(n) for m in copy(k)]
        json.dump({"history": msgs, "trajectory": [], "info": {}}, f, indent=1)
    elif fmt == "atif":
        doc = {"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a", "model_name": "m"},
               "steps": atif([m for k in range(n) for m in copy(k)])}
        json.dump(doc, f, indent=1)
