"""``python -m devtools.turns_train OUTDIR``: see :mod:`devtools.turns_train`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# one BLAS thread: sums in one order, the same bytes each run (set before numpy loads)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m devtools.turns_train OUTDIR")
    from devtools.turns_train.train import run

    print(json.dumps(run(Path(sys.argv[1])), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
