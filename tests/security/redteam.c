/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The red-team suite (issue 25; docs/design.md section 10, "Threat model"):
 * one class of attack per run, by an unprivileged user (uid 5202, in the
 * socket group, or 5203 outside it) with a client built from the library's
 * own sources and hooks that send viad any control message, any fds and
 * any placement (sec_hooks.h). Each attempt must be refused with a line in
 * viad's log, while another user (uid 5201) moves data throughout: Reliable
 * Delivery round trips over its registered heap memory, every byte
 * checked, with no stall longer than SEC_STALL_BOUND_MS.
 *
 * Classes (redteam VIAD CLASS HELPER):
 *   fds        fds of every type (eventfd, directory, /dev/zero, a pipe's
 *              write end, sockets, several at once, one on a request that
 *              takes none), a TCP socket lingering with unsent data, in a
 *              request and left in the socket at exit; a user outside the
 *              group cannot connect
 *   foreign    a forged /proc/PID/maps line (a long path splits its line)
 *              over a read-only mapping of a root-owned 0644 file; a
 *              read-only view of the attacker's own memfd
 *   sigbus     a hugetlb memfd as the share file, a truncatable file as a
 *              shared object, a hole punched in the session segment with
 *              the hugepage pool drained
 *   mappings   one user's sessions map window after window: another user
 *              still opens a NIC and registers memory
 *   hugepages  one user's sessions allocate hugepage memory: another
 *              user's new session still gets a hugepage segment
 *   forkexec   a child keeps the socket and the exec witness, the parent
 *              execs a set-user-ID program, the child registers that
 *              program's root-only SysV segment
 *
 * Usage: redteam PATH/TO/viad CLASS PATH/TO/sec_suid_helper (as root);
 * SEC_ATTACK=TEXT runs only the class's attacks whose name contains TEXT
 * (their log checks fail for the others).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sec.h"

#define VICTIM_LEN   (8192u + 123u)
#define VICTIM_WAIT  10000u

static struct viad_proc vd;
static struct sec_shared *sh;
static struct sec_ctx ctx;

/* ---- users ----------------------------------------------------------------------- */

/* Become @p uid, in the socket group if @p member, as a user's process is
 * (dumpable: its /proc/self/mem is its own). @return whether it did */
static bool
become(uid_t uid, bool member)
{
	gid_t groups[1] = { SEC_GID };

	return setgroups(member ? 1 : 0, groups) == 0 && setresgid(uid, uid, uid) == 0 &&
	       setresuid(uid, uid, uid) == 0 && prctl(PR_SET_DUMPABLE, 1) == 0;
}

/* Run @p fn(@p arg) as @p uid in a child. @return its pid, or -1 */
static pid_t
spawn_as(const char *prefix, uid_t uid, bool member, int (*fn)(const struct sec_ctx *))
{
	pid_t pid = fork();

	if (pid == 0) {
		h_set_child(prefix);
		if (!become(uid, member))
			_exit(SEC_SETUP);
		_exit(fn(&ctx));
	}
	return pid;
}

/* ---- the victim ---------------------------------------------------------------------- */

static uint8_t
pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static void
victim_fail(const char *what, VIP_RETURN rc)
{
	snprintf(sh->victim_error, sizeof(sh->victim_error), "%s: %s", what,
		 VipDpdkReturnString(rc));
	__atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
}

