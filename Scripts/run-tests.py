#!/usr/bin/env python3
"""Runs one `swift test` command and keeps its output short: a progress line at least every
15 seconds, every line that is not a test or suite starting or passing (so failures and their
issues print in full, as does anything a test writes), and the runner's summary.

Usage: run-tests.py LABEL [--all] COMMAND... ; exits with COMMAND's status. `--all` prints
every line as it comes.
"""
import os
import pty
import re
import select
import subprocess
import sys
import time

PROGRESS_EVERY = 15.0
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
QUIET_PREFIXES = ("◇ ", "[", "Building for", "Build complete", "Build of product",
                  "↳ Testing Library Version", "↳ Target Platform")


def is_routine(line):
    if line.startswith(QUIET_PREFIXES):
        return True
    passed = line.startswith("✔ Test ") or line.startswith("✔ Suite ")
    return passed and " passed after " in line and not line.startswith("✔ Test run with ")


def main():
    arguments = sys.argv[1:]
    if not arguments:
        print(__doc__.strip())
        return 2
    label = arguments.pop(0)
    show_all = bool(arguments) and arguments[0] == "--all"
    if show_all:
        arguments.pop(0)
    # A terminal, not a pipe: the test process would hold a pipe's lines back in its buffer
    # until it ends, and progress could not be counted. NO_COLOR keeps the lines plain.
    leader, follower = pty.openpty()
    environment = dict(os.environ, NO_COLOR="1")
    process = subprocess.Popen(
        arguments, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, env=environment)
    os.close(follower)
    started = time.monotonic()
    last_report = started
    passed = 0
    pending = b""
    descriptor = leader
    while True:
        ready, _, _ = select.select([descriptor], [], [], 1.0)
        now = time.monotonic()
        if ready:
            try:
                chunk = os.read(descriptor, 65536)
            except OSError:  # the terminal closed: the process and its children are done
                chunk = b""
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = ESCAPE.sub("", raw.decode("utf-8", "replace")).replace("\r", "")
                if line.startswith("✔ Test ") and " passed after " in line:
                    passed += 1
                if show_all or not is_routine(line):
                    print(line, flush=True)
        if not show_all and now - last_report >= PROGRESS_EVERY:
            print(f"  … {label}: {passed} tests passed, {now - started:.0f} s", flush=True)
            last_report = now
    if pending:
        print(pending.decode("utf-8", "replace"), flush=True)
    return process.wait()


if __name__ == "__main__":
    sys.exit(main())
