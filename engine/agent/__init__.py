"""The step loop: model -> one function call -> result -> another step (heartbeat) or yield.

Every step commits atomically: the call, its result and anything the function wrote to SQLite
(proposals) land in one transaction, so a crash at any instant leaves the conversation at the last
whole step, never with half a call. A turn ends when the model replies with ``send_message``, when
it yields, at the step limit or when it repeats a call; the user always sees why.

In the assisted mode (``assisted_turn``, with the rules of ``assisted_rules``, chosen by
``engine.modes``) a turn is instead: recall
for the message (stored as a ``recall`` call, so the chat shows it), one plain-text reply, then a
memory step after the reply. Both modes share the window, storage, proposals and events.
"""

from engine.agent.loop import Agent
from engine.agent.steps import EventCallback

__all__ = ["Agent", "EventCallback"]
