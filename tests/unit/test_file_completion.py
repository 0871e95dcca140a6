"""File-path completion (mcp_tools/files.py): only the directory the typed path names, within a bound of entries."""

from __future__ import annotations

import gevent
import pytest

from mcp_tools import Completion
from mcp_tools.files import ENTRIES_PER_YIELD, suggest_paths

PLENTY = 10_000


@pytest.fixture
def root(tmp_path):
    """A files root with files, a nested tree and an outside directory next to it."""
    files = tmp_path / "files"
    (files / "docs" / "deep").mkdir(parents=True)
    (files / "notes.txt").write_text("n")
    (files / "data.json").write_text("{}")
    (files / "docs" / "guide.md").write_text("g")
    (files / "docs" / "deep" / "inner.txt").write_text("i")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s")
    return files.resolve()


def test_suggestions_are_files_under_the_root_that_start_with_what_was_typed(root):
    assert suggest_paths(str(root), f"{root}/d", PLENTY) == Completion(
        [f"{root}/data.json", f"{root}/docs/deep/inner.txt", f"{root}/docs/guide.md"])
    assert suggest_paths(str(root), f"{root}/docs/g", PLENTY) == Completion([f"{root}/docs/guide.md"])
    assert suggest_paths(str(root), "/etc/", PLENTY) == Completion([])


@pytest.mark.parametrize("typed", ["", "/", "{root}"], ids=["nothing", "slash", "the-root"])
def test_a_path_that_stops_short_of_the_root_suggests_everything_in_it(root, typed):
    assert len(suggest_paths(str(root), typed.format(root=root), PLENTY).values) == 4


def test_no_suggestions_without_a_root(root):
    assert suggest_paths("", "/", PLENTY) == Completion([])


def test_only_the_directory_the_typed_path_names_is_read(root):
    for n in range(50):
        (root / f"bulk-{n:02d}.txt").write_text("x")
    # 50 entries beside docs/ would exceed a bound of 3; inside docs/ there are only 2 (guide.md, deep/) and 1 below.
    assert suggest_paths(str(root), f"{root}/docs/", 3) == Completion(
        [f"{root}/docs/deep/inner.txt", f"{root}/docs/guide.md"])


def test_the_walk_stops_after_the_bound_and_says_there_may_be_more(root):
    for n in range(50):
        (root / "docs" / f"many-{n:02d}.txt").write_text("x")
    cut = suggest_paths(str(root), f"{root}/docs/many-4", 20)
    assert cut.has_more is True
    assert set(cut.values) <= {f"{root}/docs/many-4{n}.txt" for n in range(10)}
    # Exactly as many entries as the bound is not cut short: the walk saw everything.
    whole = suggest_paths(str(root), f"{root}/docs/", 53)
    assert (len(whole.values), whole.has_more) == (52, False)
    assert suggest_paths(str(root), f"{root}/docs/", 52).has_more is True


def test_symlinks_out_of_the_root_are_not_suggested_and_linked_directories_not_walked(root):
    outside = root.parent / "outside"
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "linked").symlink_to(outside)
    (root / "latest.txt").symlink_to(root / "notes.txt")
    (root / "loop").symlink_to(root / "loop")
    suggested = suggest_paths(str(root), f"{root}/", PLENTY).values
    assert f"{root}/latest.txt" in suggested
    assert not [path for path in suggested if "secret" in path or "escape" in path or "loop" in path]
    assert suggest_paths(str(root), f"{root}/linked/", PLENTY) == Completion([])


@pytest.mark.parametrize("typed", ["{root}/../outside/", "{root}/docs/..", "{root}/a\x00b", "{root}/" + "x" * 300 + "/",
                                   "{root}/notes.txt/", "{root}/loop/"],
                         ids=["dot-dot", "trailing-dot-dot", "nul", "long-name", "file-as-directory", "loop"])
def test_paths_that_name_no_directory_in_the_root_suggest_nothing(root, typed):
    (root / "loop").symlink_to(root / "loop")
    assert suggest_paths(str(root), typed.format(root=root), PLENTY) == Completion([])


def test_a_long_walk_lets_other_greenlets_run(root):
    for n in range(ENTRIES_PER_YIELD * 4):
        (root / "docs" / f"f{n:04d}").touch()
    ran_meanwhile = []
    other = gevent.spawn(ran_meanwhile.append, True)
    suggest_paths(str(root), f"{root}/docs/", PLENTY)
    # Nothing else yields here: the other greenlet ran only because the walk gave way.
    assert ran_meanwhile == [True]
    other.join(timeout=1)
