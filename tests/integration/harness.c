/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test harness: see harness.h.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VIA_IT_HARNESS_C
#include "harness.h"

#define MAX_VIADS 32

static const char *viad_path;
static const char *prog_name = "test";
static char tmpdir[128];
static unsigned nb_checks, nb_failed;
static const char *child_prefix;
static pid_t main_pid;
/* every viad started, as copies: the callers' structs may be gone */
static struct viad_proc viads[MAX_VIADS];
static unsigned nb_viads;
static unsigned instance_seq;
static unsigned viad_nofile;
static int viad_cpu = -1;
static pthread_t main_thread;

void
h_viad_set_nofile(unsigned n)
{
	viad_nofile = n;
}

void
h_viad_set_cpu(int cpu)
{
	viad_cpu = cpu;
}

uint64_t
h_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
h_now_ms(void)
{
	return h_now_ns() / 1000000u;
}

void
h_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

const char *
h_tmpdir(void)
{
	return tmpdir;
}

unsigned
h_failures(void)
{
	return nb_failed;
}

void
h_set_child(const char *prefix)
{
	child_prefix = prefix;
	nb_checks = 0;
	nb_failed = 0;
}

static void
vprint_line(const char *status, const char *file, int line, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (file != NULL)
		printf("%s%s%s - %s (%s:%d)\n", child_prefix ? child_prefix : "",
		       child_prefix ? ": " : "", status, msg, file, line);
	else
		printf("%s%s%s - %s\n", child_prefix ? child_prefix : "",
		       child_prefix ? ": " : "", status, msg);
}

int
h_check(bool ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	nb_checks++;
	va_start(ap, fmt);
	if (ok) {
		vprint_line("ok", NULL, 0, fmt, ap);
	} else {
		nb_failed++;
		vprint_line("not ok", file, line, fmt, ap);
	}
	va_end(ap);
	return ok;
}

