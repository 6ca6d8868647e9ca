"""The workbench's names that command modules use (lib/bench.py,
lib/demo.py), gathered in one import from the modules that define them:
common (paths, Error, packages), variants (the source and its variants),
build (kernel images) and runner (QEMU).  Nothing is defined here.
"""

from build import build, image_key
from common import REPO, SOURCE_PACKAGE, Error, digest, ensure_packages
from runner import new_rundir, run
from variants import (known_variants, patches_hash, source_version,
                      variant_name, variant_patch_dir)

__all__ = ["build", "image_key", "REPO", "SOURCE_PACKAGE", "Error",
           "digest", "ensure_packages", "new_rundir", "run", "known_variants",
           "patches_hash", "source_version", "variant_name",
           "variant_patch_dir"]
