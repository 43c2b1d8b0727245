"""The one error type for mistakes a user can make (bad keys, values, ids, layouts)."""


class InputError(ValueError):
    """A user-caused problem. The message names the field and the accepted values.

    The CLI prints it on one line and exits with status 2; nothing else is raised for user input.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        """Pickled as its field and message (a planner worker process sends it back to the web server)."""
        return type(self), (self.field, self.message)