int
h_check_ret(VIP_RETURN got, VIP_RETURN want, const char *expr, const char *file, int line,
	    const char *fmt, ...)
{
	char what[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (got == want)
		return h_check(true, file, line, "%s: %s", what, VipDpdkReturnString(want));
	h_check(false, file, line, "%s: %s returned %s (%d), want %s", what, expr,
		VipDpdkReturnString(got), (int)got, VipDpdkReturnString(want));
	return 0;
}

void
h_note(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("%s%s# %s\n", child_prefix ? child_prefix : "", child_prefix ? ": " : "", msg);
}

uint64_t
h_seed(void)
{
	const char *s = getenv("VIA_TEST_SEED");
	uint64_t seed = 0x1d2c3b4a59687766ULL;

	if (s != NULL && *s != '\0')
		seed = strtoull(s, NULL, 0);
	if (seed == 0)
		seed = 1;
	h_note("seed %#" PRIx64 " (set VIA_TEST_SEED to replay)", seed);
	return seed;
}

uint64_t
h_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* ---- log tails, async-signal-safe (used from the watchdog too) ------- */

static void
write_str(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = write(fd, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void
log_tail_raw(const struct viad_proc *v, size_t max_bytes)
{
	char buf[8192];
	struct stat st;
	off_t off;
	ssize_t n;
	int fd;

	if (max_bytes > sizeof(buf) - 1)
		max_bytes = sizeof(buf) - 1;
	fd = open(v->log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0) {
		off = st.st_size > (off_t)max_bytes ? st.st_size - (off_t)max_bytes : 0;
		n = pread(fd, buf, max_bytes, off);
		if (n > 0) {
			buf[n] = '\0';
			write_str(STDOUT_FILENO, "# ---- log of viad '");
			write_str(STDOUT_FILENO, v->name);
			write_str(STDOUT_FILENO, "' (");
			write_str(STDOUT_FILENO, v->log);
			write_str(STDOUT_FILENO, "), tail:\n");
			write_str(STDOUT_FILENO, buf);
			write_str(STDOUT_FILENO, "# ---- end of log\n");
		}
	}
	close(fd);
}

void
viad_log_tail(const struct viad_proc *v, unsigned lines)
{
	log_tail_raw(v, (size_t)lines * 120);
}

bool
viad_log_contains(const struct viad_proc *v, const char *needle)
{
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f = fopen(v->log, "re");

	if (f == NULL)
		return false;
	while (!found && getline(&line, &cap, f) >= 0)
		found = strstr(line, needle) != NULL;
	free(line);
	fclose(f);
	return found;
}

static void
watchdog(int sig)
{
	unsigned i;

	(void)sig;
	write_str(STDOUT_FILENO, "not ok - watchdog: the test did not finish in time\n");
	for (i = 0; i < nb_viads; i++) {
		if (viads[i].pid > 0) {
			log_tail_raw(&viads[i], 3000);
			kill(viads[i].pid, SIGKILL);
		}
	}
	_exit(1);
}

void
h_init(int argc, char **argv, unsigned watchdog_s)
{
	const char *slash;

	setvbuf(stdout, NULL, _IONBF, 0);
	main_pid = getpid();
	main_thread = pthread_self();
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH/TO/viad\n", argv[0]);
		exit(2);
	}
	viad_path = argv[1];
	slash = strrchr(argv[0], '/');
	prog_name = slash != NULL ? slash + 1 : argv[0];
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/via-it-%s-XXXXXX", prog_name);
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		exit(2);
	}
	h_note("%s: viad %s, temporary directory %s", prog_name, viad_path, tmpdir);
	if (h_heap_mem())
		h_note("buffers and descriptors in registered heap memory (VIA_TEST_MEM=heap)");
	/* a vanished peer must be an error return, never a signal */
	signal(SIGPIPE, SIG_IGN);
	if (watchdog_s > 0) {
		/* sanitizer builds run slower (scripts/run-sanitized.sh sets it) */
		const char *scale = getenv("VIA_TEST_WATCHDOG_SCALE");

		if (scale != NULL && atoi(scale) > 1)
			watchdog_s *= (unsigned)atoi(scale);
		signal(SIGALRM, watchdog);
		alarm(watchdog_s);
	}
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

int
h_finish(void)
{
	unsigned i;

	alarm(0);
	for (i = 0; i < nb_viads; i++) {
		if (viads[i].pid > 0 && viad_alive(&viads[i])) {
			h_check(false, __FILE__, __LINE__, "viad '%s' still running at the end",
				viads[i].name);
			viad_kill(&viads[i]);
		}
	}
	if (nb_failed > 0) {
		for (i = 0; i < nb_viads; i++)
			viad_log_tail(&viads[i], 40);
		printf("# %s: %u of %u checks FAILED; files kept in %s\n", prog_name, nb_failed,
		       nb_checks, tmpdir);
		return 1;
	}
	printf("# %s: all %u checks passed\n", prog_name, nb_checks);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* ---- viad processes -------------------------------------------------- */

static void
viad_register(const struct viad_proc *v)
{
	if (nb_viads < MAX_VIADS)
		viads[nb_viads++] = *v;
}

/* @p pid exited with wait status @p st: update the registry's copy. */
static void
viad_reaped(pid_t pid, int st)
{
	unsigned i;

	for (i = 0; i < nb_viads; i++) {
		if (viads[i].pid == pid) {
			viads[i].pid = 0;
			viads[i].status = st;
		}
	}
}

int
viad_spawn(struct viad_proc *v, const char *name, const char *sock, const char *const *sets)
{
	char *argv[80];
	char inst_set[128], lcores_set[64];
	unsigned n = 0, i;
	pid_t pid, parent;

	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", name);
	snprintf(v->sock, sizeof(v->sock), "%s", sock);
	snprintf(v->log, sizeof(v->log), "%s/viad-%s-%u.log", tmpdir, name, instance_seq);
	snprintf(v->instance, sizeof(v->instance), "it%d_%u", (int)getpid(), instance_seq++);
	snprintf(inst_set, sizeof(inst_set), "viad.instance=%s", v->instance);
	argv[n++] = (char *)viad_path;
	argv[n++] = "-s";
	argv[n++] = v->sock;
	argv[n++] = "--set";
	argv[n++] = inst_set;
	argv[n++] = "--set";
	argv[n++] = "viad.poll_mode=backoff";
	/* the whole suite again with the data path spread over N lcores */
	if (getenv("VIA_TEST_POLL_LCORES") != NULL) {
		snprintf(lcores_set, sizeof(lcores_set), "viad.poll_lcores=%s",
			 getenv("VIA_TEST_POLL_LCORES"));
		argv[n++] = "--set";
		argv[n++] = lcores_set;
	}
	for (i = 0; sets != NULL && sets[i] != NULL && n < 76; i++) {
		argv[n++] = "--set";
		argv[n++] = (char *)sets[i];
	}
	argv[n] = NULL;
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		h_check(false, __FILE__, __LINE__, "fork viad: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int fd = open(v->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		/* viad must not outlive a test killed by meson's timeout */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		signal(SIGPIPE, SIG_DFL);
		if (viad_cpu >= 0) {
			/* viad spreads its lcores over the CPUs it may use */
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(viad_cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		if (viad_nofile > 0) {
			struct rlimit rl;

			getrlimit(RLIMIT_NOFILE, &rl);
			/* hard and soft: EAL raises the soft limit to the hard one */
			rl.rlim_cur = viad_nofile < rl.rlim_max ? viad_nofile : rl.rlim_max;
			rl.rlim_max = rl.rlim_cur;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		execv(viad_path, argv);
		fprintf(stderr, "exec %s: %s\n", viad_path, strerror(errno));
		_exit(127);
	}
	v->pid = pid;
	viad_register(v);
	return 0;
}

static int
try_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
h_raw_connect(const struct viad_proc *v)
{
	return try_connect(v->sock);
}

bool
viad_alive(struct viad_proc *v)
{
	int st;
	pid_t r;

	if (v->pid <= 0)
		return false;
	r = waitpid(v->pid, &st, WNOHANG);
	if (r == v->pid || (r < 0 && errno == ECHILD)) {
		if (r == v->pid)
			viad_reaped(v->pid, st);
		v->status = r == v->pid ? st : v->status;
		v->pid = 0;
		return false;
	}
	return true;
}

int
viad_wait_ready(struct viad_proc *v, unsigned timeout_ms)
{
	uint64_t end = h_now_ms() + timeout_ms;
	int fd;

	while (h_now_ms() < end) {
		if (!viad_alive(v))
			return -1;
		fd = try_connect(v->sock);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		h_sleep_ms(20);
	}
	return -1;
}

bool
viad_start_memif(struct viad_proc *v, const char *name, bool server)
{
	return viad_start_memif_with(v, name, server, NULL);
}

bool
viad_start_memif_with(struct viad_proc *v, const char *name, bool server,
		      const char *const *more)
{
	char devargs[512], sock[256], msock[256];
	const char *sets[11] = { "port.via0.glue=ethdev", devargs };
	unsigned attempt, i;

	for (i = 0; more != NULL && more[i] != NULL && i < 8; i++)
		sets[2 + i] = more[i];

	snprintf(msock, sizeof(msock), "%s/memif.sock", h_tmpdir());
	snprintf(devargs, sizeof(devargs),
		 "port.via0.devargs=net_memif0,role=%s,socket=%s,socket-abstract=no,mac=%s",
		 server ? "server" : "client", msock,
		 server ? H_MEMIF_MAC_SERVER : H_MEMIF_MAC_CLIENT);
	snprintf(sock, sizeof(sock), "%s/%s.sock", h_tmpdir(), name);
	/* on a shared machine EAL may lose a race for memory: try again */
	for (attempt = 0; attempt < 3; attempt++) {
		if (viad_spawn(v, name, sock, sets) == 0 && viad_wait_ready(v, H_TIMEOUT_MS) == 0)
			return true;
		h_note("viad '%s' did not start (attempt %u):", name, attempt + 1);
		viad_log_tail(v, 5);
		if (v->pid > 0)
			viad_kill(v);
		if (server && viad_log_contains(v, "Address already in use")) {
			/* config/viad.conf: "socket-abstract=no lets a restarted
			 * viad reopen the socket" - not after a SIGKILL, when the
			 * socket file stays behind */
			CHECK(0, "a memif server viad restarts after a SIGKILL on the same socket "
			      "(config/viad.conf: socket-abstract=no lets a restarted viad reopen "
			      "the socket): the stale socket file is in the way; removed");
			unlink(msock);
		}
		h_sleep_ms(500);
	}
	return CHECK(0, "viad '%s' starts", name);
}

void
viad_use(const struct viad_proc *v)
{
	setenv("VIAD_SOCKET", v->sock, 1);
}

int
viad_start(struct viad_proc *v, const char *name, const char *const *sets)
{
	char sock[256];
	uint64_t t0 = h_now_ms();

	snprintf(sock, sizeof(sock), "%s/%s.sock", tmpdir, name);
	if (viad_spawn(v, name, sock, sets) != 0)
		return -1;
	if (viad_wait_ready(v, H_TIMEOUT_MS) != 0) {
		h_check(false, __FILE__, __LINE__, "viad '%s' accepts connections on %s", name,
			v->sock);
		viad_log_tail(v, 40);
		if (v->pid > 0)
			viad_kill(v);
		return -1;
	}
	h_note("viad '%s' (pid %d) ready on %s after %llu ms", name, (int)v->pid, v->sock,
	       (unsigned long long)(h_now_ms() - t0));
	viad_use(v);
	return 0;
}

int
viad_wait_exit(struct viad_proc *v, unsigned timeout_ms)
{
	uint64_t end = h_now_ms() + timeout_ms;

	while (viad_alive(v)) {
		if (h_now_ms() >= end)
			return -1;
		h_sleep_ms(10);
	}
	return 0;
}

void
viad_kill(struct viad_proc *v)
{
	int st;

	if (v->pid <= 0)
		return;
	kill(v->pid, SIGKILL);
	if (waitpid(v->pid, &st, 0) == v->pid) {
		v->status = st;
		viad_reaped(v->pid, st);
	}
	v->pid = 0;
}

int
viad_stop(struct viad_proc *v)
{
	uint64_t t0 = h_now_ms();
	int ok;

	if (v->pid <= 0) {
		h_check(false, __FILE__, __LINE__, "viad '%s' was still running before SIGTERM",
			v->name);
		return -1;
	}
	kill(v->pid, SIGTERM);
	if (viad_wait_exit(v, H_TIMEOUT_MS) != 0) {
		h_check(false, __FILE__, __LINE__, "viad '%s' exits within %u ms of SIGTERM",
			v->name, H_TIMEOUT_MS);
		viad_kill(v);
		return -1;
	}
	ok = WIFEXITED(v->status) && WEXITSTATUS(v->status) == 0;
	h_check(ok, __FILE__, __LINE__,
		"viad '%s' exits with status 0 after SIGTERM (%s %d, %llu ms)", v->name,
		WIFEXITED(v->status) ? "exit" : "signal",
		WIFEXITED(v->status) ? WEXITSTATUS(v->status) : WTERMSIG(v->status),
		(unsigned long long)(h_now_ms() - t0));
	return ok ? 0 : -1;
}

int
viad_fd_count(const struct viad_proc *v)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)v->pid);
	d = opendir(path);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n;
}

double
h_thread_cpu(pid_t pid, pid_t tid)
{
	char path[64], buf[1024], *p;
	unsigned long utime = 0, stime = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1.0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1.0;
	buf[n] = '\0';
	/* fields after "(comm)": state is field 3, utime 14, stime 15 */
	p = strrchr(buf, ')');
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
		   &stime) != 2)
		return -1.0;
	return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double
viad_main_thread_cpu(const struct viad_proc *v)
{
	return h_thread_cpu(v->pid, v->pid);
}

/* ---- VIPL helpers ------------------------------------------------------ */

VIP_RETURN
h_counters(VIP_NIC_HANDLE nic, VIP_DPDK_COUNTERS *c)
{
	VIP_RETURN r = VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_COUNTERS, c);

	if (r != VIP_SUCCESS)
		memset(c, 0, sizeof(*c));
	return r;
}

bool
h_wait_sessions(VIP_NIC_HANDLE nic, uint64_t want, VIP_DPDK_COUNTERS *c)
{
	uint64_t end = h_now_ms() + H_TIMEOUT_MS;
	VIP_DPDK_COUNTERS own;

	if (c == NULL)
		c = &own;
	do {
		if (h_counters(nic, c) == VIP_SUCCESS && c->Sessions == want)
			return true;
		h_sleep_ms(10);
	} while (h_now_ms() < end);
	h_note("Sessions is %llu, want %llu", (unsigned long long)c->Sessions,
	       (unsigned long long)want);
	return false;
}

void
h_vi_attrs(VIP_VI_ATTRIBUTES *a, VIP_PROTECTION_HANDLE ptag)
{
	memset(a, 0, sizeof(*a));
	a->ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
	a->MaxTransferSize = 32768;
	a->QoS = 0;
	a->Ptag = ptag;
	a->EnableRdmaWrite = VIP_FALSE;
	a->EnableRdmaRead = VIP_FALSE;
}

VIP_RETURN
h_create_vi(VIP_NIC_HANDLE nic, VIP_VI_ATTRIBUTES *attr, VIP_CQ_HANDLE send_cq,
	    VIP_CQ_HANDLE recv_cq, VIP_VI_HANDLE *vi)
{
	static unsigned created;
	const char *lines = getenv("VIA_TEST_LINES");
	VIP_DPDK_VI_ATTRIBUTES da = { .EntryDescriptors = VIP_TRUE };
	char *end;

	if (lines == NULL)
		return VipCreateVi(nic, attr, send_cq, recv_cq, vi);
	da.InlineSize = strtoul(lines, &end, 10);
	/* ":alternate": every other VI, so that a pair made one VI after the
	 * other joins the two kinds of entries */
	if (strcmp(end, ":alternate") == 0 && __atomic_fetch_add(&created, 1, __ATOMIC_RELAXED) % 2)
		return VipCreateVi(nic, attr, send_cq, recv_cq, vi);
	return VipDpdkCreateVi(nic, attr, &da, send_cq, recv_cq, vi);
}

/* ---- the suite's memory kind ---------------------------------------------------- */

bool
h_heap_mem(void)
{
	const char *kind = getenv("VIA_TEST_MEM");

	return kind != NULL && strcmp(kind, "heap") == 0;
}

VIP_RETURN
h_alloc(VIP_NIC_HANDLE nic, size_t len, void **p)
{
	if (!h_heap_mem())
		return VipDpdkAllocMem(nic, len, p);
	*p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	return *p != NULL ? VIP_SUCCESS : VIP_ERROR_RESOURCE;
}

VIP_RETURN
h_free(VIP_NIC_HANDLE nic, void *p)
{
	if (!h_heap_mem())
		return VipDpdkFreeMem(nic, p);
	free(p);
	return VIP_SUCCESS;
}

/* ---- registered region with a bump allocator -------------------------------- */

bool
h_mem_open(struct h_mem *m, VIP_NIC_HANDLE nic, const VIP_MEM_ATTRIBUTES *ma, const char *name,
	   size_t len, bool provider)
{
	VIP_MEM_ATTRIBUTES a = *ma; /* VipRegisterMem takes it not const */
	VIP_RETURN rc;

	memset(m, 0, sizeof(*m));
	m->name = name;
	m->provider = provider;
	if (provider) {
		rc = VipDpdkAllocMem(nic, len, (void **)&m->base);
		if (rc != VIP_SUCCESS) {
			m->base = NULL;
			return CHECK_RET(rc, VIP_SUCCESS, "%zu KiB of provider memory (%s)", len >> 10,
					 name);
		}
	} else {
		m->base = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
		if (m->base == NULL)
			return CHECK(0, "allocate %zu KiB (%s)", len >> 10, name);
	}
	rc = VipRegisterMem(nic, m->base, len, &a, &m->mh);
	if (rc != VIP_SUCCESS) {
		CHECK_RET(rc, VIP_SUCCESS, "register %s (%zu KiB)", name, len >> 10);
		if (provider)
			VipDpdkFreeMem(nic, m->base);
		else
			free(m->base);
		m->base = NULL;
		return false;
	}
	m->len = len;
	return true;
}

void
h_mem_close(struct h_mem *m, VIP_NIC_HANDLE nic)
{
	if (m->base == NULL)
		return;
	CHECK_RET(VipDeregisterMem(nic, m->base, m->mh), VIP_SUCCESS, "deregister %s", m->name);
	if (m->provider)
		CHECK_RET(VipDpdkFreeMem(nic, m->base), VIP_SUCCESS, "free %s", m->name);
	else
		free(m->base);
	m->base = NULL;
	m->len = m->used = 0;
}

void
h_mem_reset(struct h_mem *m)
{
	m->used = 0;
}

void *
h_mem_get(struct h_mem *m, size_t size, size_t align)
{
	size_t off = (m->used + align - 1) & ~(align - 1);

	if (off + size > m->len) {
		CHECK(0, "test bug: region %s exhausted (%zu + %zu > %zu)", m->name, off, size,
		      m->len);
		m->used = 0;
		off = 0;
	}
	m->used = off + size;
	return m->base + off;
}

VIP_DESCRIPTOR *
h_desc1(void *at, void *buf, VIP_MEM_HANDLE mh, uint32_t len, bool send)
{
	VIP_DESCRIPTOR *d = at;

	memset(d, 0, sizeof(*d));
	d->CS.SegCount = 1;
	d->CS.Length = send ? len : 0;
	d->DS[0].Local.Data.Address = buf;
	d->DS[0].Local.Handle = mh;
	d->DS[0].Local.Length = len;
	return d;
}

void
h_msg_prep(struct h_mem *m, uint32_t len, unsigned i, struct h_msg *msg)
{
	h_mem_reset(m);
	msg->rbuf = h_mem_get(m, len, 8);
	msg->sbuf = h_mem_get(m, len, 8);
	memset(msg->rbuf, 0, len);
	memset(msg->sbuf, (int)(i & 0xff), len);
	msg->recv = h_desc1(h_mem_get(m, 64, VIP_DESCRIPTOR_ALIGNMENT), msg->rbuf, m->mh, len, false);
	msg->send = h_desc1(h_mem_get(m, 64, VIP_DESCRIPTOR_ALIGNMENT), msg->sbuf, m->mh, len, true);
}

/* ---- asynchronous error recorder ------------------------------------------- */

#define H_MAX_ERR_EVENTS 4096

static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t err_cond = PTHREAD_COND_INITIALIZER;
static struct h_err_event err_events[H_MAX_ERR_EVENTS];
static unsigned nb_err_events;

void
h_err_handler(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	pthread_mutex_lock(&err_lock);
	if (nb_err_events < H_MAX_ERR_EVENTS) {
		struct h_err_event *ev = &err_events[nb_err_events++];

		ev->nic = e->NicHandle;
		ev->vi = e->ViHandle;
		ev->code = e->ErrorCode;
		ev->resource = e->ResourceCode;
		ev->op = e->OpCode;
		ev->desc = e->DescriptorPtr;
		ev->at_ms = h_now_ms();
		ev->on_main_thread = pthread_equal(pthread_self(), main_thread);
	}
	pthread_cond_broadcast(&err_cond);
	pthread_mutex_unlock(&err_lock);
}

static bool
err_event_matches(const struct h_err_event *ev, VIP_ERROR_CODE code, VIP_VI_HANDLE vi)
{
	return ev->code == code && (vi == NULL || ev->vi == vi);
}

bool
h_err_take(VIP_ERROR_CODE code, VIP_VI_HANDLE vi, unsigned ms, struct h_err_event *out)
{
	uint64_t end = h_now_ms() + ms;

	pthread_mutex_lock(&err_lock);
	for (;;) {
		struct timespec ts;
		unsigned i;

		for (i = 0; i < nb_err_events; i++) {
			if (!err_event_matches(&err_events[i], code, vi))
				continue;
			if (out != NULL)
				*out = err_events[i];
			memmove(&err_events[i], &err_events[i + 1],
				(nb_err_events - i - 1) * sizeof(err_events[0]));
			nb_err_events--;
			pthread_mutex_unlock(&err_lock);
			return true;
		}
		if (h_now_ms() >= end)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&err_cond, &err_lock, &ts);
	}
	pthread_mutex_unlock(&err_lock);
	return false;
}

