"""Faces of the results: terminal tables (and, later, Markdown and HTML)."""
