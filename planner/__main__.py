"""``python -m planner``: the ``capplan`` command."""

import os
import signal
import sys


def _interrupted_while_starting(signum, frame) -> None:
    os.write(2, b"capplan: interrupted\n")  # Ctrl-C while importing: no traceback
    os._exit(130)


signal.signal(signal.SIGINT, _interrupted_while_starting)

from planner.cli.main import interrupted_while_starting, main  # noqa: E402

signal.signal(signal.SIGINT, interrupted_while_starting)  # main() then restores Ctrl-C
sys.exit(main())