unsigned
h_err_count(VIP_ERROR_CODE code, VIP_VI_HANDLE vi)
{
	unsigned i, n = 0;

	pthread_mutex_lock(&err_lock);
	for (i = 0; i < nb_err_events; i++)
		n += err_event_matches(&err_events[i], code, vi);
	pthread_mutex_unlock(&err_lock);
	return n;
}

void
h_err_clear(void)
{
	pthread_mutex_lock(&err_lock);
	nb_err_events = 0;
	pthread_mutex_unlock(&err_lock);
}

/* ---- connections ------------------------------------------------------------ */

VIP_NET_ADDRESS *
h_addr(union h_net_addr *u, const uint8_t *mac, const char *disc)
{
	size_t dl = strlen(disc);
	size_t hl = mac != NULL ? 6 : 0;

	if (dl > H_DISC_ROOM) {
		CHECK(0, "test bug: a discriminator of %zu bytes (room for %u)", dl, H_DISC_ROOM);
		dl = H_DISC_ROOM;
	}
	memset(u, 0, sizeof(*u));
	u->a.HostAddressLen = (VIP_UINT16)hl;
	u->a.DiscriminatorLen = (VIP_UINT16)dl;
	if (mac != NULL)
		memcpy(u->a.HostAddress, mac, 6);
	memcpy(u->a.HostAddress + hl, disc, dl);
	return &u->a;
}

