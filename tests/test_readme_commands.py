"""Every shell command in the ```bash blocks of README.md and the docs/*.md pages runs, exactly as written, with
the exit code it claims.

A command's expected exit code is 0 unless its comment says ``# exit N``. Commands are run by bash from the
repository root, with this interpreter's scripts first on PATH (so ``puffin-explorer`` is the one of the
environment running the tests) and this checkout first on PYTHONPATH.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT


README = ROOT / "README.md"
#: README.md, then each page of the documentation site.
PAGES = [README] + sorted((ROOT / "docs").glob("*.md"))
#: The quick start's own commands: `make test` is this test run, `make demo` the demo; both tried by hand.
SETUP = ("make demo", "make test")


def commands(pages: list[Path] = PAGES) -> list[tuple[int, str, str]]:
    """(block number, command, the whole block) for every command of every ```bash block of these pages."""
    out = []
    blocks = [b for page in pages for b in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S)]
    for i, block in enumerate(blocks):
        for cmd in re.sub(r"\\\n\s*", "", block).splitlines():
            if cmd.strip() and not cmd.lstrip().startswith("#"):
                out.append((i, cmd, block))
    return out


def expected_exit(cmd: str) -> int:
    m = re.search(r"#\s*exit (\d+)", cmd)
    return int(m.group(1)) if m else 0


def kind(cmd: str, block: str) -> str:
    if cmd.startswith(SETUP):
        return "setup"
    if ".venv/" in block:
        return "venv"
    if "$S3_OPTIONS" in cmd:
        return "s3"
    if "demo-warehouse" in cmd or "puffin-explorer spark" in cmd:
        return "spark"
    return "local"


def run(cmd: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), full.get("PATH", "")])
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full.get("PYTHONPATH", "")) if p)
    full.update(env or {})
    return subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=full, capture_output=True, text=True, timeout=1800)


def check(cmd: str, env: dict | None = None) -> subprocess.CompletedProcess:
    p = run(cmd, env)
    assert "Traceback" not in p.stderr, (cmd, p.stderr)
    assert p.returncode == expected_exit(cmd), (cmd, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    if cmd.startswith("puffin-explorer") and p.returncode != 2:
        assert p.stdout.strip(), cmd
    if p.returncode == 2 and " validate " in cmd:  # validate reports an unreadable file as its result line
        assert ": UNREADABLE: " in p.stdout and not p.stderr, (cmd, p.stdout, p.stderr)
    elif p.returncode == 2:
        assert p.stderr.count("\n") == 1 and p.stderr.startswith("puffin-explorer "), (cmd, p.stderr)
    return p


@pytest.fixture()
def leaves_no_files():
    """Files a command writes into the repository root (report.html) are removed afterwards."""
    before = set(ROOT.iterdir())
    yield
    for path in set(ROOT.iterdir()) - before:
        if path.is_file() and path.suffix == ".html":
            path.unlink()


def test_every_command_is_classified():
    kinds = [kind(cmd, block) for _, cmd, block in commands()]
    setup = [
        "make demo    # creates .venv; builds ./demo-warehouse (three Iceberg tables, embedded Spark, Java 17);",
        'make test    # creates .venv (and .venv-spark4, .venv-py310/312/313, see "Supported"), installs test dependencies',
    ]
    for page in (README, ROOT / "docs" / "getting-started.md"):  # the README's and the site's quick start
        assert [cmd for _, cmd, block in commands([page]) if kind(cmd, block) == "setup"] == setup, page
    assert kinds.count("setup") == 4
    assert kinds.count("local") >= 15 and kinds.count("s3") == 1 and kinds.count("spark") == 2
    assert kinds.count("venv") == 6


def as_run(cmd: str) -> tuple[str, int]:
    """What running ``cmd`` does: the command without its comment, and the exit code it claims."""
    return cmd.split("#")[0].strip(), expected_exit(cmd)


@pytest.mark.long
def test_local_commands(fixtures, leaves_no_files):
    ran, done = 0, {}
    for _, cmd, block in commands():
        if kind(cmd, block) != "local":
            continue
        key = as_run(cmd)
        if key not in done:  # a page repeating another's command (the README's quick tour) runs it once
            done[key] = check(cmd)
        p = done[key]
        ran += 1
        if "inspect resources/trino-deletion-vector-v1.puffin" in cmd:
            assert "deletedRows: [0, 2, 4]  (3 rows)" in p.stdout
        if "validate resources/multi-dv.puffin resources/broken-dv-crc.puffin" in cmd:
            assert "broken-dv-crc.puffin: INVALID (1 error, 0 other findings)" in p.stdout
        if "--table shop.orders check" in cmd:
            assert p.stdout == "0 findings, 0 errors\n"
        if "inspect resources/spark-orders-data.parquet" in cmd:
            assert "is a Parquet file, not a Puffin file: use puffin-explorer parquet" in p.stderr
    assert ran == [kind(c, b) for _, c, b in commands()].count("local")
    assert (ROOT / "out" / "tour.html").is_file()


def test_commands_in_the_environment_make_creates():
    """The set-up blocks use ./.venv, which `make demo` / `make test` create; run them where it exists."""
    if not (ROOT / ".venv" / "bin" / "puffin-explorer").exists():
        pytest.skip("no ./.venv here (make demo / make test create it)")
    blocks = sorted({block for _, cmd, block in commands() if kind(cmd, block) == "venv"})
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    for block in blocks:  # as one script: `source` changes the lines after it
        p = subprocess.run(["bash", "-ec", block], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (block, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr and "command not found" not in p.stderr


@pytest.mark.s3
def test_s3_command(s3_server, fixtures):
    import json

    url = s3_server.upload(FIXTURES / "warehouse", "wh/warehouse")
    [cmd] = [cmd for _, cmd, block in commands() if kind(cmd, block) == "s3"]
    assert url in cmd
    p = check(cmd, {"S3_OPTIONS": json.dumps(s3_server.storage_options)})
    assert p.stdout == "0 findings, 0 errors\n"


@pytest.mark.spark
def test_spark_commands():
    """Builds ./demo-warehouse (reused when a finished one is there), then checks it with Spark."""
    cmds = [cmd for _, cmd, block in commands() if kind(cmd, block) == "spark"]
    assert cmds[0].startswith("python -m puffin_explorer.demo ./demo-warehouse")
    for cmd in cmds:
        p = check(cmd)
    assert p.stdout.splitlines()[-1] == "4 deletion vectors checked, 0 with differences"
