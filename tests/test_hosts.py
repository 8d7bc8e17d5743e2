"""--hosts: the same experiment on other machines over OpenSSH. The remote hosts are this
machine behind sshd servers the tests start themselves (tests/sshd_servers.py), as two ssh
aliases, so the whole path runs: the project shipped by rsync, built there, its doctor, the
experiment, the runs mirrored back as they finish. Then the faults: a host that drops mid-run
(its runs kept, `--resume` finishes on that host only), an unreachable host, a refused key and
a changed host key, each one line while the other hosts go on; and Ctrl-C.
Counts and statuses only, no timing."""

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, bench_path
from locklab.cli.host_plans import remote_command
from locklab.cli.main import build_parser, main
from locklab.errors import LocklabError
from locklab.model.spec import ExperimentSpec, Variant
from locklab.run.ssh import check_aliases, connection_fault
from locklab.store import Store, mirror
from sshd_servers import SshServers, available

CAMPAIGN = """
name = "hosts-check"
repeat = 3
duration = 0.2
warmup = 0
[sweep]
nwriters = [1, 2]
[[variant]]
label = "ticket"
lock = "ticket"
[[variant]]
label = "mcs"
lock = "mcs"
"""
PLANNED = 12  # 2 variants x 2 points x 3 repeats
TEST_PATCH = ROOT / "campaigns" / "patches" / "test" / "0001-rtmutex-comment-only.patch"


@pytest.fixture(autouse=True)
def engine_env(monkeypatch):
    monkeypatch.setenv("LOCKLAB_ENGINE", str(bench_path("opt")))


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    why = available()
    if why is not None:
        pytest.skip(why)
    started = SshServers(tmp_path_factory.mktemp("ssh"), ["hosta", "hostb"])
    yield started
    started.close()


@pytest.fixture(scope="module")
def remote_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("remote")


def host_runs(store: Path) -> dict[str, list[tuple[str, int, str]]]:
    """Each host's experiment's runs, by experiment name, from the store as it stands."""
    found: dict[str, list[tuple[str, int, str]]] = {}
    if not (store / "locklab.db").exists():
        return found
    try:
        with sqlite3.connect(f"file:{store / 'locklab.db'}?mode=ro", uri=True) as db:
            rows = db.execute(
                "SELECT e.name, r.config_key, r.repeat, r.status FROM runs r JOIN experiments e"
                " ON e.id = r.experiment_id ORDER BY r.id"
            ).fetchall()
    except sqlite3.OperationalError:  # not made yet
        return found
    for name, key, repeat, status in rows:
        found.setdefault(name, []).append((key, repeat, status))
    return found


def localhost_runs(store: Path) -> list[tuple[str, int, str]]:
    found = [runs for name, runs in host_runs(store).items() if name.endswith("@localhost")]
    return found[0] if found else []


def hosts_args(servers, remote_dir, store) -> list[str]:
    return ["--ssh-config", str(servers.config), "--remote-dir", str(remote_dir),
            "--store", str(store), "--plain"]  # fmt: skip


