# SPDX-License-Identifier: BSD-3-Clause
"""What the Python tests share (tests/ops, tests/pkg, tests/docs): one line
per check, "ok - WHAT" or "not ok - WHAT", so that a failing test says which
part failed; notes as "# ..." lines; waiting for a condition; running a
program to completion."""
import json
import subprocess
import time

failures = 0


def check(ok, what):
    """Print the result of one check; count it if it failed. Returns OK."""
    global failures
    print(("ok - " if ok else "not ok - ") + what, flush=True)
    if not ok:
        failures += 1
    return ok


def note(what):
    for line in what.splitlines():
        print("# " + line, flush=True)


def wait_for(cond, timeout=20.0, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def run(args, timeout=120, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def project_version(build):
    """The version of meson.build's project(), as the build BUILD has it."""
    r = run(["meson", "introspect", "--projectinfo", build])
    return json.loads(r.stdout)["version"] if r.returncode == 0 else None


def summary():
    """The last line of a test, and its exit status."""
    print("# %d check(s) failed" % failures if failures else "# all checks passed")
    return 1 if failures else 0

