"""The one exception type for bad input.

Its message is a single line that says what is wrong and what to do about it. The entry points print it
without a traceback and exit with status 2; nothing already written to the run folder is removed.
"""


class InputError(ValueError):
    """Bad input from the user: an unknown key, a missing field, a sample larger than its split."""
