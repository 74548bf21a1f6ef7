"""ctxbench's adapter: real Python context-management middleware (deepagents, LangChain) behind
ctxbench's external-engine protocol (JSON lines on stdin/stdout, see docs/engines.md).

    python -m ctxbench_adapter deepagents      # FilesystemMiddleware + deepagents summarization
    python -m ctxbench_adapter langchain       # LangChain SummarizationMiddleware / ContextEditingMiddleware
"""

__version__ = "0.1.0"
