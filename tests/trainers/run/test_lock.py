"""One writer per run directory: a second process training in it is refused with the first's
pid; the lock goes with its process however that ends, and with the run's with-block."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from trainers.config import ConfigError, TrainConfig
from trainers.run.dirs import new_run_dir
from trainers.run.lifecycle import Run
from trainers.run.lock import LOCK_FILE, RunLock

# A second process that takes the lock, says so, and holds it until killed.
_HOLDER = (
    "import sys, time\n"
    "from trainers.run.lock import RunLock\n"
    "lock = RunLock.acquire(sys.argv[1])  # held while referenced\n"
    "print('held', flush=True)\n"
    "time.sleep(600)\n"
)


def _config(tmp_path, **fields) -> TrainConfig:
    return TrainConfig(
        env="sokoban", output_dir=str(tmp_path), run_name="r", tensorboard=False, plots=False, **fields
    )


def test_a_second_process_is_refused_with_the_holders_pid_and_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError) as refused:
            RunLock.acquire(tmp_path)
        message = str(refused.value)
        assert f"pid {holder.pid}" in message and f"kill {holder.pid}" in message and "--resume" in message
    finally:
        holder.send_signal(signal.SIGKILL)  # no chance to clean up: the kernel drops the lock
        holder.wait()
    lock = RunLock.acquire(tmp_path)
    assert lock.held and (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    lock.release()


def test_resuming_a_run_that_is_still_open_is_refused_until_its_with_block_ends(tmp_path):
    config = _config(tmp_path)
    first = Run.open("trainers.at_grpo", config, stem="x")
    resume = _config(tmp_path, resume=str(first.dir))
    with first.begin(0, config):
        first.logger.log_step(1, {"loss": 1.0})
        with pytest.raises(ConfigError, match=f"pid {os.getpid()}"):
            Run.open("trainers.at_grpo", resume, stem="x")
    second = Run.open("trainers.at_grpo", resume, stem="x")  # the block's end released it
    second.release()


def test_release_lets_another_writer_in_and_is_idempotent(tmp_path):
    run = Run.open("trainers.sft", _config(tmp_path), stem="x")
    run.release()
    run.release()
    Run.open("trainers.sft", _config(tmp_path, resume=str(run.dir)), stem="x").release()


def test_a_directory_holding_only_the_lock_is_no_run_to_protect(tmp_path):
    # A run that failed before writing anything left its lock file; the same --run-name may reuse it.
    (tmp_path / "r").mkdir()
    RunLock.acquire(tmp_path / "r").release()
    assert new_run_dir(tmp_path, "r", "x") == tmp_path / "r"
    (tmp_path / "r" / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError, match="not empty"):
        new_run_dir(tmp_path, "r", "x")
