"""``python -m app.frontends.doctor``: the command alone, as ``interview-copilot doctor``."""

import sys

from app.frontends.doctor.command import run_doctor

if __name__ == "__main__":
    sys.exit(run_doctor(sys.argv[1:]))
