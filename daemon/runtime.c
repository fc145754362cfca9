/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad's place on the host (runtime.h): the runtime directory and its lock,
 * socket files, and the capabilities viad keeps.
 *
 * Capabilities are per thread in Linux, and EAL has started its threads
 * (interrupts, telemetry) by the time viad knows what it needs: a drop in
 * one thread would leave the others, which share its memory, as strong as
 * before. So the drop is broadcast, as glibc's setuid() and libcap's psx
 * do it: a signal makes each thread drop its own, and /proc/self/task
 * shows that every thread did before viad goes on.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>

#include "runtime.h"
#include "viad.h"

#define LOCK_TRIES 3
#define DROP_WAIT_MS 2000
#define DROP_ROUNDS 8

static char runtime_dir[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
static int runtime_fd = -1;

/* ---- the runtime directory and the instance lock ---------------------------- */

/* EAL's file prefix in its arguments: --file-prefix=P or --file-prefix P. */
static const char *
file_prefix(char *const *argv, int argc)
{
	static const char opt[] = "--file-prefix";
	const char *prefix = "rte";   /* EAL's default */
	int i;

	for (i = 1; i < argc; i++) {
		if (strncmp(argv[i], opt, sizeof(opt) - 1) != 0)
			continue;
		if (argv[i][sizeof(opt) - 1] == '=')
			prefix = argv[i] + sizeof(opt);
		else if (argv[i][sizeof(opt) - 1] == '\0' && i + 1 < argc)
			prefix = argv[++i];
	}
	return prefix;
}

/* Where EAL puts its runtime directories (eal_create_runtime_dir()). */
static const char *
runtime_base(void)
{
	const char *dir = getenv("RUNTIME_DIRECTORY");

	if (dir != NULL)
		return dir;
	if (getuid() == 0)
		return "/var/run";
	dir = getenv("XDG_RUNTIME_DIR");
	return dir != NULL ? dir : "/tmp";
}

int
via_runtime_lock(char *const *eal_argv, int eal_argc, char *err, size_t errlen)
{
	const char *base = runtime_base(), *prefix = file_prefix(eal_argv, eal_argc);
	char parent[sizeof(runtime_dir)];
	struct stat st, now;
	unsigned tries;
	int fd = -1, rc;

	rc = stat(base, &st) != 0 ? -errno : !S_ISDIR(st.st_mode) ? -ENOTDIR : 0;
	if (rc != 0) {
		snprintf(err, errlen, "runtime directory %s%s: %s (viad.service makes it: "
			 "RuntimeDirectory=viad; or systemd-tmpfiles --create)", base,
			 getenv("RUNTIME_DIRECTORY") ? " ($RUNTIME_DIRECTORY)" : "",
			 strerror(-rc));
		return rc;
	}
	if ((size_t)snprintf(parent, sizeof(parent), "%s/dpdk", base) >= sizeof(parent) ||
	    (size_t)snprintf(runtime_dir, sizeof(runtime_dir), "%s/%s", parent, prefix) >=
		    sizeof(runtime_dir) - sizeof("/viad_telemetry.sock")) {
		snprintf(err, errlen, "runtime directory %s/dpdk/%s: too long for a socket path",
			 base, prefix);
		runtime_dir[0] = '\0';
		return -ENAMETOOLONG;
	}
	/* a viad that stops removes the directory while it holds the lock:
	 * the one locked must still be the one at the path */
	for (tries = 0; tries < LOCK_TRIES; tries++) {
		if ((mkdir(parent, 0700) != 0 && errno != EEXIST) ||
		    (mkdir(runtime_dir, 0700) != 0 && errno != EEXIST) ||
		    (fd = open(runtime_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			break;
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			rc = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
			snprintf(err, errlen, "instance '%s': %s", prefix, rc == -EADDRINUSE ?
				 "another viad runs it (its runtime directory is locked; "
				 "viactl -i NAME status shows it)" : strerror(-rc));
			close(fd);
			runtime_dir[0] = '\0';
			return rc;
		}
		if (fstat(fd, &st) == 0 && stat(runtime_dir, &now) == 0 && st.st_ino == now.st_ino &&
		    st.st_dev == now.st_dev) {
			runtime_fd = fd;
			return 0;
		}
		close(fd);
		fd = -1;
	}
	rc = tries == LOCK_TRIES ? -EAGAIN : -errno;
	snprintf(err, errlen, "runtime directory %s: %s", runtime_dir,
		 rc == -EAGAIN ? "removed again and again" : strerror(-rc));
	runtime_dir[0] = '\0';
	return rc;
}

const char *
via_runtime_dir(void)
{
	return runtime_dir;
}

int
via_socket_claim(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a listener of another socket type answers EPROTOTYPE: live too */
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
	close(fd);
	if (rc == 0 || rc == EPROTOTYPE)
		return -EADDRINUSE;
	if (rc != ECONNREFUSED)
		return -rc;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
}

/* ---- capabilities ------------------------------------------------------------ */

/* What viad needs to start: its ports, sockets, and the drop itself. */
static const struct {
	int cap;
	const char *name;
} start_caps[] = {
	{ CAP_IPC_LOCK, "cap_ipc_lock" }, { CAP_NET_RAW, "cap_net_raw" },
	{ CAP_NET_ADMIN, "cap_net_admin" }, { CAP_CHOWN, "cap_chown" },
	{ CAP_FOWNER, "cap_fowner" }, { CAP_SETPCAP, "cap_setpcap" },
	{ CAP_IPC_OWNER, "cap_ipc_owner" },
};

/*
 * What viad keeps once its ports and sockets are open, and why; the rest
 * (CAP_DAC_OVERRIDE, CAP_SYS_ADMIN, CAP_NET_*, CAP_CHOWN, CAP_SETUID, ...)
 * goes from the effective set and, unless viad.upgrades keeps what viad
 * started with permitted for an upgrade's exec (drop.reserve), from every
 * set, the bounding set included.
 */
static const struct {
	int cap;
	const char *name;
	const char *why;
} kept_caps[] = {
	{ CAP_IPC_LOCK, "cap_ipc_lock",
	  "DPDK pins the memory it adds to its heap at run time (VFIO counts it against "
	  "RLIMIT_MEMLOCK without this)" },
	{ CAP_IPC_OWNER, "cap_ipc_owner",
	  "procmem.c attaches a client's SysV segment in place once the client's own "
	  "credentials (SO_PEERCRED, SO_PEERGROUPS) are found to allow it, as ipcperms() would" },
};

/* af_xdp ports take their XDP program off the interface when viad stops:
 * netlink (CAP_NET_ADMIN) and the program's and maps' fds (CAP_SYS_ADMIN) */
static const int af_xdp_caps[] = { CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF };
/* a port's IP interface (glue_exception.c, net_tap) flushes its flows and
 * takes the link down over netlink and ioctls when it closes */
static const int tap_caps[] = { CAP_NET_ADMIN };

static struct {
	uint64_t keep;             /* bit N: capability N stays effective */
	/* ... and in the permitted and bounding sets: keep, and with
	 * viad.upgrades what viad had to start, which an upgrade's exec needs
	 * (with no-new-privileges an exec gains nothing beyond it) */
	uint64_t reserve;
	int signo;
	unsigned acks;             /* atomic: threads that ran the handler */
	unsigned failures;         /* atomic: ... and could not drop */
} drop;

bool
via_privileged(char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	size_t len;
	unsigned i;
	bool all = true;

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data) != 0)
		memset(data, 0, sizeof(data));
	len = (size_t)snprintf(err, errlen, "viad must run as root (or with the capabilities");
	for (i = 0; i < RTE_DIM(start_caps); i++) {
		int c = start_caps[i].cap;

		all &= (data[c / 32].effective >> (c % 32)) & 1;
		if (len < errlen)
			len += (size_t)snprintf(err + len, errlen - len, " %s", start_caps[i].name);
	}
	if (len < errlen)
		snprintf(err + len, errlen - len, "; viad.service gives them)");
	return all;
}

static unsigned
last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	unsigned n = CAP_LAST_CAP;

	if (f != NULL) {
		if (fscanf(f, "%u", &n) != 1)
			n = CAP_LAST_CAP;
		fclose(f);
	}
	return n < 63 ? n : 63;
}

