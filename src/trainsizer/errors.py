"""The one error type for mistakes a user can make (bad keys, values, ids, layouts)."""


class InputError(ValueError):
    """A user-caused problem. The message names the field and the accepted values.

    The CLI prints it on one line and exits with status 2; nothing else is raised for user input.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)
