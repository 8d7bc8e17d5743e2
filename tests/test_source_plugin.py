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


def test_a_c_plugin_that_does_not_compile_names_the_compilers_first_error(tmp_path):
    """The compiler's own line (file:line:column: error: ...), the file named as the user gave
    it, not make's "Error 1"; under it, the path of the whole output."""
    broken = tmp_path / "broken.c"
    broken.write_text(EXAMPLE.read_text().replace("u32 ticket =", "u32 ticket = nosuch +"))
    line = next(n for n, text in enumerate(broken.read_text().splitlines(), 1) if "nosuch" in text)
    with pytest.raises(LocklabError) as error:
        source_plugin.compiled(broken, "opt", bench_path("opt"))
    message = str(error.value)
    assert "\n" not in message and "does not compile" in message and "nosuch" in message
    assert f"{broken}:{line}:" in message and "make" not in message
    proc = run("--lock", "example_ticket", "--plugin", str(broken), store=tmp_path / "s")
    first, *details = proc.stderr.splitlines()
    assert proc.returncode == 2 and first.startswith("locklab: error: --plugin"), proc.stderr
    assert details[-1].startswith("  the compiler's whole output: ") and details[-1].endswith(
        "build.log"
    )


def test_an_error_in_a_locklab_header_names_the_users_line_that_led_there(tmp_path):
    """A name of the user's that the engine's own headers define too: the error is in
    engine.h, and the message says which line of the user's file clashed with it."""
    clash = tmp_path / "clash.c"
    lines = EXAMPLE.read_text().splitlines()
    at = lines.index("struct example_ticket_lock {")
    lines.insert(at, "struct worker { int mine; };")
    clash.write_text("\n".join(lines) + "\n")
    with pytest.raises(LocklabError) as error:
        source_plugin.compiled(clash, "opt", bench_path("opt"))
    message = str(error.value)
    assert "native/engine/engine.h:" in message and "error: redefinition of 'struct worker'" in (
        message
    ), message
    assert message.endswith(f"(reached from {clash}:{at + 1})"), message


C11_EXAMPLE = ROOT / "examples" / "plugin" / "c11_ttas.c"
C11_WITH_ORDERS = ROOT / "tests" / "plugins" / "c11_ttas_orders.c"
TSAN_NOTE = "ThreadSanitizer does not model C11 fences"


@pytest.mark.parametrize("build", ["opt", "asan", "tsan"])
def test_a_lock_in_c11_alone_with_fences_runs_in_every_build(tmp_path, build):
    """<stdatomic.h>, atomic_thread_fence and no locklab header but lock.h: it compiles and
    runs its sweep. Under TSAN, which does not model fences, it runs with one line saying so
    (and TSAN then reports the race the fences order); with acquire and release orders in
    place of the fences the same lock runs clean there."""
    common = ["--nwriters", "2", "--repeat", "1", "--duration", "0.05", "--warmup", "0"]
    proc = subprocess.run(
        [sys.executable, "-m", "locklab.cli", "run", "--build", build, "--store",
         str(tmp_path / "s"), "--plain", "--lock", "c11_ttas", "--plugin", str(C11_EXAMPLE),
         *common],
        capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
    )  # fmt: skip
    assert "does not compile" not in proc.stderr and "Traceback" not in proc.stderr
    if build != "tsan":
        assert proc.returncode == 0 and TSAN_NOTE not in proc.stderr, proc.stderr
        return
    assert f"{TSAN_NOTE} (c11_ttas.c:" in proc.stderr, proc.stderr
    clean = subprocess.run(
        [sys.executable, "-m", "locklab.cli", "run", "--build", "tsan", "--store",
         str(tmp_path / "s"), "--plain", "--lock", "c11_ttas_orders", "--plugin",
         str(C11_WITH_ORDERS), *common],
        capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
    )  # fmt: skip
    assert clean.returncode == 0 and TSAN_NOTE not in clean.stderr, clean.stderr


def test_kernel_idiom_and_stdatomic_in_one_file(tmp_path):
    """example_ticket.c with <stdatomic.h> included too: kernel.h's two names that C11 also
    defines (atomic_fetch_add, atomic_fetch_or) give way to C11's, whichever comes first."""
    for where in ("before", "after"):
        both = tmp_path / f"both_{where}.c"
        text = EXAMPLE.read_text()
        include = "#include <stdatomic.h>\n"
        anchor = "#include <locklab/lock.h>\n"
        placed = include + text if where == "before" else text.replace(anchor, anchor + include)
        counted = placed.replace(
            "u32 spin_pause; /*", "atomic_uint c11_count;\n\tu32 spin_pause; /*"
        ).replace(
            "\t(void)self;\n\n", "\t(void)self;\n\tatomic_fetch_add(&lock->c11_count, 1);\n\n", 1
        )
        both.write_text(counted)
        assert "atomic_fetch_add(&lock->c11_count" in counted
        assert source_plugin.compiled(both, "opt", bench_path("opt")).is_file()