/* This thread: the bounding set first (that needs CAP_SETPCAP, unless
 * there is nothing left to drop: a viad an upgrade started), then the
 * others. Async-signal-safe: system calls only. @return 0, -errno */
static int
thread_drop(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {
		{ .effective = (uint32_t)drop.keep, .permitted = (uint32_t)drop.reserve },
		{ .effective = (uint32_t)(drop.keep >> 32),
		  .permitted = (uint32_t)(drop.reserve >> 32) },
	};
	unsigned c;

	for (c = 0; c < 64; c++) {
		if ((drop.reserve & (1ull << c)) || prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
			continue;   /* kept, gone already, or past the kernel's last one */
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0)
			return -errno;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_capset, &hdr, data) != 0)
		return -errno;
	return 0;
}

static void
on_drop_signal(int sig)
{
	int saved = errno;

	(void)sig;
	if (thread_drop() != 0)
		__atomic_fetch_add(&drop.failures, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&drop.acks, 1, __ATOMIC_RELEASE);
	errno = saved;
}

/* A thread's set @p field ("CapBnd:", ...) from its status file. @return the
 * set, or ~0 if it cannot be read (the thread is gone: its caps too) */
static uint64_t
task_caps(const char *tid, const char *field)
{
	char path[64], line[128];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, field, strlen(field)) == 0) {
			v = strtoull(line + strlen(field), NULL, 16);
			break;
		}
	}
	fclose(f);
	return v;
}

