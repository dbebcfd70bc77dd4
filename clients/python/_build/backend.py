"""The package's build backend (PEP 517, PEP 660), standard library only.

Why not setuptools: with setuptools older than 70.1 (Python 3.11's venv ships 65.5) building a
wheel needs the separate ``wheel`` package, which a fresh venv lacks and an offline machine
cannot fetch, so ``pip install ./clients/python`` failed there. This backend needs nothing, so
pip installs the package offline, with or without build isolation. It builds a pure-Python
wheel of ``agent_audit/`` (py.typed included), an sdist, and an editable wheel (a .pth file).
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "agent_audit"
NAME = "agent-audit"
SUMMARY = "Python client of the agent-run audit server: runs, leases and every model and tool event, standard library only."
REQUIRES_PYTHON = ">=3.9"
TAG = "py3-none-any"


def _version() -> str:
    found = re.search(r'^__version__ = "([^"]+)"$', (ROOT / PACKAGE / "__init__.py").read_text("utf-8"), re.M)
    if not found:
        raise RuntimeError(f"no __version__ in {PACKAGE}/__init__.py")
    return found.group(1)


def _metadata() -> bytes:
    headers = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {_version()}",
        f"Summary: {SUMMARY}",
        f"Requires-Python: {REQUIRES_PYTHON}",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Typing :: Typed",
        "Description-Content-Type: text/markdown",
    ]
    return ("\n".join(headers) + "\n\n" + (ROOT / "README.md").read_text("utf-8")).encode("utf-8")


def _package_files() -> List[Path]:
    return sorted(
        path for path in (ROOT / PACKAGE).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed")
    )


def _dist_info() -> str:
    return f"{PACKAGE}-{_version()}.dist-info"


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    dist_info = _dist_info()
    files = files + [
        (f"{dist_info}/METADATA", _metadata()),
        (f"{dist_info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: {PACKAGE}-build\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode()),
    ]
    record = io.StringIO()
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{name},sha256={digest},{len(data)}\n")
    record.write(f"{dist_info}/RECORD,,\n")
    files.append((f"{dist_info}/RECORD", record.getvalue().encode()))
    wheel_name = f"{PACKAGE}-{_version()}-{TAG}.whl"
    with zipfile.ZipFile(Path(directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files:
            wheel.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return wheel_name


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(path.relative_to(ROOT).as_posix(), path.read_bytes()) for path in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", f"{ROOT}\n".encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    base = f"{PACKAGE}-{_version()}"
    sources = [ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "_build" / "backend.py", *_package_files()]
    with tarfile.open(Path(sdist_directory) / f"{base}.tar.gz", "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for path in sources:
            sdist.add(path, f"{base}/{path.relative_to(ROOT).as_posix()}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        metadata = _metadata()
        info.size = len(metadata)
        sdist.addfile(info, io.BytesIO(metadata))
    return f"{base}.tar.gz"
