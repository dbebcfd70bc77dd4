"""The Python interpreters installed on this machine that run, one of each version the client
supports (3.9 or later, as pyproject's backend and the README say): this one, then each
``python3.N`` on PATH and each of pyenv's versions. A pyenv shim on PATH may name a version it
then refuses to run, so each candidate is run once before it counts."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Tuple

OLDEST_SUPPORTED = (3, 9)


class Interpreter(NamedTuple):
    path: str
    version: Tuple[int, int, int]

    def __str__(self) -> str:
        return f"Python {'.'.join(map(str, self.version))} ({self.path})"


def _candidates() -> List[str]:
    found = [sys.executable]
    found += [path for path in (shutil.which(f"python3.{minor}") for minor in range(OLDEST_SUPPORTED[1], 20)) if path]
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found += [str(path) for path in sorted((pyenv_root / "versions").glob("*/bin/python3"))]
    return found


def _version(path: str) -> Tuple[int, ...]:
    try:
        answer = subprocess.run([path, "-c", "import sys; print(*sys.version_info[:3])"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(map(int, answer.stdout.split())) if answer.returncode == 0 else ()


@functools.lru_cache(maxsize=None)
def installed() -> Tuple[Interpreter, ...]:
    """One interpreter of each supported version, oldest first; this one for its own version."""
    by_version: Dict[Tuple[int, int], Interpreter] = {}
    for path in _candidates():
        version = _version(path)
        if len(version) == 3 and version[:2] >= OLDEST_SUPPORTED and version[:2] not in by_version:
            by_version[version[:2]] = Interpreter(path, (version[0], version[1], version[2]))
    return tuple(by_version[key] for key in sorted(by_version))


if __name__ == "__main__":
    # `python3 -m tests.interpreters`: the others, one "version path" a line (test/clients/python.e2e.test.ts).
    for interpreter in installed():
        if interpreter.version[:2] != sys.version_info[:2]:
            print(".".join(map(str, interpreter.version)), interpreter.path)