/* The NIC's own address: what a VI of it connects from (VipQueryNic does not
 * ask viad, it reads what VipOpenNic got). */
static VIP_RETURN
nic_mac(VIP_NIC_HANDLE nic, uint8_t mac[6])
{
	VIP_NIC_ATTRIBUTES na;
	VIP_RETURN rc = VipQueryNic(nic, &na);

	if (rc == VIP_SUCCESS)
		memcpy(mac, na.LocalNicAddress, 6);
	return rc;
}

/* The server side of h_connect_rc, on a thread of its own: VipConnectWait
 * blocks until the request arrives. */
struct acceptor {
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	union h_net_addr local;
	unsigned timeout_ms;
	VIP_RETURN rc;
};

static void *
acceptor_main(void *arg)
{
	struct acceptor *x = arg;
	union h_net_addr remote;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;

	x->rc = VipConnectWait(x->nic, &x->local.a, x->timeout_ms, &remote.a, &ra, &conn);
	if (x->rc == VIP_SUCCESS)
		x->rc = VipConnectAccept(conn, x->vi);
	return NULL;
}

VIP_RETURN
h_connect_rc(VIP_NIC_HANDLE cnic, VIP_VI_HANDLE cvi, VIP_NIC_HANDLE snic, VIP_VI_HANDLE svi,
	     const char *tag, unsigned timeout_ms, struct h_conn_rc *out)
{
	struct acceptor x = { .nic = snic, .vi = svi, .timeout_ms = timeout_ms };
	struct h_conn_rc res = { VIP_INVALID_PARAMETER, VIP_INVALID_PARAMETER, 0 };
	char cdisc[H_DISC_ROOM + 1], sdisc[H_DISC_ROOM + 1];
	union h_net_addr local, remote;
	uint8_t cmac[6], smac[6];
	VIP_VI_ATTRIBUTES ra;
	uint64_t t0 = h_now_ms();
	pthread_t t;

	/* without a request to answer, the server would wait out its timeout */
	if (cvi == NULL || svi == NULL)
		goto out;
	res.request = nic_mac(cnic, cmac);
	if (res.request == VIP_SUCCESS)
		res.request = nic_mac(snic, smac);
	if (res.request != VIP_SUCCESS) {
		res.accept = res.request;
		goto out;
	}
	snprintf(cdisc, sizeof(cdisc), "%s-c", tag);
	snprintf(sdisc, sizeof(sdisc), "%s-s", tag);
	h_addr(&x.local, smac, sdisc);
	if (pthread_create(&t, NULL, acceptor_main, &x) != 0) {
		res.request = res.accept = VIP_ERROR_RESOURCE;
		goto out;
	}
	/* a request that nobody waits for fails after viad's grace (VIA §4.1,
	 * viad.cm_nomatch_grace_ms); the acceptor thread may start late on a
	 * loaded machine: ask again, as a client racing its server must */
	do {
		uint64_t spent = h_now_ms() - t0;

		res.request = VipConnectRequest(cvi, h_addr(&local, cmac, cdisc),
						h_addr(&remote, smac, sdisc),
						spent < timeout_ms ? timeout_ms - spent : 1, &ra);
	} while (res.request == VIP_NO_MATCH && h_now_ms() - t0 < timeout_ms);
	pthread_join(t, NULL);
	res.accept = x.rc;
out:
	res.ms = h_now_ms() - t0;
	if (out != NULL)
		*out = res;
	return res.request != VIP_SUCCESS ? res.request : res.accept;
}

