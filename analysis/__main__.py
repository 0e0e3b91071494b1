"""`python -m analysis ...` entry point (see analysis/cli.py)."""

import os
import sys

from .cli import main

if __name__ == "__main__":
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # output piped into `head`: exit quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)