/* One round trip on @p a -> @p b, checked byte for byte. @return whether it went */
static bool
victim_round(VIP_VI_HANDLE a, VIP_VI_HANDLE b, uint8_t *m, VIP_MEM_HANDLE mh, uint64_t seq)
{
	uint8_t *sbuf = m + 8192, *rbuf = m + 32768;
	VIP_DESCRIPTOR *rd, *sd, *got;
	VIP_RETURN rc;
	size_t i;

	for (i = 0; i < VICTIM_LEN; i++)
		sbuf[i] = pattern(seq, i);
	memset(rbuf, 0, VICTIM_LEN);
	rd = h_desc1(m, rbuf, mh, VICTIM_LEN, false);
	sd = h_desc1(m + 512, sbuf, mh, VICTIM_LEN, true);
	if ((rc = VipPostRecv(b, rd, mh)) != VIP_SUCCESS || (rc = VipPostSend(a, sd, mh)) != VIP_SUCCESS) {
		victim_fail("post", rc);
		return false;
	}
	if ((rc = VipRecvWait(b, VICTIM_WAIT, &got)) != VIP_SUCCESS || got != rd) {
		victim_fail("VipRecvWait", rc);
		return false;
	}
	if ((rc = VipSendWait(a, VICTIM_WAIT, &got)) != VIP_SUCCESS || got != sd) {
		victim_fail("VipSendWait", rc);
		return false;
	}
	if ((rd->CS.Status & VIP_STATUS_ERROR_MASK) != 0 || rd->CS.Length != VICTIM_LEN) {
		snprintf(sh->victim_error, sizeof(sh->victim_error),
			 "message %" PRIu64 ": status %#x, %u bytes", seq, rd->CS.Status,
			 rd->CS.Length);
		__atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
		return false;
	}
	for (i = 0; i < VICTIM_LEN; i++) {
		if (rbuf[i] != pattern(seq, i)) {
			snprintf(sh->victim_error, sizeof(sh->victim_error),
				 "message %" PRIu64 ": byte %zu is %#x, not %#x", seq, i, rbuf[i],
				 pattern(seq, i));
			__atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
			return false;
		}
	}
	return true;
}

/* The victim: another user's Reliable Delivery traffic until told to stop. */
static int
victim_main(const struct sec_ctx *c)
{
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE a, b;
	VIP_NIC_HANDLE nic;
	VIP_MEM_HANDLE mh;
	VIP_RETURN rc;
	uint64_t seq = 0;
	uint8_t *m = aligned_alloc(4096, 65536);

	(void)c;
	if ((rc = VipOpenNic("via0", &nic)) != VIP_SUCCESS) {
		victim_fail("VipOpenNic", rc);
		return 1;
	}
	if ((rc = VipCreatePtag(nic, &pt)) != VIP_SUCCESS) {
		victim_fail("VipCreatePtag", rc);
		return 1;
	}
	ma.Ptag = pt;
	h_vi_attrs(&va, pt);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	if (m == NULL || (rc = VipRegisterMem(nic, m, 65536, &ma, &mh)) != VIP_SUCCESS ||
	    (rc = VipCreateVi(nic, &va, NULL, NULL, &a)) != VIP_SUCCESS ||
	    (rc = VipCreateVi(nic, &va, NULL, NULL, &b)) != VIP_SUCCESS ||
	    (rc = h_connect_rc(nic, a, nic, b, "victim", VICTIM_WAIT, NULL)) != VIP_SUCCESS) {
		victim_fail("setup", rc);
		return 1;
	}
	__atomic_store_n(&sh->last_ns, h_now_ns(), __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
		uint64_t now, gap;

		if (!victim_round(a, b, m, mh, ++seq))
			break;
		now = h_now_ns();
		gap = now - __atomic_load_n(&sh->last_ns, __ATOMIC_SEQ_CST);
		if (gap > __atomic_load_n(&sh->max_gap_ns, __ATOMIC_SEQ_CST))
			__atomic_store_n(&sh->max_gap_ns, gap, __ATOMIC_SEQ_CST);
		__atomic_store_n(&sh->last_ns, now, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&sh->messages, 1, __ATOMIC_SEQ_CST);
	}
	VipCloseNic(nic);
	return __atomic_load_n(&sh->errors, __ATOMIC_SEQ_CST) == 0 ? 0 : 1;
}

/* The victim's user opens a NIC, registers memory and allocates (after an
 * exhaustion attempt): @return 0 if each worked */
static int
victim_probe(const struct sec_ctx *c)
{
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_PROTECTION_HANDLE pt;
	VIP_NIC_HANDLE nic;
	VIP_MEM_HANDLE mh;
	void *heap = aligned_alloc(4096, 65536), *prov = NULL;
	VIP_RETURN rc;

	(void)c;
	if ((rc = VipOpenNic("via0", &nic)) != VIP_SUCCESS) {
		h_note("probe: VipOpenNic: %s", VipDpdkReturnString(rc));
		return 1;
	}
	if ((rc = VipCreatePtag(nic, &pt)) == VIP_SUCCESS) {
		ma.Ptag = pt;
		rc = VipRegisterMem(nic, heap, 65536, &ma, &mh);
	}
	if (rc == VIP_SUCCESS)
		rc = VipDpdkAllocMem(nic, 4u << 20, &prov);
	if (rc != VIP_SUCCESS)
		h_note("probe: register or allocate: %s", VipDpdkReturnString(rc));
	VipCloseNic(nic);
	return rc == VIP_SUCCESS ? 0 : 2;
}

