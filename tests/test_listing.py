"""The storage listing the doctor's orphan check reads (``health.list_folder``): the same rows as fsspec's
``find`` gives, one per file, on a local folder (walked with ``os.scandir``) and on another store."""

from __future__ import annotations

import os
import random

import fsspec
import pytest

from puffin_explorer.health import fill_listing_stats, hidden_from_cleanup, list_folder, listing_arrow
from puffin_explorer.iceberg.paths import join, normalize
from puffin_explorer.io.files import FileIO

#: Names a table folder holds: data and metadata files, Hadoop's hidden ones, partition folders.
NAMES = ["data", "metadata", "id_bucket=3", "_temporary", ".hidden", "_x=1", "part-00000.parquet",
         "v1.metadata.json", ".part-00000.parquet.crc", "_SUCCESS", "é", "a b"]


def _tree(root, seed: int) -> int:
    rng = random.Random(seed)
    made = 0
    for _ in range(300):
        parts = [rng.choice(NAMES) for _ in range(rng.randint(1, 4))]
        folder = root.joinpath(*parts[:-1])
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):  # a file of that name on the way
            continue
        path = folder / parts[-1]
        if path.exists():
            continue
        path.write_bytes(b"x" * rng.randint(0, 50))
        made += 1
    return made


def _listed_row(name: str, info: dict, root_path: str, root: str) -> dict:
    """The row a listing should give for one fsspec ``find`` entry, made a row at a time (the reference)."""
    base = root_path.rstrip("/")
    rel = name[len(base):].lstrip("/") if name.startswith(base) else name
    return {"location": normalize(join(root, rel)), "size": info["size"], "mtime_ms": int(info["mtime"] * 1000),
            "hidden": hidden_from_cleanup(rel)}


def _by_fsspec(root: str) -> list[dict]:
    fs, path = FileIO().fs(root)
    found = fs.find(path, detail=True, withdirs=False)
    return sorted((_listed_row(name, info, path, root) for name, info in found.items()),
                  key=lambda r: r["location"])


@pytest.mark.parametrize("seed", range(3))
def test_a_local_listing_is_fsspecs_row_for_row(tmp_path, seed):
    root = tmp_path / "t"
    made = _tree(root, seed)
    got = list_folder(FileIO(), str(root)).to_dict("records")  # in location order
    want = _by_fsspec(str(root))
    assert len(got) == len(want) == made
    assert got == want
    assert [r["hidden"] for r in got] == [hidden_from_cleanup(os.path.relpath(r["location"], root)) for r in got]
    # a folder below the root, as the Spark doctor lists one top-level folder per task
    sub = list_folder(FileIO(), "file://" + str(root), "file://" + str(root / "data"))
    assert sorted(sub.location) == [r["location"] for r in want if r["location"].startswith(str(root / "data") + "/")]


def test_folders_reached_again_through_links_are_walked_once_wherever_the_first_link_is(tmp_path):
    """A folder is told apart by ``stat`` only from the first link on: a link met after the folder it points to
    was walked, before it, and a link to a link, each list every file once."""
    root = tmp_path / "t"
    for d in ("a/x", "b", "c/y/z"):
        (root / d).mkdir(parents=True)
    for f in ("a/x/1.parquet", "b/2.parquet", "c/y/z/3.parquet", "top.json"):
        (root / f).write_bytes(b"12345")
    os.symlink(root / "a", root / "b" / "to-a")  # walked before or after a/, by the walk's order
    os.symlink(root / "c" / "y", root / "a" / "x" / "to-y")
    os.symlink(root / "a" / "x" / "to-y", root / "c" / "to-link")
    os.symlink(root, root / "c" / "y" / "z" / "to-root")
    got = list_folder(FileIO(), str(root))
    names = sorted(os.path.relpath(p, root) for p in got.location)
    assert sorted(os.path.basename(n) for n in names) == ["1.parquet", "2.parquet", "3.parquet", "top.json"]
    assert got["size"].tolist() == [5] * 4


