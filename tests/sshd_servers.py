"""OpenSSH servers of the tests' own: sshd on free ports of 127.0.0.1, as the current user, with
a key pair and host key generated in a temporary folder, and an ssh config naming them as
hosts. Nothing of the machine's own ssh setup (its sshd, ~/.ssh) is used or changed.

The config also names the faulty hosts the tests need: one whose port nothing listens on, one
whose host key the known_hosts file does not hold, one that offers a key the server refuses;
and "second", the first server under another alias.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")  # sshd must be started by its absolute path
# Started as root, sshd wants its privilege-separation folder, which the package's service
# makes at boot; the tests' servers do not use the service.
PRIVSEP_DIR = Path("/run/sshd")
START_TIMEOUT_S = 10.0


def available() -> str | None:
    """Why the tests' servers cannot run here, or None."""
    for tool in ("ssh", "ssh-keygen", "rsync"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (make deps installs it)"
    if not SSHD.exists():
        return "sshd is missing (Debian package openssh-server; make deps installs it)"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True, timeout=30)  # fmt: skip


class SshServers:
    """sshd per host name, all serving the current user with one key pair."""

    def __init__(self, folder: Path, names: list[str]) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        self.user = getpass.getuser()
        _keygen(folder / "host_key")
        _keygen(folder / "client_key")
        _keygen(folder / "stranger_key")  # a key the servers do not know
        _keygen(folder / "other_host_key")  # what a wrong known_hosts entry holds
        (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
        self.ports = {name: free_port() for name in names}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        host_key = (folder / "host_key.pub").read_text().split()
        other_key = (folder / "other_host_key.pub").read_text().split()
        self.unreachable_port = free_port()
        self.wrong_key_port = free_port()
        known = [f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}" for port in self.ports.values()]
        known.append(f"[127.0.0.1]:{self.wrong_key_port} {other_key[0]} {other_key[1]}")
        (folder / "known_hosts").write_text("\n".join(known) + "\n")
        hosts = dict(self.ports)
        hosts["unreachable"] = self.unreachable_port
        hosts["wrongkey"] = self.wrong_key_port
        blocks = [self._host_block(name, port, "client_key") for name, port in hosts.items()]
        first = next(iter(self.ports))
        blocks.append(self._host_block("refused", self.ports[first], "stranger_key"))
        # The first server again, under another alias: a work folder of its own, which a test
        # can break.
        blocks.append(self._host_block("second", self.ports[first], "client_key"))
        self.config = folder / "ssh_config"
        self.config.write_text("\n".join(blocks))
        for name in names:
            self.start(name)
        self.start_server("wrongkey", self.wrong_key_port, "host_key")  # not what known_hosts says

    def _host_block(self, name: str, port: int, key: str) -> str:
        return (
            f"Host {name}\n  HostName 127.0.0.1\n  Port {port}\n  User {self.user}\n"
            f"  IdentityFile {self.folder / key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.folder / 'known_hosts'}\n"
            "  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
        )

    def start(self, name: str) -> None:
        self.start_server(name, self.ports[name], "host_key")

    def start_server(self, name: str, port: int, host_key: str) -> None:
        config = self.folder / f"sshd_{name}.conf"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {self.folder / host_key}\n"
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}\n"
            f"PidFile {self.folder / f'sshd_{name}.pid'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nLogLevel ERROR\n"
        )
        if os.geteuid() == 0:
            PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        process = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(config)], start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.processes[name] = process
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
            if process.poll() is not None:
                raise RuntimeError(f"sshd for {name} exited with {process.returncode}")
            time.sleep(0.05)
        raise RuntimeError(f"sshd for {name} did not listen on {port}")

    def kill(self, name: str) -> None:
        """The host drops: its sshd and every connection it serves, at once. Each connection's
        sshd is a child of the listener in a session of its own (sshd calls setsid)."""
        process = self.processes.pop(name)
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGSTOP)  # no new connection while its children go
        subprocess.run(["pkill", "-KILL", "-P", str(process.pid)], check=False, timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def close(self) -> None:
        for name in list(self.processes):
            self.kill(name)