static pid_t victim_pid;

static bool
victim_start(void)
{
	uint64_t t0 = h_now_ms();

	victim_pid = spawn_as("victim", VICTIM_UID, true, victim_main);
	while (__atomic_load_n(&sh->messages, __ATOMIC_SEQ_CST) < 20 && h_now_ms() - t0 < 20000 &&
	       __atomic_load_n(&sh->errors, __ATOMIC_SEQ_CST) == 0)
		h_sleep_ms(10);
	return CHECK(sh->messages >= 20, "the victim (uid %u) moves data (%" PRIu64 " messages%s%s)",
		     VICTIM_UID, sh->messages, sh->errors ? "; " : "", sh->victim_error);
}

static void
victim_stop(void)
{
	int st;

	__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
	CHECK(waitpid(victim_pid, &st, 0) == victim_pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the victim's %" PRIu64 " messages all arrived intact (%s)", sh->messages,
	      sh->errors ? sh->victim_error : "no error");
}

/* ---- running an attack ------------------------------------------------------------- */

/* Wait for @p pid: its exit, or its stop (an attacker holding what it took).
 * @return the wait status, -1 after a timeout (it is killed) */
static int
wait_child(pid_t pid, unsigned timeout_ms)
{
	uint64_t t0 = h_now_ms();
	int st;

	while (h_now_ms() - t0 < timeout_ms) {
		pid_t r = waitpid(pid, &st, WNOHANG | WUNTRACED);

		if (r == pid)
			return st;
		h_sleep_ms(20);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static const char *
verdict_name(int v)
{
	switch (v) {
	case SEC_REFUSED: return "refused";
	case SEC_ACCEPTED: return "ACCEPTED by viad";
	case SEC_SETUP: return "could not be set up";
	case SEC_LOST: return "viad went away";
	default: return "died";
	}
}

/* The victim kept moving data through the attack that began at @p m0. */
static void
victim_flowed(const char *attack, uint64_t m0)
{
	uint64_t t0 = h_now_ms(), gap, since;

	/* a few more round trips after it: traffic goes on */
	while (sh->messages < m0 + 10 && h_now_ms() - t0 < SEC_STALL_BOUND_MS + VICTIM_WAIT)
		h_sleep_ms(10);
	gap = __atomic_load_n(&sh->max_gap_ns, __ATOMIC_SEQ_CST);
	since = h_now_ns() - __atomic_load_n(&sh->last_ns, __ATOMIC_SEQ_CST);
	if (since > gap)
		gap = since;
	CHECK(sh->messages >= m0 + 10 && sh->errors == 0 && gap < SEC_STALL_BOUND_MS * 1000000ull,
	      "%s: the victim's traffic went on (%" PRIu64 " messages, longest stall %" PRIu64
	      " ms, bound %u ms%s%s)", attack, sh->messages - m0, gap / 1000000,
	      SEC_STALL_BOUND_MS, sh->errors ? "; " : "", sh->errors ? sh->victim_error : "");
}

/*
 * Run @p fn as the attacker @p uid. An attacker that stops itself (SIGSTOP)
 * holds what it took: @p while_held runs then, and the attacker is killed.
 * Checks the verdict, that viad lives and that the victim's traffic flowed.
 */
static void
attack(const char *name, sec_attack_fn fn, uid_t uid, bool member, void (*while_held)(void))
{
	uint64_t m0 = __atomic_load_n(&sh->messages, __ATOMIC_SEQ_CST);
	const char *only = getenv("SEC_ATTACK");
	pid_t pid;
	int st, v;

	if (only != NULL && strstr(name, only) == NULL) {
		h_note("attack: %s: skipped (SEC_ATTACK=%s)", name, only);
		return;
	}
	h_note("attack: %s (uid %u, %s the group)", name, uid, member ? "in" : "not in");
	__atomic_store_n(&sh->max_gap_ns, 0, __ATOMIC_SEQ_CST);
	sh->verdict = SEC_SETUP;
	pid = spawn_as("attacker", uid, member, fn);
	st = wait_child(pid, 180000);
	if (st != -1 && WIFSTOPPED(st)) {
		v = (int)sh->verdict;
		if (while_held != NULL)
			while_held();
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	} else {
		v = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	}
	CHECK(v == SEC_REFUSED, "%s: %s", name, verdict_name(v));
	CHECK(viad_alive(&vd), "%s: viad is alive", name);
	victim_flowed(name, m0);
}

static bool
logged(const char *needle)
{
	return viad_log_contains(&vd, needle);
}

/* ---- the classes ------------------------------------------------------------------- */

static void
class_fds(void)
{
	int fds0;

	h_sleep_ms(200);
	fds0 = viad_fd_count(&vd);
	attack("fds of every type", attack_fd_types, ATTACKER_UID, true, NULL);
	CHECK(logged("anon_inode:[eventfd]") && logged("a directory") && logged("a character device") &&
	      logged("a pipe open for writing") && logged("a socket"),
	      "viad names each refused fd in its log");
	CHECK(logged("with a request that takes none"), "an fd on a request that takes none is logged");
	CHECK(logged("fds in one message"), "several fds in one message are logged");
	attack("a lingering TCP socket in a request", attack_linger_request, ATTACKER_UID, true,
	       NULL);
	attack("a lingering TCP socket left in the socket at exit", attack_linger_at_exit,
	       ATTACKER_UID, true, NULL);
	attack("a user out of the group", attack_outsider, OUTSIDER_UID, false, NULL);
	/* every fd a client passed is closed once its session ends */
	{
		uint64_t t0 = h_now_ms();
		int n;

		while ((n = viad_fd_count(&vd)) > fds0 && h_now_ms() - t0 < H_TIMEOUT_MS)
			h_sleep_ms(50);
		CHECK(n <= fds0, "viad holds no fd of the attackers (%d open, %d before)", n, fds0);
	}
}

static void
class_foreign(void)
{
	char buf[8192], want[8192];
	int fd;

	attack("a forged maps line over a root-owned read-only file", attack_forged_maps,
	       ATTACKER_UID, true, NULL);
	memset(want, 'R', sizeof(want));
	fd = open(ctx.root_file, O_RDONLY);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) &&
	      memcmp(buf, want, sizeof(buf)) == 0, "the root-owned file is unchanged");
	if (fd >= 0)
		close(fd);
	CHECK(logged("not shared memory"), "viad logs the refused file");
	attack("a read-only view of a memfd", attack_read_only_object, ATTACKER_UID, true, NULL);
}

