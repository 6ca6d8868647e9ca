"""Image keys: what decides a cached kernel, and that the flavor table
gives the same keys as the fragments always did (a warm cache stays
warm)."""

import pytest

import build
import common
from flavors import FLAVORS


@pytest.fixture
def pinned(monkeypatch):
    monkeypatch.setattr(build, "source_version", lambda: "6.12.118-1")
    monkeypatch.setattr(build, "patches_hash", lambda v: f"patches-of-{v}")
    monkeypatch.setattr(build, "variant_name", lambda v: v)


def test_fragments_in_merge_order():
    config = common.REPO / "config"
    assert build.fragments("fast") == [config / "fast.config"]
    assert build.fragments("debug") == [config / "fast.config",
                                        config / "debug.config"]
    assert build.fragments("rt") == [config / "fast.config",
                                     config / "debug.config",
                                     config / "rt.config"]
    for flavor in FLAVORS:
        assert all(f.exists() for f in build.fragments(flavor))


def test_unknown_flavor_is_a_one_line_error():
    with pytest.raises(common.Error, match="unknown flavor 'nope'"):
        build.fragments("nope")


def test_image_key_hashes_recipe_source_variant_flavor_configs_patches(
        pinned):
    frags = [f.read_bytes() for f in build.fragments("debug")]
    want = common.digest(build.RECIPE, "6.12.118-1", "fastreap", "debug",
                         *frags, "patches-of-fastreap")
    assert build.image_key("fastreap", "debug") == want


def test_image_keys_differ_by_variant_and_flavor(pinned):
    keys = {build.image_key(v, f) for v in ("stock", "fastreap")
            for f in FLAVORS}
    assert len(keys) == 2 * len(FLAVORS)
    again = build.image_key("stock", "fast")
    assert again == build.image_key("stock", "fast")


def test_image_key_follows_the_patches(pinned, monkeypatch):
    before = build.image_key("fastreap", "fast")
    monkeypatch.setattr(build, "patches_hash", lambda v: "changed")
    assert build.image_key("fastreap", "fast") != before


def test_image_dir_names_variant_flavor_and_key(pinned, monkeypatch,
                                                tmp_path):
    monkeypatch.setattr(build, "source_dir", lambda: tmp_path)
    key = build.image_key("stock", "fast")
    assert build.image_dir("stock", "fast") == (
        tmp_path / "images" / f"stock-fast-{key}")
    assert build.cached_image("stock", "fast") is None