/*
 * Signal every thread that still holds more than it keeps. @return how
 * many were signalled (0: none holds more), -errno
 */
static int
signal_holders(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	struct dirent *e;
	DIR *dir = opendir("/proc/self/task");
	int n = 0;

	if (dir == NULL)
		return -errno;
	while ((e = readdir(dir)) != NULL) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid <= 0 || tid == self)
			continue;
		if (((task_caps(e->d_name, "CapBnd:") | task_caps(e->d_name, "CapPrm:")) &
		     ~drop.reserve) || (task_caps(e->d_name, "CapEff:") & ~drop.keep)) {
			if (syscall(SYS_tgkill, getpid(), tid, drop.signo) == 0)
				n++;
		}
	}
	closedir(dir);
	return n;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Capabilities @p caps (@p n of them) stay. */
static void
keep_caps(const int *caps, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		drop.keep |= 1ull << caps[i];
}

int
via_drop_privileges(const struct via_conf *c)
{
	struct sigaction sa = { .sa_handler = on_drop_signal, .sa_flags = SA_RESTART };
	unsigned i, round, last = last_cap();
	int rc = 0, n;

	drop.keep = 0;
	for (i = 0; i < RTE_DIM(kept_caps); i++)
		drop.keep |= 1ull << kept_caps[i].cap;
	for (i = 0; i < c->nb_ports; i++) {
		if (strcmp(c->ports[i].glue, "ethdev") == 0 &&
		    strncmp(c->ports[i].devargs, "net_af_xdp", 10) == 0) {
			keep_caps(af_xdp_caps, RTE_DIM(af_xdp_caps));
			VLOG_INFO("capabilities: cap_net_admin, cap_sys_admin and cap_bpf stay: "
				  "port %s (af_xdp) detaches its XDP program when viad stops",
				  c->ports[i].name);
		}
		if (c->ports[i].ip_interface[0] != '\0') {
			keep_caps(tap_caps, RTE_DIM(tap_caps));
			VLOG_INFO("capabilities: cap_net_admin stays: port %s takes its IP "
				  "interface (a TAP) down when viad stops", c->ports[i].name);
		}
	}
	drop.keep &= last == 63 ? ~0ull : (1ull << (last + 1)) - 1;
	drop.reserve = drop.keep;
	if (c->upgrades) {
		struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct now[2];

		/* what viad was given to start stays permitted, not effective:
		 * an upgrade's exec starts viad again with it */
		if (syscall(SYS_capget, &hdr, now) == 0)
			drop.reserve |= now[0].permitted | (uint64_t)now[1].permitted << 32;
	}
	drop.signo = SIGRTMIN;
	sigemptyset(&sa.sa_mask);
	if (sigaction(drop.signo, &sa, NULL) != 0)
		return -errno;
	/* threads that a thread not yet dropped starts meanwhile are found
	 * in the next round */
	for (round = 0; round < DROP_ROUNDS && rc == 0; round++) {
		unsigned waited = 0;

		__atomic_store_n(&drop.acks, 0, __ATOMIC_RELAXED);
		n = signal_holders();
		if (n <= 0) {
			rc = n;
			break;
		}
		while (__atomic_load_n(&drop.acks, __ATOMIC_ACQUIRE) < (unsigned)n &&
		       waited < DROP_WAIT_MS) {
			sleep_ms(1);
			waited++;
		}
		if (__atomic_load_n(&drop.failures, __ATOMIC_RELAXED) != 0)
			rc = -EPERM;
	}
	if (rc == 0 && round == DROP_ROUNDS)
		rc = -EAGAIN;
	if (rc == 0)
		rc = thread_drop();
	signal(drop.signo, SIG_DFL);
	if (rc != 0) {
		VLOG_ERR("capabilities: cannot drop those viad does not need: %s", strerror(-rc));
		return rc;
	}
	for (i = 0; i < RTE_DIM(kept_caps); i++)
		VLOG_INFO("capabilities: %s stays: %s", kept_caps[i].name, kept_caps[i].why);
	if (drop.reserve != drop.keep)
		VLOG_INFO("capabilities: every other one is gone from every thread's effective "
			  "set; those viad had to start stay permitted (bounding set %#" PRIx64
			  "), for an upgrade's exec (viad.upgrades = no drops them too); no new "
			  "privileges", drop.reserve);
	else
		VLOG_INFO("capabilities: every other one is gone from every thread, the bounding "
			  "set included; no new privileges");
	return 0;
}

/* ---- systemd ---------------------------------------------------------------- */

void
via_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = path != NULL ? strlen(path) : 0;
	int fd;

	/* a path, or "@name" for an abstract socket (sd_notify(3)) */
	if (n == 0 || n >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
		return;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
			     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0)
		VLOG_WARN("systemd notification %s to %s: %s", state, path, strerror(errno));
	if (fd >= 0)
		close(fd);
}
