"""The kernel source and its variants: Debian's linux-source-6.12 unpacked
once as a git repository (tag "stock"), and one git worktree per variant,
stock plus patches/<variant> applied with git am.

  <source version>/trees/stock        Debian's tree as a git repo
  <source version>/trees/<variant>    a git worktree: stock + patches
"""

import functools
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from common import (CACHE, REPO, SOURCE_PACKAGE, Error, Lock, check_disk,
                    digest, ensure_packages, say)

SOURCE_TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
COVER_LETTER = "0000-cover-letter.patch"


@functools.cache
def source_version():
    # Every cache key starts here, so a fresh machine installs the kernel
    # source on the first command that needs it; the tools to build it come
    # with the commands that build (build.build(), stock_tree()).
    ensure_packages(extra=[SOURCE_PACKAGE])
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", SOURCE_PACKAGE],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout:
        raise Error(f"{SOURCE_PACKAGE} is not installed")
    return r.stdout.strip()


def source_dir():
    return CACHE / re.sub(r"[^A-Za-z0-9.+-]", "_", source_version())


# --- trees and variants ----------------------------------------------------

# The workbench's own commits carry its name, whatever git's config says.
GIT_COMMITTER = {"GIT_COMMITTER_NAME": "fastreap",
                 "GIT_COMMITTER_EMAIL": "fastreap@localhost"}
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "fastreap",
                "GIT_AUTHOR_EMAIL": "fastreap@localhost", **GIT_COMMITTER}


def git(tree, *args, check=True, capture=True, env=None):
    """git -C TREE ARGS as the workbench; its output, or Error."""
    env = dict(env or os.environ, **GIT_IDENTITY)
    r = subprocess.run(["git", "-C", str(tree), *args], env=env, text=True,
                       capture_output=capture)
    if check and r.returncode != 0:
        msg = (r.stderr or r.stdout or "").strip().splitlines()
        raise Error(f"git {args[0]} in {tree} failed: "
                    + (msg[0] if msg else f"status {r.returncode}"))
    return r.stdout.strip() if capture else ""


