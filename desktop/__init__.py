"""Mnemo's PySide6 desktop app (a thin view on ``engine``); it arrives with the desktop issue."""
