"""Test tooling shipped with chatsvc (used by its tests and by evals/)."""

from chatsvc.testing._loopback import LoopbackHTTPServer
from chatsvc.testing._process import ServiceProcess
from chatsvc.testing._upstream import RecordedRequest, Reply, ScriptedUpstream

__all__ = ["LoopbackHTTPServer", "RecordedRequest", "Reply", "ScriptedUpstream",
           "ServiceProcess"]
