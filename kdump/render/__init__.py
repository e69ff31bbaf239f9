"""Presentation: events and results become text, JSON Lines or rich tables. Nothing is decided here."""
