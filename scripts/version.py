#!/usr/bin/env python3
"""Print the version that include/evx/common.h declares (MAJOR.MINOR.PATCH).

Meson reads the project version through this script, so the header is the one
place the version is written."""
import pathlib
import re
import sys

header = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                      pathlib.Path(__file__).resolve().parent.parent / "include/evx/common.h")
text = header.read_text()
parts = [re.search(rf"#define EVX_VERSION_{p}\s+(\d+)", text).group(1)
         for p in ("MAJOR", "MINOR", "PATCH")]
print(".".join(parts))
