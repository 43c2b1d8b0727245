"""The local web planner: a FastAPI JSON API and one server-rendered page (``trainsizer serve``).

Nothing here is imported by the command line at start-up; ``trainsizer.web.app`` pulls in FastAPI,
Jinja2 and the planner only when the server is created.
"""
