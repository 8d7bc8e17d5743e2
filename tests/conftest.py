"""Shared fixtures: where the engine builds are, and a bounded way to run them.

Every engine call has a subprocess timeout on top of the engine's own watchdog, so a test can
fail but never hang. Nothing here asserts on time or throughput.
"""

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
VARIANTS = ("opt", "tsan", "asan")
CORES = os.cpu_count() or 2
OVERSUBSCRIBED = 3 * CORES  # threads >= 3 x cores, as the torture tests require
RUN_TIMEOUT_S = 120


@dataclass
class EngineRun:
    returncode: int
    stdout: str
    stderr: str
    result: dict | None  # the --json document, when one was written


def bench_path(variant: str) -> Path:
    path = BUILD / variant / "locklab-bench"
    if not path.exists():
        pytest.fail(f"{path} is missing: run 'make build-all' (make test does)")
    return path


def plugin_path(variant: str, name: str) -> Path:
    path = BUILD / variant / "plugins" / f"{name}.so"
    if not path.exists():
        pytest.fail(f"{path} is missing: run 'make build-all' (make test does)")
    return path


def run_engine(
    args: list[str], variant: str = "opt", tmp_path: Path | None = None, json_out: bool = True
) -> EngineRun:
    cmd = [str(bench_path(variant)), *args]
    json_file = None
    if json_out and tmp_path is not None:
        json_file = tmp_path / f"result-{len(list(tmp_path.iterdir()))}.json"
        cmd += ["--json", str(json_file)]
    env = dict(os.environ)
    # Sanitizers: fail loudly, with a distinct exit code, on the first report.
    env["TSAN_OPTIONS"] = "halt_on_error=1 exitcode=66 second_deadlock_stack=1"
    env["ASAN_OPTIONS"] = "halt_on_error=1 exitcode=67 detect_leaks=1"
    env["UBSAN_OPTIONS"] = "halt_on_error=1 print_stacktrace=1"
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, check=False
    )
    result = None
    if json_file is not None and json_file.exists() and json_file.stat().st_size > 0:
        result = json.loads(json_file.read_text())
    return EngineRun(proc.returncode, proc.stdout, proc.stderr, result)


def list_locks(variant: str = "opt") -> list[dict]:
    proc = subprocess.run(
        [str(bench_path(variant)), "--list", "--json", "-"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(proc.stdout)["locks"]


@pytest.fixture(scope="session")
def result_schema() -> dict:
    return json.loads((ROOT / "native" / "engine" / "result.schema.json").read_text())
