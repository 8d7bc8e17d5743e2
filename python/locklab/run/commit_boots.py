"""`locklab bisect --kernel` and `locklab history --kernel`: a commit's whole kernel, built
with locktorture in (kernel/build.py: cached per content, and incremental between the commits
of one git tree) and booted in QEMU, its torture type the one that runs the kernel: lock's
file. A run's figure is locktorture's acquisitions per second after the warm-up reports (its
writes, and its reads where readers run, as the engine counts them); a kernel that oopses,
hangs, ends its test with FAILURE or counts lock failures is a failed run, with how it ended."""

from __future__ import annotations

from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel import build, locktorture, qemu
from locklab.kernel.from_source import TORTURE_TYPE, check_name
from locklab.run.commit_runs import RunSettings, Side, not_built


class BootedCommitRunner:
    def __init__(self, top: Path, settings: RunSettings) -> None:
        assert settings.boot is not None
        self.top = top
        self.settings = settings
        self.boot = settings.boot
        self.torture_type = TORTURE_TYPE[check_name(settings.lock)]
        self.images: dict[str, Path] = {}

    def image(self, commit: str) -> Path:
        if commit not in self.images:
            label = commit[:12]
            built = build.build({label: []}, self.top, revisions={label: commit})
            self.images[commit] = built[label].image
        return self.images[commit]

    def run_once(self, commit: str, side: Side) -> None:
        """One boot of the kernel at `commit`: its throughput, or how it failed."""
        s, boot = self.settings, self.boot
        params = {"torture_type": self.torture_type, "nwriters_stress": str(s.nwriters),
                  "stat_interval": str(boot.stat_interval_s)}  # fmt: skip
        if s.nreaders:
            params["nreaders_stress"] = str(s.nreaders)
        try:
            image = self.image(commit)
        except LocklabError as error:
            return not_built(commit, side, error)
        booted = qemu.run_builtin(image, params, s.duration_s, boot.cpus, boot.accel)
        failure = f"the kernel at {commit[:12]}: {booted.outcome}" if booted.failed else None
        runs, _ = locktorture.parse(booted.console, "console")
        if failure is None and runs and runs[-1].failed:  # failures counted, no end seen
            failure = f"the kernel at {commit[:12]}: locktorture counted lock failures"
        measured = locktorture.measure(runs[-1], boot.warmup_reports) if runs else None
        if failure is None and measured is None:
            failure = (f"the kernel at {commit[:12]} printed too few locktorture reports "
                       f"({len(runs[-1].writes) if runs else 0})")  # fmt: skip
        if failure is not None:
            if side.failure is None:
                side.failure = failure[:300]
            return
        assert measured is not None
        side.figures.append(measured.throughput_ops_per_s)
