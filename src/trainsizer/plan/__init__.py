"""The planner: search GPU type, count, node shape and layout; rank what fits; say why."""