def test_a_link_cycle_is_walked_once_and_a_missing_folder_is_empty(tmp_path):
    (tmp_path / "t" / "data").mkdir(parents=True)
    (tmp_path / "t" / "data" / "f.parquet").write_bytes(b"1234")
    os.symlink(tmp_path / "t", tmp_path / "t" / "data" / "loop")
    got = list_folder(FileIO(), str(tmp_path / "t"))
    assert got.location.tolist() == [str(tmp_path / "t" / "data" / "f.parquet")]
    assert got["size"].tolist() == [4] and not got.hidden.any()
    assert list(list_folder(FileIO(), str(tmp_path / "nothing")).columns) == ["location", "size", "mtime_ms", "hidden"]
    assert len(list_folder(FileIO(), str(tmp_path / "nothing"))) == 0


def test_another_store_is_listed_through_fsspec():
    fs = fsspec.filesystem("memory")
    for name, body in {"/tbl/data/a.parquet": b"12", "/tbl/data/_SUCCESS": b"", "/tbl/metadata/v1.metadata.json": b"{}"}.items():
        fs.pipe(name, body)
    got = list_folder(FileIO(), "memory://tbl")
    assert got.location.tolist() == ["memory://tbl/data/_SUCCESS", "memory://tbl/data/a.parquet",
                                     "memory://tbl/metadata/v1.metadata.json"]
    assert got["size"].tolist() == [0, 2, 2] and got.hidden.tolist() == [True, False, False]


def test_a_local_walk_comes_in_path_order_a_batch_at_a_time(tmp_path):
    """A folder's entries are walked as their paths sort ("a.txt" before "a/x", "a/x" before "a-b" and "ab"),
    so a local listing needs no sort; each batch holds at most the batch size."""
    root = tmp_path / "t"
    for rel in ["a/x", "a/y/z", "a.txt", "a-b", "ab", "a b", "é", "b/a", "B", "_SUCCESS", "a/.crc", "a0/q"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"x" * len(rel))
    batches = list(FileIO().walk_batches(str(root), batch=2))
    names = [n for b in batches for n in b[0]]
    assert all(len(b[0]) == len(b[1]) == len(b[2]) <= 2 for b in batches) and len(batches) == 6
    assert names == sorted(names) and len(names) == 12
    assert [os.path.relpath(n, root) for n in names][:6] == ["B", "_SUCCESS", "a b", "a-b", "a.txt", "a/.crc"]
    assert [b[1] for b in batches][0] == [1, 8]  # sizes beside their names
    assert FileIO().walk(str(root)) == tuple(list(c) for c in zip(*[(n, s, m) for b in batches for n, s, m in zip(*b)]))


def test_a_listing_without_stat_reads_sizes_only_where_asked_and_drops_files_gone_meanwhile(tmp_path):
    """The doctor lists without a ``stat`` per file (most of a million-file walk) and reads the size and time
    of the files its checks look at; a file deleted in between is not there any more, so it loses its row."""
    root = tmp_path / "t"
    made = _tree(root, 7)
    io = FileIO()
    want = _by_fsspec(str(root))
    bare = listing_arrow(io, str(root), stat=False)
    assert bare.column("location").to_pylist() == [r["location"] for r in want]
    assert bare.column("hidden").to_pylist() == [r["hidden"] for r in want]
    assert bare.column("size").null_count == bare.column("mtime_ms").null_count == made
    asked = [i % 3 == 0 for i in range(made)]
    gone = next(i for i, a in enumerate(asked) if a and i > 0)
    os.remove(want[gone]["location"].split("://")[-1])
    rows, kept = fill_listing_stats(io, bare, asked)
    assert kept.tolist() == [i != gone for i in range(made)]
    got = rows.to_pylist()
    expect = [dict(r) if a else {**r, "size": None, "mtime_ms": None}
              for i, (r, a) in enumerate(zip(want, asked)) if i != gone]
    assert got == expect
    # every row asked: the rest read, the ones read before left as they are, nothing dropped
    again, kept = fill_listing_stats(io, rows, [True] * rows.num_rows)
    assert kept is None and again.to_pylist() == [r for i, r in enumerate(want) if i != gone]
