"""Files: reading inputs and writing outputs atomically (the only package besides cli with paths)."""

from medaudit.io.output import atomic_directory, file_sha256, write_json

__all__ = ["atomic_directory", "write_json", "file_sha256"]