static void
class_sigbus(void)
{
	attack("a hugetlb memfd as the share file", attack_hugetlb_share_file, ATTACKER_UID, true,
	       NULL);
	CHECK(logged("hugetlbfs"), "viad logs the refused hugetlb share file");
	attack("a truncatable file as a shared object", attack_truncated_file, ATTACKER_UID, true,
	       NULL);
	CHECK(logged("not shared memory"), "viad logs the refused file");
	attack("a hole punched in the session segment, hugepage pool drained",
	       attack_punched_segment, ATTACKER_UID, true, NULL);
	CHECK(logged("bus error"), "viad logs the bus error and ends the session");
}

static void
probe_victim_user(void)
{
	pid_t pid = spawn_as("probe", VICTIM_UID, true, victim_probe);
	int st = wait_child(pid, 60000);

	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "while the attacker holds its sessions, uid %u opens a NIC, registers memory "
	      "and allocates", VICTIM_UID);
}

static void
class_mappings(void)
{
	attack("mapping exhaustion", attack_mappings, ATTACKER_UID, true, probe_victim_user);
	h_note("the attacker got %" PRIu64 " regions in distinct windows", sh->taken);
	CHECK(logged("limits.user_max_mappings"), "viad logs the user's mapping limit");
}

static pid_t probe_pid;

static void
probe_hugepage_segment(void)
{
	probe_pid = spawn_as("probe", VICTIM_UID, true, victim_probe);
	CHECK(wait_child(probe_pid, 60000) == 0, "uid %u opens a NIC while the attacker holds "
	      "its hugepage memory", VICTIM_UID);
}

