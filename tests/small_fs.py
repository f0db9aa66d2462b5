"""A small filesystem a test creates and fills: a tmpfs of a few MiB mounted on a directory
(the tests run as root), unmounted at the end whatever happens."""
from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def small_filesystem(path: Path, size_bytes: int) -> Iterator[Path]:
    """Mount a tmpfs of `size_bytes` on `path` (created if needed) for the `with` block."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        # Lazy: a process that still holds a file there (a replica being stopped) cannot block it.
        subprocess.run(["umount", "-l", str(path)], check=False)