bool
h_connect(VIP_NIC_HANDLE cnic, VIP_VI_HANDLE cvi, VIP_NIC_HANDLE snic, VIP_VI_HANDLE svi,
	  const char *tag, unsigned timeout_ms)
{
	struct h_conn_rc r;

	if (cvi == NULL || svi == NULL)
		return false;
	h_connect_rc(cnic, cvi, snic, svi, tag, timeout_ms, &r);
	return CHECK(r.request == VIP_SUCCESS && r.accept == VIP_SUCCESS,
		     "connect '%s' (request %s, accept %s, %llu ms)", tag,
		     VipDpdkReturnString(r.request), VipDpdkReturnString(r.accept),
		     (unsigned long long)r.ms);
}

VIP_RETURN
h_peer_connect_rc(VIP_NIC_HANDLE xnic, VIP_VI_HANDLE x, VIP_NIC_HANDLE ynic, VIP_VI_HANDLE y,
		  const char *tag, unsigned timeout_ms)
{
	char dx[H_DISC_ROOM + 1], dy[H_DISC_ROOM + 1];
	union h_net_addr ax, ay;
	uint8_t xmac[6], ymac[6];
	VIP_VI_ATTRIBUTES ra;
	VIP_RETURN rc;

	if (x == NULL || y == NULL)
		return VIP_INVALID_PARAMETER;
	rc = nic_mac(xnic, xmac);
	if (rc == VIP_SUCCESS)
		rc = nic_mac(ynic, ymac);
	if (rc != VIP_SUCCESS)
		return rc;
	snprintf(dx, sizeof(dx), "%s-x", tag);
	snprintf(dy, sizeof(dy), "%s-y", tag);
	h_addr(&ax, xmac, dx);
	h_addr(&ay, ymac, dy);
	/* both requests are asynchronous: no thread needed */
	rc = VipConnectPeerRequest(x, &ax.a, &ay.a, timeout_ms);
	if (rc == VIP_SUCCESS)
		rc = VipConnectPeerRequest(y, &ay.a, &ax.a, timeout_ms);
	if (rc == VIP_SUCCESS)
		rc = VipConnectPeerWait(x, &ra);
	if (rc == VIP_SUCCESS)
		rc = VipConnectPeerWait(y, &ra);
	return rc;
}

