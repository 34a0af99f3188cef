"""The ``medaudit`` command line (thin: parse, call one library function, exit code)."""
