"""Memory in and out of Mnemo: its own archive, Letta Agent Files, ChatGPT and Claude exports."""