bool
h_peer_connect(VIP_NIC_HANDLE xnic, VIP_VI_HANDLE x, VIP_NIC_HANDLE ynic, VIP_VI_HANDLE y,
	       const char *tag, unsigned timeout_ms)
{
	uint64_t t0 = h_now_ms();
	VIP_RETURN rc;

	if (x == NULL || y == NULL)
		return false;
	rc = h_peer_connect_rc(xnic, x, ynic, y, tag, timeout_ms);
	return CHECK(rc == VIP_SUCCESS, "connect '%s' peer-to-peer: %s (%llu ms)", tag,
		     VipDpdkReturnString(rc), (unsigned long long)(h_now_ms() - t0));
}

int
h_vi_state(VIP_VI_HANDLE vi)
{
	VIP_VI_STATE st;
	VIP_VI_ATTRIBUTES a;
	VIP_BOOLEAN se, re;

	if (VipQueryVi(vi, &st, &a, &se, &re) != VIP_SUCCESS)
		return -1;
	return (int)st;
}

const char *
h_state_name(int st)
{
	switch (st) {
	case VIP_STATE_IDLE:
		return "Idle";
	case VIP_STATE_CONNECTED:
		return "Connected";
	case VIP_STATE_CONNECT_PENDING:
		return "Pending Connect";
	case VIP_STATE_ERROR:
		return "Error";
	default:
		return "?";
	}
}

