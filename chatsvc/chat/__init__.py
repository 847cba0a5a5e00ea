"""One chat turn: context from the stores, the upstream LLM, the relay of its answer.

`Sources` is what a turn reads, `prepare` builds its prompt (`HeadStart`: with the
query's embedding started beforehand, by an embedding service), `Relay` streams the
answer (within `Limits`) and `Turn` ties them to a stored conversation. `Journal`
numbers and records a streamed turn's events (re-attaching, stop from any process);
`Exchange` keeps a /v1 request's exchange as a turn of a stored conversation;
`Detached` runs the resumable turns that outlive their request; `TurnClaims` keeps this
process's claims on its turns' conversations alive, and frees those of dead processes.
"""

from chatsvc.chat._claims import TurnClaims
from chatsvc.chat._detached import Detached
from chatsvc.chat._exchange import Exchange
from chatsvc.chat._gather import Sources
from chatsvc.chat._journal import Journal
from chatsvc.chat._limits import Limits
from chatsvc.chat._prepare import HeadStart, Prepared, prepare, stable_snapshot, user_today
from chatsvc.chat._relay import Outcome, Relay
from chatsvc.chat._tool_loop import ToolEvent, ToolRunner
from chatsvc.chat._turn import DELETED, Turn

__all__ = [
    "DELETED", "Detached", "Exchange", "HeadStart", "Journal", "Limits", "Outcome", "Prepared",
    "Relay", "Sources", "ToolEvent", "ToolRunner", "Turn", "TurnClaims",
    "prepare", "stable_snapshot", "user_today",
]
