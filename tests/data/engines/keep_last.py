#!/usr/bin/env python3
"""A compactor ctxbench's authors never saw: keep the last N messages; when it drops messages
it asks ctxbench for a summary of them and puts the summary first (after the trace's first
message with `pin_first`). Speaks ctxbench's external-engine protocol (docs/engines.md) on
stdin/stdout.

Configuration (`external.config`): keep (messages kept, default 6), trigger (tokens of the
request, by chars/4, above which it compacts; default 0.5 x window), pin_first (keep the
first message, the task, before the summary and say with `indexes` which trace message each
message of the view is; default false).
"""
import json
import os
import sys


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    msgs, begin, summary, cut, asked = [], {}, None, 0, 0
    for line in sys.stdin:
        m = json.loads(line)
        t = m["type"]
        if t == "begin":
            pin = bool((m.get("config") or {}).get("pin_first", False))
            msgs, begin, summary, cut = [], m, None, 1 if pin else 0
        elif t == "message":
            assert m["index"] == len(msgs), (m["index"], len(msgs))
            msgs.append(m["message"])
        elif t == "call":
            assert m["index"] == len(msgs), "call before all messages were sent"
            cfg = begin.get("config") or {}
            keep = int(cfg.get("keep", 6))
            trigger = int(cfg.get("trigger", begin["window"] // 2))
            events = []
            files = {}
            size = sum(len(x.get("content", "")) for x in msgs[cut:]) // 4
            new_cut = max(cut, len(msgs) - keep)
            # never start the kept part on a tool result (it would be an orphan)
            while new_cut < len(msgs) and msgs[new_cut]["role"] == "tool":
                new_cut -= 1
            if size > trigger and new_cut > cut:
                asked += 1
                previous = summary
                send({"type": "summarize", "seq": m["seq"], "id": str(asked),
                      "messages": msgs[cut:new_cut],
                      "prompt": "Summarize the conversation so far.",
                      "previous_summary": summary})
                answer = json.loads(sys.stdin.readline())
                assert answer["type"] == "summary" and answer["id"] == str(asked), answer
                summary = answer["text"]
                path = "/conversation_history/%s.md" % begin["trace_id"]
                files[path] = "\n".join(x.get("content", "") for x in msgs[cut:new_cut])
                events.append({"detail": {"type": "summarized", "state_cutoff": new_cut,
                                          "summarized_from": cut,
                                          "chained": previous is not None,
                                          "newly_summarized": new_cut - cut,
                                          "kept": len(msgs) - new_cut,
                                          "history_file": path,
                                          "summary_message": summary}})
                cut = new_cut
            view, indexes = msgs[cut:], list(range(cut, len(msgs)))
            if summary is not None:
                view = [{"role": "user", "content": "Summary of earlier work:\n" + summary}] + view
                indexes = [None] + indexes
            if pin:
                view, indexes = msgs[:1] + view, [0] + indexes
            if os.environ.get("KEEP_LAST_LOG"):  # tests compare ctxbench's views with these
                with open(os.environ["KEEP_LAST_LOG"], "a") as log:  # (logged before it is sent)
                    log.write(json.dumps({"index": m["index"], "messages": view}) + "\n")
            line = {"type": "view", "seq": m["seq"], "messages": view, "events": events,
                    "files": files}
            if pin:
                line["indexes"] = indexes
            send(line)
        elif t == "end":
            pass
        else:
            print("unknown line type %r" % t, file=sys.stderr)
            sys.exit(3)


if __name__ == "__main__":
    main()
