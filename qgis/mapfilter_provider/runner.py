"""Runs one mapfilter command for an algorithm: progress lines
(MAPFILTER_PROGRESS=lines; `batch run` prints them over the batch's pixels,
phase "batch px"), or else `batch run`'s line per finished task
(`[3/16] task 2 out/x.tif: done in ...`, phase "batch tasks"), drive the
feedback's progress bar, other output
goes to the log, Cancel sends SIGINT (mapfilter stops at the next tile,
removes its temp files and leaves existing outputs untouched), and a failure
raises QgsProcessingException with mapfilter's one-line error and hint."""

import os
import queue
import re
import shlex
import signal
import subprocess
import threading
import time

from qgis.core import QgsProcessingException, QgsProcessingFeedback

PROGRESS = re.compile(r"^progress: (\d+(?:\.\d+)?)(?: (\S+))?(?: (\S+))?\s*$")
BATCH_TASK = re.compile(r"^\[(\d+)/(\d+)\] task ")
ERROR_PREFIX = "mapfilter: error: "

# After Cancel: how long mapfilter gets to stop at a tile boundary before a
# second SIGINT (which makes it exit at once), and then before it is killed.
GRACE_SECONDS = 20.0
KILL_SECONDS = 5.0


class Phases:
    """Maps mapfilter's progress phases (label, unit) onto parts of the
    algorithm's bar, e.g. {("smooth", "scan"): (0, 10), ("smooth", "tiles"):
    (10, 100)}; a phase not listed spans `rest` (the whole bar unless given)."""

    def __init__(self, spans=None, rest=(0.0, 100.0)):
        self.spans = spans or {}
        self.rest = rest

    def overall(self, percent, label, unit):
        lo, hi = self.spans.get((label, unit), self.spans.get(label, self.rest))
        return lo + (hi - lo) * min(max(percent, 0.0), 100.0) / 100.0


def _pump(stream, tag, lines):
    for line in iter(stream.readline, ""):
        lines.put((tag, line.rstrip("\r\n")))
    lines.put((tag, None))


def run(binary, args, feedback, phases=None):
    """Runs `binary args...`; returns its stdout. Raises QgsProcessingException
    on failure or cancellation."""
    feedback = feedback or QgsProcessingFeedback()
    phases = phases or Phases()
    cmd = [binary] + [str(a) for a in args]
    feedback.pushCommandInfo(" ".join(shlex.quote(a) for a in cmd))
    env = dict(os.environ, MAPFILTER_PROGRESS="lines")
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except OSError as e:
        raise QgsProcessingException(f"cannot start {binary}: {e}") from e
    lines = queue.Queue()
    for stream, tag in ((proc.stdout, "out"), (proc.stderr, "err")):
        threading.Thread(target=_pump, args=(stream, tag, lines), daemon=True).start()
    open_streams, stdout, errors = 2, [], []
    cancelled_at, escalated = None, False
    phase_text = None
    # Once a run prints progress lines, its task lines are log only.
    progress_lines = False
    while open_streams or proc.poll() is None:
        if feedback.isCanceled() and cancelled_at is None:
            cancelled_at = time.monotonic()
            feedback.pushInfo("Cancel: asking mapfilter to stop (SIGINT)")
            _signal(proc, signal.SIGINT)
        if cancelled_at is not None:
            waited = time.monotonic() - cancelled_at
            if waited > GRACE_SECONDS and not escalated:
                escalated = True
                _signal(proc, signal.SIGINT)
            elif waited > GRACE_SECONDS + KILL_SECONDS:
                proc.kill()
        try:
            tag, line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        if line is None:
            open_streams -= 1
        elif tag == "out":
            stdout.append(line)
            feedback.pushConsoleInfo(line)
        else:
            m = PROGRESS.match(line)
            task = BATCH_TASK.match(line)
            if task and not progress_lines:
                done, total = int(task.group(1)), int(task.group(2))
                feedback.setProgress(phases.overall(100.0 * done / total, "batch", "tasks"))
            elif m:
                progress_lines = True
                label, unit = m.group(2) or "", m.group(3) or ""
                feedback.setProgress(phases.overall(float(m.group(1)), label, unit))
                # The dialog logs each progress text: once per phase.
                text = f"mapfilter {label}: {unit}".rstrip(": ")
                if text != phase_text:
                    phase_text = text
                    feedback.setProgressText(text)
                continue
            if line.startswith(ERROR_PREFIX):
                errors.append(line)
            elif line.startswith("error: "):
                # The argument parser's own errors (exit 2).
                errors.append("mapfilter: " + line)
            feedback.pushConsoleInfo(line)
    rc = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    if cancelled_at is not None:
        said = f": {errors[-1]}" if errors else ""
        raise QgsProcessingException(
            f"cancelled: mapfilter stopped (exit {rc}); outputs of this run were not written{said}"
        )
    if rc != 0:
        message = errors[-1] if errors else f"mapfilter exited with status {rc}"
        raise QgsProcessingException(message)
    return "\n".join(stdout)


def _signal(proc, sig):
    try:
        if os.name == "nt":
            proc.terminate()
        else:
            proc.send_signal(sig)
    except ProcessLookupError:
        pass
