#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Shipping VIA-DPDK (issue 31): each check prints one line, "ok - ..." or
"not ok - ...".

    pkg_test.py deb BUILD SRC     builds the Debian packages from a copy of the
                                  tree (dpkg-buildpackage -us -uc -b), runs
                                  lintian on them, checks that the symbols
                                  file lists each version node of the
                                  libraries, installs them with apt-get,
                                  starts the installed viad as viad.service
                                  would (its ExecStartPre and ExecStart, no
                                  systemd needed), builds a VIPL program with
                                  cc -lvipl against the installed headers,
                                  runs an MPI ping-pong over the installed
                                  libfabric provider, then purges the packages
                                  and checks that nothing of theirs is left
                                  but the group vipl (Debian keeps system
                                  groups)
    pkg_test.py prefix BUILD SRC  configures and builds the tree with a
                                  temporary --prefix and a --sysconfdir outside
                                  it, installs with DESTDIR, and fails if a
                                  file lands outside the two or a built-in path
                                  names another place

Both need root (apt-get; viad). deb refuses to run where packages of
VIA-DPDK are installed already: it installs and purges only its own.
KEEP=1 keeps the scratch directory.
"""
import grp
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import checks  # noqa: E402
from checks import check, note, project_version, run, wait_for  # noqa: E402

PACKAGES = ["viad", "libvipl1", "libvipl-dev", "libfabric-via", "vipl-utils"]
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"]
UNIT = "/lib/systemd/system/viad.service"
SOCKET = "/run/viad/viad.sock"


def copy_tree(src, dest):
    """The tree as git has it (tracked and untracked, not ignored: no build
    directories), or all of it but build*/ where SRC is no git checkout."""
    r = run(["git", "-C", src, "ls-files", "-z", "-co", "--exclude-standard"])
    if r.returncode == 0:
        names = [n for n in r.stdout.split("\0") if n and os.path.lexists(os.path.join(src, n))]
        for n in names:
            os.makedirs(os.path.dirname(os.path.join(dest, n)), exist_ok=True)
            shutil.copy2(os.path.join(src, n), os.path.join(dest, n), follow_symlinks=False)
    else:
        shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("build", "build-*", ".git"))


def under(path, *roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


# ---- deb ------------------------------------------------------------------------

def build_debs(tmp, src, version):
    """dpkg-buildpackage in a copy of SRC: the .deb files by package, or None."""
    tree = os.path.join(tmp, "via-dpdk")
    copy_tree(src, tree)
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=%d" %
               (os.cpu_count() or 1))
    log = os.path.join(tmp, "dpkg-buildpackage.log")
    with open(log, "w") as f:
        rc = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree, env=env,
                            stdout=f, stderr=subprocess.STDOUT, timeout=1800).returncode
    if not check(rc == 0, "dpkg-buildpackage -us -uc -b builds the packages"):
        note("".join(open(log).readlines()[-40:]))
        return None
    debs = {}
    for p in PACKAGES:
        path = os.path.join(tmp, "%s_%s_%s.deb" % (p, version, arch()))
        check(os.path.exists(path), "package %s %s built" % (p, version))
        debs[p] = path
    extra = sorted(f for f in os.listdir(tmp) if f.endswith(".deb") and
                   os.path.join(tmp, f) not in debs.values())
    check(not extra, "no other package built%s" % (": " + ", ".join(extra) if extra else ""))
    return debs if all(os.path.exists(p) for p in debs.values()) else None


def arch():
    return run(["dpkg", "--print-architecture"]).stdout.strip()


def lintian(tmp, version):
    changes = os.path.join(tmp, "via-dpdk_%s_%s.changes" % (version, arch()))
    # overridden tags, listed with --show-overrides, would count as failures
    r = run(["lintian", "--fail-on", "error,warning", "--info", changes], timeout=600)
    tags = [line for line in r.stdout.splitlines() if line[:2] in ("E:", "W:", "I:")]
    note("lintian: " + ("\n".join(tags) if tags else "no tag"))
    if not check(r.returncode == 0, "lintian: no error or warning (overrides and their "
                 "reasons: debian/*.lintian-overrides)"):
        note(r.stderr[-1000:])


def symbols_by_node(lines):
    """A symbols file's lines: {soname: {node: {releases}}}, from patterns
    ("(symver)NODE RELEASE", debian/) and from symbols ("NAME@NODE RELEASE",
    as dpkg-gensymbols writes them into the package)."""
    nodes = {}
    lib = None
    for line in lines:
        if line and not line[0].isspace() and line[0] not in "#*|":
            lib = nodes.setdefault(line.split()[0], {})
        elif line.startswith(" ") and lib is not None:
            name, release = line.split()[:2]
            node = name[len("(symver)"):] if name.startswith("(symver)") else name.partition("@")[2]
            lib.setdefault(node, set()).add(release)
    return nodes


def symbol_versions(tmp, src, debs, version):
    """debian/libvipl1.symbols names every version node of the libraries
    libvipl1 ships, each with a release no later than this one, and the
    package's symbols file gives each symbol its node's release: a node it
    lacks gets the release being built (dpkg-gensymbols adds it, but an
    export put in an old node gets that node's release, which lacks it);
    one of a later release makes dependent packages uninstallable."""
    root = os.path.join(tmp, "libvipl1")
    r = run(["dpkg-deb", "-x", debs["libvipl1"], root])
    if not check(r.returncode == 0, "dpkg-deb -x libvipl1"):
        return
    listed = symbols_by_node(open(os.path.join(src, "debian", "libvipl1.symbols")))
    shipped = symbols_by_node(run(["dpkg-deb", "-I", debs["libvipl1"], "symbols"]).stdout
                              .splitlines())
    libs = [os.path.join(d, f) for d, _, files in os.walk(root) for f in files
            if f.startswith(tuple(listed)) and not os.path.islink(os.path.join(d, f))]
    check(len(libs) == len(listed) > 0, "libvipl1 holds the libraries debian/libvipl1.symbols "
          "names (%s)" % " ".join(sorted(listed)))
    for path in libs:
        soname = next(s for s in listed if os.path.basename(path).startswith(s))
        # objdump -p: "Version definitions:", one "N FLAGS HASH NAME" line
        # per node; flags 0x01 is the base (the soname itself)
        nodes = []
        defs = False
        for line in run(["objdump", "-p", path]).stdout.splitlines():
            if line.startswith("Version definitions:"):
                defs = True
            elif defs and not line.strip():
                break
            elif defs and line[:1].isdigit():
                flags, name = line.split()[1], line.split()[3]
                if int(flags, 16) & 1 == 0:
                    nodes.append(name)
        mine = listed[soname]
        missing = [n for n in nodes if n not in mine]
        check(nodes and not missing, "debian/libvipl1.symbols lists every version node of %s "
              "(%s)%s" % (soname, " ".join(nodes), "; not: " + " ".join(missing) if missing else ""))
        later = ["%s %s" % (n, v) for n, vs in mine.items() for v in vs
                 if run(["dpkg", "--compare-versions", v, "le", version]).returncode != 0]
        check(not later, "no node of %s is of a release after %s%s" %
              (soname, version, ": " + ", ".join(later) if later else ""))
        wrong = ["%s %s" % (n, "/".join(sorted(vs))) for n, vs in
                 shipped.get(soname, {}).items() if vs != mine.get(n)]
        check(soname in shipped and not wrong, "the package's symbols of %s have their node's "
              "release%s" % (soname, ": not " + ", ".join(wrong) if wrong else ""))


class Installed:
    """The packages while installed: what dpkg -L lists for each."""

    def __init__(self, debs):
        self.debs = debs
        self.files = {}
        r = run(APT + ["install", "--no-install-recommends"] +
                [debs[p] for p in PACKAGES], timeout=900)
        self.ok = check(r.returncode == 0, "apt-get install ./*.deb")
        if not self.ok:
            note(r.stdout[-2000:] + r.stderr[-2000:])
            return
        for p in PACKAGES:
            r = run(["dpkg", "-L", p])
            self.files[p] = r.stdout.split("\n") if r.returncode == 0 else []
            self.files[p] = [f for f in self.files[p] if f and f != "/."]
            check(self.files[p] != [], "dpkg -L %s lists its files (%d)" % (p, len(self.files[p])))

    def purge(self):
        r = run(APT + ["purge"] + PACKAGES, timeout=900)
        check(r.returncode == 0, "apt-get purge removes the packages")
        if r.returncode != 0:
            note(r.stdout[-2000:] + r.stderr[-2000:])
        for p in PACKAGES:
            r = run(["dpkg-query", "-W", "-f", "${db:Status-Status}", p])
            check(r.stdout.strip() in ("", "not-installed"),
                  "%s is gone from dpkg's database%s" %
                  (p, " (%s)" % r.stdout.strip() if r.stdout.strip() else ""))
        for p, files in self.files.items():
            left = []
            for f in files:
                if not os.path.lexists(f):
                    continue
                if os.path.isdir(f):
                    # a directory other packages also own, or that holds
                    # files of theirs, stays (so does /lib, a link to
                    # usr/lib on a merged /usr)
                    if run(["dpkg-query", "-S", f]).returncode == 0 or os.listdir(f):
                        continue
                left.append(f)
            check(not left, "nothing dpkg -L %s listed is left%s" %
                  (p, (": " + " ".join(left[:10])) if left else ""))
        for path in ["/run/viad", "/etc/viad", "/etc/systemd/system/multi-user.target.wants/"
                     "viad.service", "/var/lib/systemd/deb-systemd-helper-enabled/"
                     "viad.service.dsh-also"]:
            check(not os.path.lexists(path), "purged: no %s" % path)
        check(group_exists("vipl"), "the group vipl stays, as Debian leaves system groups")


def group_exists(name):
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def unit_lines(text, key):
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(key + "=")]


def start_as_unit(tmp):
    """viad started as viad.service would: its Environment, ExecStartPre
    (hugepages; '-': a failure is ignored) and ExecStart, as root. systemd
    turns $$ into $ and splits the line as a shell would."""
    text = open(UNIT).read()
    env = dict(os.environ)
    for e in unit_lines(text, "Environment"):
        k, v = e.split("=", 1)
        env[k] = v
    for pre in unit_lines(text, "ExecStartPre"):
        # the special prefixes (systemd.service(5), "Command lines"): '-'
        # ignores a failure, '+' runs with full privileges (as this test
        # does), '@', ':' and '!' change what systemd passes; none is part
        # of the command
        cmd = pre.lstrip("-@:+!")
        r = run(shlex.split(cmd.replace("$$", "$")), env=env)
        check(r.returncode == 0 or "-" in pre[:len(pre) - len(cmd)],
              "ExecStartPre %s (status %d)" % (pre[:40], r.returncode))
    (start,) = unit_lines(text, "ExecStart")
    log = open(os.path.join(tmp, "viad.log"), "w")
    proc = subprocess.Popen(shlex.split(start), env=env, stdout=log, stderr=subprocess.STDOUT)
    # ready when its control loop starts ("listening on", as READY=1): the
    # socket exists before its mode and group are set and telemetry is up
    ok = wait_for(lambda: "listening on" in open(log.name).read() or proc.poll() is not None,
                  timeout=60)
    if not check(ok and proc.poll() is None, "the installed viad starts as viad.service "
                 "would (%s, RUNTIME_DIRECTORY=%s)" % (start, env.get("RUNTIME_DIRECTORY"))):
        note(open(log.name).read()[-3000:])
    return proc, env


def stop_viad(proc, tmp):
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    if not check(rc == 0, "the installed viad stops cleanly at SIGTERM (status %s)" % rc):
        note(open(os.path.join(tmp, "viad.log")).read()[-3000:])


VIPL_PROGRAM = r"""
#include <stdio.h>
#include <vipl.h>

int
main(int argc, char **argv)
{
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES a;
	VIP_RETURN rc = VipOpenNic(argc > 1 ? argv[1] : "via0", &nic);

	if (rc != VIP_SUCCESS) {
		printf("VipOpenNic: %d\n", (int)rc);
		return 1;
	}
	rc = VipQueryNic(nic, &a);
	if (rc == VIP_SUCCESS)
		printf("NIC %s provider version %lu.%lu\n", a.Name, a.ProviderVersion >> 16,
		       a.ProviderVersion & 0xffff);
	VipCloseNic(nic);
	return rc == VIP_SUCCESS ? 0 : 1;
}
"""


def use_installed(tmp, src, version, env):
    """What an operator and a programmer do with the installed packages."""
    r = run(["viad", "-V"])
    check(r.returncode == 0 and r.stdout.strip() == "viad (VIA-DPDK) %s" % version,
          "viad -V: %s" % r.stdout.strip())
    r = run(["viactl", "status"], env=env)
    check(r.returncode == 0 and any(line.split() == ["version", version]
                                    for line in r.stdout.splitlines()),
          "viactl status finds the service's viad (RUNTIME_DIRECTORY) and its version")
    if r.returncode != 0:
        note(r.stdout + r.stderr)
    st = os.stat(SOCKET)
    vipl = grp.getgrnam("vipl").gr_gid
    check(stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == vipl,
          "the socket is 0660 root:vipl (%04o, group %d)" % (stat.S_IMODE(st.st_mode), st.st_gid))
    st = os.stat("/run/viad")
    check(stat.S_IMODE(st.st_mode) == 0o750 and st.st_uid == 0 and st.st_gid == vipl,
          "/run/viad is 0750 root:vipl (%04o %d:%d)" % (stat.S_IMODE(st.st_mode), st.st_uid,
                                                        st.st_gid))
    r = run(["vipl_info", "via0"])
    check(r.returncode == 0 and "all calls succeeded" in r.stdout,
          "vipl_info via0 (vipl-utils) over the installed viad")

    # a VIPL program, built as its README says: cc app.c -lvipl
    prog_c = os.path.join(tmp, "app.c")
    prog = os.path.join(tmp, "app")
    with open(prog_c, "w") as f:
        f.write(VIPL_PROGRAM)
    r = run(["cc", "-Wall", "-Werror", prog_c, "-o", prog, "-lvipl"])
    if check(r.returncode == 0, "cc app.c -lvipl builds against the installed vipl.h"):
        r = run([prog, "via0"])
        check(r.returncode == 0 and "provider version" in r.stdout,
              "the program runs over libvipl.so.1 and its dpdk provider: " + r.stdout.strip())
        # as a member of the group vipl, not root
        r = run([prog, "via0"], user=65534, group=65534, extra_groups=[grp.getgrnam("vipl").gr_gid])
        check(r.returncode == 0, "a member of vipl runs it too (nobody, group vipl)")
        if r.returncode != 0:
            note(r.stdout + r.stderr)
    r = run(["sh", "-c", 'cc $(pkg-config --cflags libvipl) "$1" -o "$2" '
             '$(pkg-config --libs libvipl) && pkg-config --modversion libvipl', "sh", prog_c,
             prog + "-pc"])
    check(r.returncode == 0 and r.stdout.strip() == version,
          "pkg-config libvipl: builds it, version %s" % r.stdout.strip())

    # MPI over the installed libfabric provider: no FI_PROVIDER_PATH
    if not (shutil.which("mpicc") and shutil.which("mpirun")):
        check(False, "mpicc and mpirun are installed (scripts/setup-host.sh)")
        return
    r = run(["fi_info", "-p", "via", "-t", "FI_EP_RDM"],
            env={k: v for k, v in os.environ.items() if k != "FI_PROVIDER_PATH"})
    check(r.returncode == 0 and "via" in r.stdout,
          "fi_info -p via finds the installed provider in libfabric's directory")
    mpi = os.path.join(tmp, "mpi_pingpong")
    r = run(["mpicc", os.path.join(src, "tests", "mpi", "mpi_pingpong.c"), "-o", mpi])
    if not check(r.returncode == 0, "mpicc mpi_pingpong.c"):
        note(r.stderr[-1000:])
        return
    menv = {k: v for k, v in os.environ.items() if not k.startswith(("FI_", "OMPI_", "VIAD"))}
    menv.update(FI_PROVIDER="via", OMPI_ALLOW_RUN_AS_ROOT="1",
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TMPDIR=tmp)
    r = run(["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
             "--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include",
             "via", "-x", "FI_PROVIDER", "-np", "2", mpi, "-n", "200"], env=menv, timeout=300)
    sizes = [line for line in r.stdout.splitlines() if line.startswith("size=")]
    if not check(r.returncode == 0 and len(sizes) == 3,
                 "MPI ping-pong over via with the installed provider (%d sizes)" % len(sizes)):
        note(r.stdout[-2000:] + r.stderr[-2000:])
    else:
        note("\n".join(sizes))


def test_deb(build, src, tmp):
    version = project_version(build)
    if not check(version is not None, "meson introspect --projectinfo: version %s" % version):
        return
    r = run(["dpkg-parsechangelog", "-l", os.path.join(src, "debian", "changelog"), "-S",
             "Version"])
    check(r.stdout.strip() == version,
          "debian/changelog's version is meson.build's (%s, %s)" % (r.stdout.strip(), version))
    mine = [p for p in PACKAGES if run(["dpkg-query", "-W", "-f", "${db:Status-Status}",
                                        p]).stdout.strip() not in ("", "not-installed")]
    if not check(not mine, "no package of VIA-DPDK is installed yet%s" %
                 (" (found: %s; apt-get purge them first)" % " ".join(mine) if mine else "")):
        return
    debs = build_debs(tmp, src, version)
    if debs is None:
        return
    lintian(tmp, version)
    symbol_versions(tmp, src, debs, version)
    inst = Installed(debs)
    try:
        if inst.ok:
            check(group_exists("vipl"), "postinst made the group vipl (sysusers.d)")
            if os.path.isdir("/run/systemd/system"):
                # systemd runs here: postinst started the service; the
                # checks below start viad themselves, as CI (no systemd) does
                r = run(["systemctl", "is-active", "viad"])
                check(r.stdout.strip() == "active", "systemd runs viad.service after install")
                run(["systemctl", "stop", "viad"])
            viad, env = start_as_unit(tmp)
            try:
                if viad.poll() is None:
                    use_installed(tmp, src, version, env)
            finally:
                if viad.poll() is None:
                    stop_viad(viad, tmp)
    finally:
        inst.purge()


# ---- prefix -----------------------------------------------------------------------

def test_prefix(build, src, tmp):
    prefix = os.path.join(tmp, "prefix")
    sysconf = os.path.join(tmp, "sysconf")
    dest = os.path.join(tmp, "dest")
    bdir = os.path.join(tmp, "build")
    r = run(["meson", "setup", bdir, src, "--prefix", prefix, "--sysconfdir", sysconf,
             "-Dtests=false"], timeout=300)
    if not check(r.returncode == 0, "meson setup --prefix=%s --sysconfdir=%s" % (prefix, sysconf)):
        note(r.stdout[-2000:] + r.stderr[-2000:])
        return
    r = run(["ninja", "-C", bdir], timeout=1800)
    if not check(r.returncode == 0, "ninja builds it"):
        note(r.stdout[-3000:])
        return
    r = run(["meson", "install", "-C", bdir, "--no-rebuild", "--destdir", dest], timeout=600,
            env=dict(os.environ, DESTDIR=""))
    if not check(r.returncode == 0, "meson install --destdir"):
        note(r.stdout[-2000:] + r.stderr[-2000:])
        return
    staged = []
    for root, dirs, files in os.walk(dest):
        staged += [os.path.join(root, f) for f in files + dirs]
    outside = [p[len(dest):] for p in staged if not under(p[len(dest):], prefix, sysconf) and
               not under(prefix, p[len(dest):]) and not under(sysconf, p[len(dest):])]
    check(staged and not outside, "%d paths installed, none outside the prefix and the "
          "sysconfdir%s" % (len(staged), (": " + " ".join(outside[:10])) if outside else ""))
    r = run(["meson", "introspect", "--installed", bdir])
    planned = json.loads(r.stdout).values() if r.returncode == 0 else []
    missing = [p for p in planned if not os.path.lexists(dest + p)]
    check(planned and not missing, "every file of meson introspect --installed is there%s"
          % ((": " + " ".join(missing[:10])) if missing else ""))

    # the places built into the programs are the configured ones
    viad = dest + os.path.join(prefix, "sbin", "viad")
    r = run([viad, "--help"])
    conf = os.path.join(sysconf, "viad", "viad.conf")
    check(conf in r.stdout, "viad --help: the default configuration is %s" % conf)
    libdir = run(["meson", "introspect", "--buildoptions", bdir])
    opts = {o["name"]: o["value"] for o in json.loads(libdir.stdout)}
    lib = os.path.join(prefix, opts["libdir"])
    for path, want in [(viad, os.path.join(lib, "viad", "glue").encode()),
                       (dest + os.path.join(lib, "libvipl.so.1"),
                        os.path.join(sysconf, "vipl", "providers.conf").encode()),
                       (dest + os.path.join(lib, "libvipl.so.1"),
                        os.path.join(lib, "vipl").encode())]:
        check(os.path.exists(path) and want in open(path, "rb").read(),
              "%s names %s" % (os.path.basename(path), want.decode()))
    unit = dest + os.path.join(prefix, "lib", "systemd", "system", "viad.service")
    check(os.path.exists(unit) and "ExecStart=%s/sbin/viad\n" % prefix in open(unit).read(),
          "viad.service starts the installed viad")
    page = dest + os.path.join(prefix, opts["mandir"], "man8", "viad.8")
    r = run(["man", "-l", page], env=dict(os.environ, MANWIDTH="250", LC_ALL="C.UTF-8"))
    check(r.returncode == 0 and conf in r.stdout, "viad(8) names %s" % conf)
    fabric = dest + os.path.join(lib, "libfabric", "libvia-fi.so")
    if run(["pkg-config", "--exists", "libfabric"]).returncode == 0:
        check(os.path.exists(fabric), "libvia-fi.so under the prefix: %s" % fabric[len(dest):])
    pc = dict(os.environ, PKG_CONFIG_PATH=dest + os.path.join(lib, "pkgconfig"))
    r = run(["pkg-config", "--modversion", "libvipl", "libvipl-dpdk", "via-glue"], env=pc)
    version = project_version(bdir)
    check(r.returncode == 0 and r.stdout.split() == [version] * 3,
          "libvipl.pc, libvipl-dpdk.pc, via-glue.pc: version %s" % version)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("deb", "prefix"):
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("SKIP: must run as root (apt-get, viad)")
        return 77
    needs = {"deb": ["dpkg-buildpackage", "lintian", "apt-get", "cc"], "prefix": ["man"]}
    for prog in needs[sys.argv[1]]:
        if not shutil.which(prog):
            check(False, "%s is installed (scripts/setup-host.sh)" % prog)
            return 1
    build, src = os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    tmp = tempfile.mkdtemp(prefix="pkg-")
    os.chmod(tmp, 0o755)   # apt's _apt user reads the .deb files
    try:
        globals()["test_" + sys.argv[1]](build, src, tmp)
    finally:
        if os.environ.get("KEEP") or checks.failures:
            note("scratch directory kept: " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
