#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The documentation against the build (issue 31): each check prints one
line, "ok - ..." or "not ok - ...".

    docs_test.py readme BUILD SRC   README's install table against what
                                    meson install writes (staged with
                                    --destdir) and meson introspect
                                    --installed, and each row's package
                                    against debian/*.install
    docs_test.py man BUILD SRC      the keys of daemon/conf.c against
                                    viad.conf(5) and config/viad.conf; the
                                    options of viad --help, viactl --help
                                    (and its commands), vipl_pingpong,
                                    vipl_bw and vipl_legacy against their
                                    pages; every page's footer names the
                                    version of meson.build

No root needed, no viad started.
"""
import fnmatch
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import checks  # noqa: E402
from checks import check, note, project_version, run  # noqa: E402


def introspect(build, what):
    r = run(["meson", "introspect", "--" + what, build])
    return json.loads(r.stdout) if r.returncode == 0 else None


def options(build):
    return {o["name"]: o["value"] for o in introspect(build, "buildoptions") or []}


# ---- readme ---------------------------------------------------------------------

def readme_table(src):
    """The rows of README's install table: (what, [paths], package)."""
    text = open(os.path.join(src, "README.md")).read()
    m = re.search(r"^\| What \| Paths under the prefix \| Debian package \|\n\|[-|]+\|\n"
                  r"((?:\|.*\|\n)+)", text, re.M)
    rows = []
    for line in (m.group(1).splitlines() if m else []):
        what, paths, package = [c.strip() for c in line.strip("|").split("|")]
        rows.append((what, re.findall(r"`([^`]+)`", paths), package.strip("`")))
    return rows


def staged_paths(build, tmp, prefix):
    """Every file, link and empty directory meson install writes, relative
    to the prefix."""
    dest = os.path.join(tmp, "stage")
    r = run(["meson", "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", dest],
            timeout=600)
    if not check(r.returncode == 0, "meson install --destdir"):
        note(r.stdout[-1500:] + r.stderr[-1500:])
        return None
    root = dest + prefix
    found = set()
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        found |= {os.path.normpath(os.path.join(rel, f)) for f in files}
        found |= {os.path.normpath(os.path.join(rel, x)) for x in dirs
                  if os.path.islink(os.path.join(d, x))}
        if not dirs and not files:
            found.add(rel + "/")
    check(not any(p.startswith("..") for p in found), "meson install writes under the prefix")
    return found


def debian_patterns(src, libdir):
    """PACKAGE -> the paths of its debian/PACKAGE.install, relative to /."""
    pats = {}
    ddir = os.path.join(src, "debian")
    for f in sorted(os.listdir(ddir)):
        if f.endswith(".install"):
            lines = open(os.path.join(ddir, f)).read().split("\n")
            pats[f[:-len(".install")]] = [
                line.replace("${DEB_HOST_MULTIARCH}", libdir.split("/", 1)[-1]) for line in lines
                if line and not line.startswith("#")]
    return pats


def package_of(path, pats):
    """The package whose .install names PATH (relative to the prefix /usr,
    or to / for the unit, which Debian 12 keeps in /lib)."""
    for pkg, globs in pats.items():
        for g in globs:
            for cand in ("usr/" + path, path):
                if fnmatch.fnmatch(cand, g.rstrip("/")) or cand.startswith(g.rstrip("/") + "/"):
                    return pkg
    return None


def test_readme(build, src, tmp):
    opts = options(build)
    if not check(bool(opts), "meson introspect --buildoptions"):
        return
    libdir, prefix = opts["libdir"], opts["prefix"]
    rows = readme_table(src)
    if not check(len(rows) > 0, "README has the install table (What | Paths under the prefix "
                 "| Debian package)"):
        return
    installed = staged_paths(build, tmp, prefix)
    if installed is None:
        return
    planned = {os.path.relpath(p, prefix) for p in (introspect(build, "installed") or {}).values()}
    check(planned and planned <= installed,
          "meson install writes every path meson introspect --installed lists (%d of %d)"
          % (len(planned & installed), len(planned)))
    listed, optional = set(), set()
    for what, paths, _ in rows:
        for p in paths:
            p = p.replace("LIBDIR", libdir)
            listed.add(p)
            # rows of what a build may leave out say what it needs: "(with ...)"
            if "(with " in what:
                optional.add(p)
    unlisted = sorted(installed - listed)
    check(not unlisted, "README's install table lists every installed path%s" %
          ((": " + ", ".join(unlisted)) if unlisted else ""))
    ghosts = sorted(listed - installed - optional)
    check(not ghosts, "every path of README's install table is installed%s" %
          ((": " + ", ".join(ghosts)) if ghosts else ""))
    pats = debian_patterns(src, libdir)
    wrong = ["%s (README: %s, debian/: %s)" % (p, pkg, package_of(p.replace("LIBDIR", libdir),
                                                                     pats))
             for _, paths, pkg in rows for p in paths
             if package_of(p.replace("LIBDIR", libdir), pats) != pkg]
    check(not wrong, "each row's package is the one whose debian/*.install takes the path%s"
          % ((": " + "; ".join(wrong)) if wrong else ""))


# ---- man --------------------------------------------------------------------------

def page(src, name):
    return open(os.path.join(src, "docs", "man", name + ".scd")).read()


def defined(scd, assignments=False):
    """The terms a page defines: those between stars on lines that start with
    one (scdoc's \\_ unescaped); on a line "*key* = ..." only those before
    the "=". ASSIGNMENTS: only such lines."""
    terms = set()
    for line in scd.splitlines():
        if not line.startswith("*") or (assignments and " = " not in line):
            continue
        # "*a* = X, *b* = Y": the terms before each "="
        names = " ".join(line.split(" = ")[:-1]) if " = " in line else line
        terms |= {t.replace("\\_", "_") for t in re.findall(r"\*([^*\s]+)\*", names)}
    return terms


def help_options(text):
    """The options of a --help text: the first column of its option lines,
    and the options in the synopsis of its command lines."""
    opts, commands = set(), []
    section = None
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            section = line
            continue
        m = re.match(r"^\s{2,}(-[-\w]+)(?:,\s+(--[-\w]+))?", line)
        if m:
            opts |= {o for o in m.groups() if o}
        m = re.match(r"^  ([a-z]+)((?: \S+)*)", line)
        if section == "Commands:" and m:
            commands.append(m.group(1))
            opts |= set(re.findall(r"(?<![\w-])(--?[a-z][-a-z]*)", m.group(2)))
    for m in re.finditer(r"\[(-\w)\s", text.split("\n\n")[0]):
        opts.add(m.group(1))   # usage lines: [-d NIC]
    return opts, commands


def check_options(what, text, scd, man):
    opts, commands = help_options(text)
    terms = defined(scd)
    missing = sorted(o for o in opts if o not in terms)
    check(opts and not missing, "%s: every option is in %s (%d)%s" %
          (what, man, len(opts), (", missing: " + " ".join(missing)) if missing else ""))
    if commands:
        missing = [c for c in commands if c not in terms]
        check(not missing, "%s: every command is in %s (%d)%s" %
              (what, man, len(commands), (", missing: " + " ".join(missing)) if missing else ""))


def conf_keys(src):
    """SECTION -> the keys of daemon/conf.c's table."""
    keys = {}
    text = open(os.path.join(src, "daemon", "conf.c")).read()
    for sect, key in re.findall(r'\{\s*SECT_([A-Z]+),\s*"(\w+)"', text):
        keys.setdefault(sect.lower(), []).append(key)
    return keys


def scd_sections(scd):
    """SECTION -> the text of viad.conf(5)'s "# SECTION [name]"."""
    parts = re.split(r"^# SECTION \[(\w+)\]\n", scd, flags=re.M)
    return {parts[i]: re.split(r"^# ", parts[i + 1], flags=re.M)[0]
            for i in range(1, len(parts) - 1, 2)}


def ini_keys(path):
    """The keys an ini file sets, or shows set in comments ("#   key = 1",
    "#   a, b = 0"): the port keys are comments there, with no section."""
    keys = set()
    for line in open(path):
        m = re.match(r"^#?\s*(\w+(?:,\s*\w+)*)\s*=", line)
        if m:
            keys |= {k.strip() for k in m.group(1).split(",")}
    return keys


def test_man(build, src, tmp):
    keys = conf_keys(src)
    check(set(keys) == {"viad", "limits", "port"} and all(keys.values()),
          "daemon/conf.c: the keys of [viad], [limits], [port]")
    sections = scd_sections(page(src, "viad.conf.5"))
    example = ini_keys(os.path.join(src, "config", "viad.conf"))
    for sect, names in sorted(keys.items()):
        terms = defined(sections.get(sect, ""))
        missing = [k for k in names if k not in terms]
        check(not missing, "viad.conf(5) [%s] documents every key of conf.c (%d)%s" %
              (sect, len(names), (", missing: " + " ".join(missing)) if missing else ""))
        extra = sorted(defined(sections.get(sect, ""), assignments=True) - set(names))
        check(not extra, "viad.conf(5) [%s] documents no key conf.c lacks%s" %
              (sect, (": " + " ".join(extra)) if extra else ""))
        missing = [k for k in names if k not in example]
        check(not missing, "config/viad.conf [%s] lists every key (%d)%s" %
              (sect, len(names), (", missing: " + " ".join(missing)) if missing else ""))

    progs = [("viad --help", [os.path.join(build, "daemon", "viad"), "--help"], "viad.8"),
             ("viactl --help", [os.path.join(build, "tools", "viactl", "viactl"), "--help"],
              "viactl.8"),
             ("vipl_pingpong --help", [os.path.join(build, "apps", "vipl_pingpong"), "--help"],
              "vipl_pingpong.1"),
             ("vipl_bw --help", [os.path.join(build, "apps", "vipl_bw"), "--help"],
              "vipl_pingpong.1"),
             ("vipl_legacy", [os.path.join(build, "apps", "vipl_legacy")], "vipl_legacy.1")]
    for what, args, man in progs:
        r = run(args)
        check_options(what, r.stdout + r.stderr, page(src, man), man.replace(".", "(") + ")")

    # the built pages' footers carry the version
    version = project_version(build)
    mandir = os.path.join(build, "docs", "man")
    built = sorted(f for f in os.listdir(mandir) if re.fullmatch(r".+\.[1-8]", f)) \
        if os.path.isdir(mandir) else []
    wrong = [f for f in built if '"VIA-DPDK %s"' % version not in
             open(os.path.join(mandir, f)).read().split("\n.SH", 1)[0]]
    check(built and not wrong, "the man pages' footers say VIA-DPDK %s (%d pages)%s" %
          (version, len(built), (", not: " + " ".join(wrong)) if wrong else ""))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("readme", "man"):
        print(__doc__, file=sys.stderr)
        return 2
    build, src = os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    tmp = tempfile.mkdtemp(prefix="docs-")
    try:
        globals()["test_" + sys.argv[1]](build, src, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
