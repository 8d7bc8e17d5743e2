"""The system's OpenSSH client, as the user has configured it: the aliases, jump hosts, agents
and connection sharing of ~/.ssh/config (or of --ssh-config) apply to every connection locklab
makes, and rsync goes through the same command.

locklab adds only what a program that must never hang needs: no password or host-key prompt
(BatchMode), a bounded connect, and keep-alives that notice a host gone mid-run. Host-key
checking stays as configured: an unknown or changed key is a failed host, never accepted
silently.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from locklab.errors import LocklabError

# A host silent for ServerAliveInterval x ServerAliveCountMax seconds is taken as gone.
_BOUNDED = (
    "-o", "BatchMode=yes", "-o", "ConnectTimeout=15",
    "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=4",
)  # fmt: skip
# What ssh exits with when the connection, not the remote command, failed.
SSH_FAILED = 255
LOCALHOST = "localhost"  # in --hosts: here, without ssh
# A name or alias, maybe with user@: no ":" (rsync would read a path), nothing shell-special.
_ALIAS = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@%+-]*$")


@dataclass(frozen=True)
class Ssh:
    config: Path | None = None  # ssh -F: a config file instead of ~/.ssh/config

    def base(self) -> list[str]:
        return ["ssh", *(["-F", str(self.config)] if self.config else []), *_BOUNDED]

    def command(self, alias: str, line: str) -> list[str]:
        """ssh running one shell line on the host (its login shell runs it, as ssh does)."""
        return [*self.base(), "--", alias, line]

    def rsync_shell(self) -> str:
        """rsync's -e: the same ssh, options and all."""
        return shlex.join(self.base())


def check_aliases(text: str) -> list[str]:
    """--hosts a,b,c: each once, each a name ssh can take (no spaces, no leading dash)."""
    aliases = [alias.strip() for alias in text.split(",")]
    for alias in aliases:
        if not _ALIAS.match(alias) or ".." in alias:
            raise LocklabError(f"--hosts: '{alias}' is not a host name or ssh alias")
    if len(set(aliases)) != len(aliases):
        raise LocklabError(f"--hosts: a host is given twice in '{text}'")
    return aliases


# ssh's own words for a connection that failed, and what locklab says of each: a fault of the
# network, of the user's key, or of the host's key.
_CONNECTION_FAULTS = (
    (re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|"
                r"No \S+ host key is known"),
     "its host key is unknown or has changed (locklab keeps host-key checking on: check the key "
     "and add it to known_hosts)"),
    (re.compile(r"Permission denied|Too many authentication failures"),
     "the key was refused"),
    (re.compile(r"Could not resolve hostname|Connection refused|Connection timed out|"
                r"No route to host|Network is unreachable|Connection closed by|"
                r"closed by remote host|Connection reset|kex_exchange_identification|"
                r"Timeout, server .* not responding|Operation timed out"),
     "unreachable"),
)  # fmt: skip


def connection_fault(stderr: str) -> str | None:
    """What went wrong with the connection, in words and with ssh's own line; None when
    stderr holds no sign of a connection fault (the remote command failed instead)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for pattern, meaning in _CONNECTION_FAULTS:
        seen = next((line for line in reversed(lines) if pattern.search(line)), None)
        if seen is not None:
            return f"{meaning}: {seen}"
    return None