int
h_state_wait(VIP_VI_HANDLE vi, int want, unsigned ms)
{
	uint64_t end = h_now_ms() + ms;
	int st;

	/* VIPL has no call that blocks until a VI's state changes */
	while ((st = h_vi_state(vi)) != want && h_now_ms() < end)
		h_sleep_ms(2);
	return st;
}

VIP_DESCRIPTOR *
h_done_wait(VIP_VI_HANDLE vi, bool recv, unsigned ms)
{
	VIP_DESCRIPTOR *out = NULL;

	if ((recv ? VipRecvWait(vi, ms, &out) : VipSendWait(vi, ms, &out)) != VIP_SUCCESS)
		return NULL;
	return out;
}

bool
h_link_wait(VIP_NIC_HANDLE nic, unsigned ms)
{
	uint64_t end = h_now_ms() + ms;
	VIP_DPDK_PORT_INFO pi;

	do {
		if (VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_PORT, &pi) == VIP_SUCCESS &&
		    pi.LinkUp)
			return true;
		h_sleep_ms(20);
	} while (h_now_ms() < end);
	return false;
}

void
h_vi_drain(VIP_VI_HANDLE vi)
{
	VIP_DESCRIPTOR *d;

	if (vi == NULL)
		return;
	VipDisconnect(vi);
	while (VipSendDone(vi, &d) == VIP_SUCCESS || VipRecvDone(vi, &d) == VIP_SUCCESS)
		;
}

void
h_vi_drop(VIP_VI_HANDLE vi)
{
	uint64_t end = h_now_ms() + 2000;
	VIP_DESCRIPTOR *d;
	VIP_RETURN rc;

	if (vi == NULL)
		return;
	h_vi_drain(vi);
	/* a descriptor in flight may complete only now: VipDestroyVi refuses a
	 * VI with descriptors on its queues until each has come back */
	while ((rc = VipDestroyVi(vi)) != VIP_SUCCESS && h_now_ms() < end) {
		h_sleep_ms(5);
		while (VipSendDone(vi, &d) == VIP_SUCCESS || VipRecvDone(vi, &d) == VIP_SUCCESS)
			;
	}
	if (rc != VIP_SUCCESS)
		CHECK_RET(rc, VIP_SUCCESS,
			  "destroy a VI after VipDisconnect (every posted descriptor came back)");
}

void
h_pair_drain(VIP_VI_HANDLE a, VIP_VI_HANDLE b)
{
	h_vi_drain(a);
	h_vi_drain(b);
	h_err_clear();
}

void
h_pair_drop(VIP_VI_HANDLE a, VIP_VI_HANDLE b)
{
	h_vi_drop(a);
	h_vi_drop(b);
	h_err_clear();
}
