"""The workbench's modules are imported from lib/, as ./fastreap does."""

import sys
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "lib"
sys.path.insert(0, str(LIB))
