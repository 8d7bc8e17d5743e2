"""A plugin given as C source (--plugin mylock.c): compiled, cached, with a writer loop of its
own that inlines the user's lock; a .so keeps the indirect call, and the table says which ran."""

import platform
import subprocess
import sys

import pytest
from conftest import ROOT, bench_path, plugin_path
from locklab.errors import LocklabError
from locklab.run import source_plugin

EXAMPLE = ROOT / "examples" / "plugin" / "example_ticket.c"


def run(*args: str, store) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "locklab.cli", "run", "--engine", str(bench_path("opt")),
         "--store", str(store), "--plain", *args],
        capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
    )  # fmt: skip


def test_a_c_plugin_runs_in_its_own_loop_and_a_so_through_the_indirect_call(tmp_path):
    common = ["--lock", "example_ticket", "--nwriters", "1,2", "--repeat", "2", "--duration",
              "0.05", "--warmup", "0"]  # fmt: skip
    from_source = run(*common, "--plugin", str(EXAMPLE), store=tmp_path / "a")
    assert from_source.returncode == 0, from_source.stderr
    assert f"from {EXAMPLE}, compiled with a loop of its own (opt)" in from_source.stdout
    built = run(
        *common, "--plugin", str(plugin_path("opt", "example_ticket")), store=tmp_path / "b"
    )
    assert built.returncode == 0, built.stderr
    assert "(a .so: one indirect call per acquisition)" in built.stdout


def test_the_compiled_plugin_is_cached_and_checked_by_the_engine():
    first = source_plugin.compiled(EXAMPLE, "opt", bench_path("opt"))
    assert source_plugin.compiled(EXAMPLE, "opt", bench_path("opt")) == first
    listed = subprocess.run([str(bench_path("opt")), "--plugin", str(first), "--list"],
                            capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    assert "example_ticket" in listed.stdout


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 instructions")
def test_the_users_lock_is_inlined_into_the_loop():
    plugin = source_plugin.compiled(EXAMPLE, "opt", bench_path("opt"))
    command = ["objdump", "-d", "--no-show-raw-insn", str(plugin)]
    dump = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout
    lean = dump.split("<locklab_plugin_writer_loop_lean>:")[1].split("\n\n")[0]
    assert "lock xadd" in lean  # the ticket's fetch-and-add, in the loop itself
    assert "example_ticket_lock" not in lean


def test_a_c_plugin_that_does_not_compile_is_one_line(tmp_path):
    broken = tmp_path / "broken.c"
    broken.write_text(EXAMPLE.read_text().replace("u32 ticket =", "u32 ticket = nosuch +"))
    with pytest.raises(LocklabError) as error:
        source_plugin.compiled(broken, "opt", bench_path("opt"))
    message = str(error.value)
    assert "\n" not in message and "does not compile" in message and "nosuch" in message
    proc = run("--lock", "example_ticket", "--plugin", str(broken), store=tmp_path / "s")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