def stock_tree():
    """Debian's tree, unpacked once into the cache as a git repository."""
    tree = source_dir() / "trees" / "stock"
    if (tree / ".git").exists() and git(tree, "tag", "-l", "stock"):
        return tree
    ensure_packages("build")
    if not SOURCE_TARBALL.exists():
        raise Error(f"{SOURCE_TARBALL} is missing; reinstall {SOURCE_PACKAGE}")
    with Lock(source_dir() / "unpack.lock"):
        if (tree / ".git").exists() and git(tree, "tag", "-l", "stock"):
            return tree
        check_disk(source_dir().parent, 4)
        tmp = tree.with_name(f".stock.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        say(f"unpacking {SOURCE_TARBALL} ({source_version()}) into {tree}")
        t0 = time.time()
        subprocess.run(["tar", "-xJf", str(SOURCE_TARBALL), "-C", str(tmp),
                        "--strip-components=1"], check=True)
        say("making it a git repository (tag 'stock')")
        git(tmp, "init", "-q", "-b", "debian")
        # Debian's top-level .gitignore ignores everything: force-add.
        git(tmp, "add", "-f", "-A", ".")
        git(tmp, "commit", "-q", "-m",
            f"{SOURCE_PACKAGE} {source_version()} as shipped by Debian")
        git(tmp, "tag", "stock")
        shutil.rmtree(tree, ignore_errors=True)
        os.rename(tmp, tree)
        say(f"unpacked in {time.time() - t0:.0f}s")
    return tree


def known_variants():
    names = ["stock"]
    pdir = REPO / "patches"
    if pdir.is_dir():
        names += sorted(d.name for d in pdir.iterdir() if d.is_dir())
    return names


def variant_patch_dir(variant):
    """stock has no patches; NAME is patches/NAME/; a path is used as is."""
    if variant == "stock":
        return None
    if "/" in variant:
        pdir = Path(variant).resolve()
    else:
        pdir = REPO / "patches" / variant
    if not pdir.is_dir():
        raise Error(f"unknown variant '{variant}' (known: "
                    + ", ".join(known_variants()) + ")")
    return pdir


def variant_name(variant):
    return "stock" if variant == "stock" else variant_patch_dir(variant).name


def variant_patches(variant):
    pdir = variant_patch_dir(variant)
    if pdir is None:
        return []
    return sorted(p for p in pdir.glob("*.patch") if p.name != COVER_LETTER)


def patches_hash(variant):
    return digest(*[p.read_bytes() for p in variant_patches(variant)])


def variant_tree(variant):
    """The variant's worktree, at stock + its patches, applied with git am.

    A developer may edit and commit in the worktree and export the commits
    with 'fastreap export'.  Commits or edits that were not exported are
    never thrown away: the tree is then refused with a message instead.
    """
    stock = stock_tree()
    name = variant_name(variant)
    if name == "stock":
        return stock
    tree = stock.parent / name
    state_file = tree / ".fastreap-applied"
    want = patches_hash(variant)
    with Lock(stock.parent / f".{name}.lock"):
        if not (tree / ".git").exists():
            git(stock, "worktree", "prune")
            git(stock, "worktree", "add", "-q", "-f", "-B", name, str(tree),
                "stock")
            state = {"patches": digest(), "head": git(stock, "rev-parse",
                                                      "stock")}
        elif state_file.exists():
            state = json.loads(state_file.read_text())
        else:
            state = {"patches": None, "head": git(stock, "rev-parse",
                                                  "stock")}
        head = git(tree, "rev-parse", "HEAD")
        if state["patches"] == want and head == state["head"]:
            return tree
        if git(tree, "status", "--porcelain", "--untracked-files=no"):
            raise Error(f"{tree} has uncommitted changes; commit and run "
                        f"'./fastreap export {name}', or discard them")
        if head != state["head"]:
            raise Error(f"{tree} has commits not exported to patches/; run "
                        f"'./fastreap export {name}' or "
                        f"'./fastreap tree --reset {name}'")
        apply_patches(tree, name, variant_patches(variant))
        state = {"patches": want, "head": git(tree, "rev-parse", "HEAD")}
        state_file.write_text(json.dumps(state))
        return tree


def apply_patches(tree, name, patches):
    (tree / ".fastreap-applied").unlink(missing_ok=True)
    git(tree, "checkout", "-q", "-B", name, "stock")
    if not patches:
        return
    say(f"applying {len(patches)} patch(es) to {name}")
    r = subprocess.run(["git", "-C", str(tree), "am", "-q", "--3way",
                        *map(str, patches)], capture_output=True, text=True,
                       env=dict(os.environ, **GIT_COMMITTER))
    if r.returncode != 0:
        failed = git(tree, "am", "--show-current-patch=diff", check=False)
        subject = re.search(r"^Patch failed at \d+ (.*)$",
                            r.stdout + r.stderr, re.M)
        git(tree, "am", "--abort", check=False)
        git(tree, "checkout", "-q", "-B", name, "stock")
        what = subject.group(1) if subject else (failed[:60] or "?")
        raise Error(f"patch does not apply to {name}: {what}")


def reset_tree(variant):
    tree = stock_tree().parent / variant_name(variant)
    (tree / ".fastreap-applied").unlink(missing_ok=True)
    if (tree / ".git").exists():
        git(tree, "checkout", "-q", "-f", "-B", variant_name(variant),
            "stock")
    return variant_tree(variant)


def export_tree(variant):
    """git format-patch the worktree's commits back into patches/NAME/."""
    name = variant_name(variant)
    tree = stock_tree().parent / name
    if name == "stock" or not (tree / ".git").exists():
        raise Error(f"no worktree for '{name}' (run './fastreap tree {name}')")
    # A path variant is exported back into its own directory.
    pdir = variant_patch_dir(variant) if name != variant \
        else REPO / "patches" / name
    pdir.mkdir(parents=True, exist_ok=True)
    cover = pdir / COVER_LETTER
    keep_cover = cover.read_text() if cover.exists() else None
    for old in pdir.glob("*.patch"):
        old.unlink()
    args = ["format-patch", "-q", "-o", str(pdir), "stock..HEAD"]
    if keep_cover is not None:
        args.insert(1, "--cover-letter")
    git(tree, *args)
    if keep_cover is not None:
        cover.write_text(keep_cover)
    state = {"patches": patches_hash(variant),
             "head": git(tree, "rev-parse", "HEAD")}
    (tree / ".fastreap-applied").write_text(json.dumps(state))
    return sorted(pdir.glob("*.patch"))