@pytest.mark.timeout(600)
def test_two_hosts_one_drops_mid_run_and_resume_finishes_it(servers, remote_dir, tmp_path,
                                                          capsys):  # fmt: skip
    # The campaign lives outside the project: it is shipped as an input.
    campaign = tmp_path / "campaign" / "hosts.toml"
    campaign.parent.mkdir()
    campaign.write_text(CAMPAIGN)
    store = tmp_path / "store"

    def drop_hostb_after_two_runs() -> None:
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline:
            if len(host_runs(store).get("hosts-check@hostb", [])) >= 2:
                servers.kill("hostb")
                return
            time.sleep(0.05)

    dropper = threading.Thread(target=drop_hostb_after_two_runs, daemon=True)
    dropper.start()
    code = main(["campaign", str(campaign), "--hosts", "hosta,hostb", "--no-settle",
                 *hosts_args(servers, remote_dir, store)])  # fmt: skip
    dropper.join(timeout=5)
    captured = capsys.readouterr()
    assert code == 1, captured.err
    runs = host_runs(store)
    assert len(runs["hosts-check@hosta"]) == PLANNED  # the other host went on
    kept = runs["hosts-check@hostb"]
    assert 2 <= len(kept) < PLANNED and {status for *_, status in kept} == {"ok"}
    errors = [line for line in captured.err.splitlines() if line.startswith("locklab: error:")]
    assert len(errors) == 1 and "host hostb: lost mid-run" in errors[0], captured.err
    assert "Traceback" not in captured.err
    resume = errors[0].split("finish with: ")[1].split()
    # Each host's own table, and the two side by side with one verdict line across them.
    assert "host hosta: x86_64" in captured.out and "hosts side by side:" in captured.out
    assert "Across hosts (hosta, hostb), each against its own baseline:" in captured.out
    assert (store / "hosts-check.html").exists()
    opened = Store(store, create=False, read_only=True)
    alias, facts = opened.host_facts(opened.experiment("hosts-check@hosta"))
    opened.close()
    assert alias == "hosta" and facts["cpus"] >= 1 and facts["doctor"]
    assert {"ship_s", "build_s", "doctor_s", "run_s", "fetch_s"} <= set(facts["steps"])

    servers.start("hostb")  # back: --resume finishes on that host only
    assert resume[:2] == ["locklab", "run"]
    code = main([*resume[1:], "--ssh-config", str(servers.config), "--plain"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "host hostb:" in captured.out and "host hosta:" not in captured.out
    finished = host_runs(store)["hosts-check@hostb"]
    assert len(finished) == PLANNED and len({(key, repeat) for key, repeat, _ in finished}) == 12
    assert len(host_runs(store)["hosts-check@hosta"]) == PLANNED
    # Any two hosts' experiments, side by side again from the store.
    code = main(["compare", "hosts-check@hosta", "hosts-check@hostb", "--side-by-side",
                 "--store", str(store), "--plain"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "hostb mcs" in out
    assert "mcs: the hosts agree" in out or "mcs: the hosts differ" in out


@pytest.mark.timeout(300)
def test_each_faulty_host_is_one_line_and_the_others_go_on(servers, remote_dir, tmp_path,
                                                           capsys):  # fmt: skip
    store = tmp_path / "store"
    code = main(["run", "--lock", "ticket", "--nwriters", "1", "--repeat", "2", "--duration",
                 "0.05", "--warmup", "0", "--hosts", "hosta,unreachable,wrongkey,refused",
                 *hosts_args(servers, remote_dir, store)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    errors = [line for line in captured.err.splitlines() if line.startswith("locklab: ")]
    assert len(errors) == 3, captured.err
    said = dict(line.removeprefix("locklab: error: host ").split(": ", 1) for line in errors)
    assert said["unreachable"].startswith("unreachable: ssh: connect to host 127.0.0.1")
    assert said["wrongkey"].startswith("its host key is unknown or has changed")
    assert said["refused"].startswith("the key was refused")
    assert len(host_runs(store)["ticket@hosta"]) == 2


@pytest.mark.timeout(1500)  # a cold kernel build, when test_kernel_build has not made it yet
def test_a_kernel_built_here_boots_on_a_host(servers, remote_dir, tmp_path, capsys):
    for tool in ("qemu-system-x86_64", "flex", "bison", "bc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing (make deps installs it)")
    if not Path("/usr/src/linux-source-6.1.tar.xz").exists():
        pytest.skip("linux-source-6.1 is missing (make deps installs it)")
    store = tmp_path / "store"
    code = main(["kernel", "--patch", f"ci-test={TEST_PATCH}", "--type", "rtmutex_lock",
                 "--nwriters", "2", "--repeat", "1", "--duration", "5", "--param", "stutter=0",
                 "--accel", "tcg", "--hosts", "hosta",
                 *hosts_args(servers, remote_dir, store)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (run,) = host_runs(store)["kernel-rtmutex_lock@hosta"]
    assert run[2] == "ok"
    shipped = remote_dir / "hosta" / "inputs" / "kernels-x86_64" / "kernels.json"
    assert json.loads(shipped.read_text())["ci-test"]["patches"][0]["name"] == TEST_PATCH.name
    assert "ci-test=Linux 6.1" in captured.out  # the provenance, as if built there
    consoles = list((store / "hosts" / "hosta" / "fetched" / "kernel-logs").rglob("*.log"))
    assert consoles, "the host's console logs were not fetched"


@pytest.mark.timeout(300)
def test_a_build_that_fails_on_a_host_is_one_line_with_its_last_line(servers, remote_dir,
                                                                    tmp_path, capsys):  # fmt: skip
    # A file where the host's build goes (build/ is the host's own: a ship keeps it): make
    # cannot make build/opt/ there.
    broken = remote_dir / "second" / "src" / "build" / "opt"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("not a folder\n")
    store = tmp_path / "store"
    code = main(["run", "--lock", "ticket", "--nwriters", "1", "--repeat", "1", "--duration",
                 "0.05", "--warmup", "0", "--hosts", "second",
                 *hosts_args(servers, remote_dir, store)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    (line,) = (line for line in captured.err.splitlines() if line.startswith("locklab: "))
    assert line.startswith("locklab: error: host second: build failed (exit 2): make: ***"), line
    assert f"(log: {store / 'hosts' / 'second' / 'build.log'})" in line
    broken.unlink()


def test_a_kernel_campaign_is_refused_with_hosts(capsys):
    code = main(["campaign", str(ROOT / "campaigns" / "seed-000-kernel.toml"), "--hosts", "a"])
    err = capsys.readouterr().err
    assert code == 2 and "a kernel campaign runs here" in err


def test_localhost_runs_here_and_ctrl_c_keeps_finished_runs(tmp_path):
    """localhost needs no ssh: the same path, with this checkout. Ctrl-C (SIGINT) mid-sweep
    ends the host's locklab and its engine, and keeps what finished."""
    store = tmp_path / "store"
    sweep = subprocess.Popen(
        [sys.executable, "-m", "locklab.cli", "run", "--lock", "ticket,mcs", "--nwriters", "1",
         "--repeat", "20", "--duration", "0.2", "--warmup", "0", "--hosts", "localhost",
         "--store", str(store), "--plain"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(localhost_runs(store)) < 2:
            assert time.monotonic() < deadline and sweep.poll() is None, sweep.stderr.read()
            time.sleep(0.05)
        sweep.send_signal(signal.SIGINT)
        _, err = sweep.communicate(timeout=60)
    finally:
        sweep.kill()
    assert sweep.returncode == 130, err
    assert "Traceback" not in err
    kept = localhost_runs(store)
    assert 2 <= len(kept) < 40
    host_store = store / "hosts" / "localhost" / "store"
    left = subprocess.run(["pgrep", "-f", str(host_store)], capture_output=True, text=True)
    assert left.stdout == "", "the host's locklab or engine is still running"


def test_the_hosts_command_line_drops_local_options_and_ships_outside_files(tmp_path):
    plugin = tmp_path / "mine.c"
    plugin.write_text("/* a lock */\n")
    patch = tmp_path / "fix.patch"
    patch.write_text("--- a\n+++ b\n")
    argv = ["run", "--lock", "kernel:rtmutex,mine", "--plugin", str(plugin), "--patch",
            f"k1={patch}", "--hosts", "a,b", "--store", "s", "--plain", "--remote-dir=r",
            "--nwriters", "1,2"]  # fmt: skip
    args = build_parser().parse_args(argv)
    args.argv = argv
    arguments, inputs = remote_command(args)
    assert "--hosts" not in arguments and "--store" not in arguments and "--plain" not in arguments
    assert not any(a.startswith("--remote-dir") for a in arguments)
    shipped = arguments[arguments.index("--plugin") + 1]
    assert shipped.startswith("{work}/inputs/") and shipped.endswith("/mine.c")
    assert arguments[arguments.index("--patch") + 1].startswith("k1={work}/inputs/")
    assert set(inputs) == {plugin, patch}
    profile = tmp_path / "my-box.toml"
    profile.write_text((ROOT / "machines" / "x5-4.toml").read_text())
    argv = ["run", "--lock", "ticket", "--sim", str(profile), "--hosts", "a"]
    args = build_parser().parse_args(argv)
    args.argv = argv
    arguments, inputs = remote_command(args)
    assert arguments[arguments.index("--sim") + 1].endswith("/my-box.toml")
    assert set(inputs) == {profile}
    campaign = tmp_path / "c.toml"
    campaign.write_text(CAMPAIGN.replace('name = "hosts-check"', 'name = "x"\nsim = "my-box.toml"'))
    argv = ["campaign", str(campaign), "--hosts", "a"]
    args = build_parser().parse_args(argv)
    args.argv = argv
    arguments, inputs = remote_command(args)
    assert set(inputs) == {campaign.resolve(), profile.resolve()}
    assert inputs[profile.resolve()].endswith("/my-box.toml")
    # --sim replaces the file's own profile, which is then neither shipped nor checked.
    elsewhere = 'name = "x"\nsim = "/elsewhere/a.toml"'
    campaign.write_text(CAMPAIGN.replace('name = "hosts-check"', elsewhere))
    argv = ["campaign", str(campaign), "--sim", "x5-4", "--hosts", "a"]
    args = build_parser().parse_args(argv)
    args.argv = argv
    arguments, inputs = remote_command(args)
    assert set(inputs) == {campaign.resolve()}
    assert arguments[arguments.index("--sim") + 1] == "x5-4"
    inside = ROOT / "campaigns" / "seed-002-cna.toml"
    argv = ["campaign", str(inside), "--hosts", "a"]
    args = build_parser().parse_args(argv)
    args.argv = argv
    assert remote_command(args) == (["campaign", "campaigns/seed-002-cna.toml"], {})


@pytest.mark.parametrize("dashes", [["--"], []])
def test_exec_keeps_the_programs_own_options(dashes):
    argv = ["exec", "--lock", "mcs", "--hosts", "a", *dashes, "prog", "--store", "x", "--plain"]
    args = build_parser().parse_args(argv)
    args.argv = argv
    arguments, _ = remote_command(args)
    assert arguments == ["exec", "--lock", "mcs", "--", "prog", "--store", "x", "--plain"]


def test_an_abbreviated_option_is_not_taken_for_another(capsys):
    code = main(["run", "--lock", "tas", "--host", "a,b"])
    assert code == 2 and "unrecognized arguments: --host a,b" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("hosts", "expected"),
    [("a,,b", "'' is not a host name"), ("-oProxyCommand=x", "is not a host name"),
     ("a b", "is not a host name"), ("a,a", "given twice"), ("big1:2222", "is not a host"),
     ("..", "is not a host name")],
)  # fmt: skip
def test_bad_host_lists_are_refused(hosts, expected):
    with pytest.raises(LocklabError, match=expected):
        check_aliases(hosts)


def test_a_bad_hosts_key_in_a_campaign_is_one_line(tmp_path, capsys):
    campaign = tmp_path / "c.toml"
    campaign.write_text(CAMPAIGN.replace('name = "hosts-check"', 'name = "x"\nhosts = "a"'))
    code = main(["campaign", str(campaign), "--store", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 2 and "hosts must be a list of ssh host names" in err


@pytest.mark.parametrize(
    ("stderr", "meaning"),
    [
        ("ssh: Could not resolve hostname nowhere: Name or service not known", "unreachable"),
        ("ssh: connect to host 10.0.0.1 port 22: Connection timed out", "unreachable"),
        ("Host key verification failed.", "its host key is unknown"),
        ("user@h: Permission denied (publickey).", "the key was refused"),
        ("Timeout, server big1 not responding.", "unreachable"),
        ("make: *** [Makefile:1: build] Error 2", None),
    ],
)
def test_connection_faults_are_told_from_the_commands_own(stderr, meaning):
    said = connection_fault(stderr)
    assert (said is None) if meaning is None else said.startswith(meaning)


def test_a_replayed_run_is_stored_once(tmp_path):
    source = Store(tmp_path / "remote")
    local = Store(tmp_path / "local")
    spec = ExperimentSpec(name="x", variants=[Variant("tas", "tas")], sweep={"nwriters": [1]})
    experiment = source.create_experiment(spec, "h", "0", None)
    event = {"event": "experiment", "uuid": experiment.uuid, "name": "x",
             "created": experiment.created, "spec": spec.to_dict(), "host": "h",
             "locklab_version": "0", "locklab_commit": None, "planned": 1}  # fmt: skip
    mirrored = local.mirrored_experiment(event, "h")
    assert mirrored.name == "x@h" and local.mirrored_experiment(event, "h").id == mirrored.id
    run = {"event": "run", "experiment": experiment.uuid, "config_key": "tas|nwriters=1",
           "repeat": 0, "status": "ok", "exit_code": 0, "throughput_ops_per_s": 1.0,
           "error": None, "command_json": "[]", "result_json": None, "machine_json": None,
           "wall_s": 1.0, "finished": "2026-11-25T00:00:00+00:00", "locklab_version": "0",
           "locklab_commit": None}  # fmt: skip
    assert mirror.parse(json.dumps(run)) == run
    assert local.mirrored_run(mirrored, run) and not local.mirrored_run(mirrored, run)
    assert len(local.runs(mirrored)) == 1
    assert mirror.parse("locklab: error: not an event") is None