static void
class_hugepages(void)
{
	char line[96];

	attack("hugepage exhaustion", attack_hugepages, ATTACKER_UID, true, probe_hugepage_segment);
	h_note("the attacker got %" PRIu64 " MiB on hugepages", sh->taken >> 20);
	CHECK(logged("limits.user_max_hugepage_bytes"), "viad logs the user's hugepage limit");
	snprintf(line, sizeof(line), "pid %d uid %u opened via0 (hugepage segment", (int)probe_pid,
		 VICTIM_UID);
	CHECK(logged(line), "the other user's new session is on hugepages");
}

static void
class_forkexec(void)
{
	attack("fork, then the parent execs a set-user-ID program", attack_fork_exec,
	       ATTACKER_UID, true, NULL);
	CHECK(logged("the program that opened the session is gone"),
	      "viad logs that the session's program is gone");
}

static const struct {
	const char *name;
	const char *const *sets;
	void (*run)(void);
} classes[] = {
	{ "fds", NULL, class_fds },
	{ "foreign", NULL, class_foreign },
	{ "sigbus", NULL, class_sigbus },
	{ "mappings", NULL, class_mappings },
	{ "hugepages", NULL, class_hugepages },
	{ "forkexec", NULL, class_forkexec },
};

/* A copy of the helper owned by root, set-user-ID, where the attacker reaches it. */
static bool
install_suid_helper(const char *from, char *to, size_t size)
{
	char cmd[1024];

	snprintf(to, size, "%s/sec_suid_helper", h_tmpdir());
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	return system(cmd) == 0 && chown(to, 0, 0) == 0 && chmod(to, 04755) == 0;
}

static bool
make_root_file(char *path, size_t size)
{
	char buf[8192];
	int fd;
	bool ok;

	snprintf(path, size, "%s/root-owned.conf", h_tmpdir());
	memset(buf, 'R', sizeof(buf));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok = fd >= 0 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) &&
	     fchmod(fd, 0644) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

int
main(int argc, char **argv)
{
	static const char *const base_sets[] = { "viad.socket_group=4244", NULL };
	char helper[512], root_file[512], own_dir[512];
	unsigned i;

	h_init(argc, argv, 900);
	if (argc < 4) {
		fprintf(stderr, "usage: %s VIAD CLASS SUID_HELPER\n", argv[0]);
		return 2;
	}
	if (geteuid() != 0) {
		h_note("SKIP: needs root (it takes other users' ids)");
		return 77;
	}
	for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		if (strcmp(classes[i].name, argv[2]) == 0)
			break;
	}
	if (i == sizeof(classes) / sizeof(classes[0])) {
		fprintf(stderr, "%s: no class '%s'\n", argv[0], argv[2]);
		return 2;
	}
	CHECK(chmod(h_tmpdir(), 0755) == 0, "the test directory is 0755");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!CHECK(sh != MAP_FAILED, "shared state"))
		return h_finish();
	memset(sh, 0, sizeof(*sh));
	snprintf(own_dir, sizeof(own_dir), "%s/attacker", h_tmpdir());
	ctx = (struct sec_ctx){ .tmpdir = h_tmpdir(), .root_file = root_file,
				.own_dir = own_dir, .suid_helper = helper, .sh = sh };
	if (!CHECK(make_root_file(root_file, sizeof(root_file)), "a root-owned 0644 file") ||
	    !CHECK(mkdir(own_dir, 0700) == 0 && chown(own_dir, ATTACKER_UID, ATTACKER_UID) == 0,
		   "the attacker's directory") ||
	    !CHECK(install_suid_helper(argv[3], helper, sizeof(helper)),
		   "the set-user-ID helper installed"))
		return h_finish();
	if (viad_start(&vd, argv[2], classes[i].sets != NULL ? classes[i].sets : base_sets) == 0) {
		ctx.sock = vd.sock;
		if (victim_start()) {
			classes[i].run();
			victim_stop();
		}
		viad_stop(&vd);
	}
	/* a set-user-ID root program is not left behind, whatever happened */
	unlink(helper);
	return h_finish();
}
