/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The attacker (redteam.c runs each function as an unprivileged user): a
 * VIPL client built from the library's sources whose hooks (sec_hooks.h)
 * send viad what the library never would. Each function returns its
 * verdict (sec.h): SEC_REFUSED when viad refused every attempt.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sec.h"
#include "sec_hooks.h"
#include "via_ctl.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define HUGEPAGE (2 * MiB)

/* ---- a session with two connected VIs ------------------------------------------------ */

/* A session of the library: a tag, two connected Reliable Delivery VIs, and
 * provider memory for descriptors and the bytes sent. */
struct atk {
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_HANDLE a, b;
	uint8_t *mem;
	VIP_MEM_HANDLE mh;
};

static bool
atk_open(struct atk *k)
{
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va;
	VIP_RETURN rc;

	memset(k, 0, sizeof(*k));
	if ((rc = VipOpenNic("via0", &k->nic)) != VIP_SUCCESS ||
	    (rc = VipCreatePtag(k->nic, &k->pt)) != VIP_SUCCESS) {
		h_note("open a session: %s", VipDpdkReturnString(rc));
		return false;
	}
	ma.Ptag = k->pt;
	ma.EnableRdmaWrite = VIP_TRUE;
	h_vi_attrs(&va, k->pt);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.EnableRdmaWrite = VIP_TRUE;
	if ((rc = VipDpdkAllocMem(k->nic, 65536, (void **)&k->mem)) != VIP_SUCCESS ||
	    (rc = VipRegisterMem(k->nic, k->mem, 65536, &ma, &k->mh)) != VIP_SUCCESS ||
	    (rc = VipCreateVi(k->nic, &va, NULL, NULL, &k->a)) != VIP_SUCCESS ||
	    (rc = VipCreateVi(k->nic, &va, NULL, NULL, &k->b)) != VIP_SUCCESS ||
	    (rc = h_connect_rc(k->nic, k->a, k->nic, k->b, "attacker", 5000, NULL)) !=
		    VIP_SUCCESS) {
		h_note("set up the attacker's VIs: %s", VipDpdkReturnString(rc));
		return false;
	}
	return true;
}

/*
 * Register [@p addr, +@p len) of @p k's session as the library never would:
 * @p placement as given, @p obj_fd passed along (-1: none), @p shmid and
 * @p flags as given. @return viad's status and *@p handle
 */
static int
atk_register(struct atk *k, uint64_t addr, uint64_t len, uint32_t placement, int obj_fd,
	     int32_t shmid, uint32_t flags, uint32_t *handle)
{
	struct via_ctl_mem_register_req q;
	struct via_ctl_id r = { 0 };
	int rc;

	memset(&q, 0, sizeof(q));
	q.addr = addr;
	q.len = len;
	q.attr.ptag = (uint32_t)(uintptr_t)k->pt;
	q.attr.rdma_write = 1;
	q.placement = placement;
	q.shmid = shmid;
	q.flags = flags;
	rc = sec_call(k->nic, VIA_CTL_MEM_REGISTER, &q, obj_fd, &r, NULL);
	*handle = r.id;
	return rc;
}

/* Move @p len bytes of @p fill into [@p dst, +@p len) of region @p dmh, a
 * Send from VI a to a receive of VI b. @return the receive's status, or
 * UINT32_MAX if it never completed */
static uint32_t
atk_move(struct atk *k, void *dst, uint32_t dmh, uint32_t len, uint8_t fill)
{
	VIP_DESCRIPTOR *rd, *sd, *got;

	memset(k->mem + 4096, fill, len);
	rd = h_desc1(k->mem, dst, dmh, len, false);
	sd = h_desc1(k->mem + 512, k->mem + 4096, k->mh, len, true);
	if (VipPostRecv(k->b, rd, k->mh) != VIP_SUCCESS || VipPostSend(k->a, sd, k->mh) != VIP_SUCCESS)
		return UINT32_MAX;
	VipSendWait(k->a, 5000, &got);
	if (VipRecvWait(k->b, 5000, &got) != VIP_SUCCESS)
		return UINT32_MAX;
	return rd->CS.Status;
}

/* ---- things an attacker makes -------------------------------------------------------- */

/* A memfd of @p len bytes, sealed against shrinking as viad wants them. */
static int
sealed_memfd(const char *name, uint64_t len, unsigned flags, unsigned seals)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);

	if (fd >= 0 && (ftruncate(fd, (off_t)len) != 0 || fcntl(fd, F_ADD_SEALS, seals) != 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* What /sys says of the 2 MiB pool: free pages not promised to anyone. */
static long
free_hugepages(void)
{
	static const char *const files[2] = {
		"/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
		"/sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages",
	};
	long v[2] = { 0, 0 };

	for (unsigned i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "re");

		if (f == NULL || fscanf(f, "%ld", &v[i]) != 1)
			v[i] = 0;
		if (f != NULL)
			fclose(f);
	}
	return v[0] - v[1];
}

/* Take every free 2 MiB hugepage, as any user can (a hugetlb memfd), until
 * the process exits. @return whether the pool is empty now */
static bool
drain_hugepages(void)
{
	long n = free_hugepages();

	while (n > 0) {
		int fd = memfd_create("atk-drain", MFD_CLOEXEC | MFD_HUGETLB);
		void *p = MAP_FAILED;

		if (fd >= 0 && ftruncate(fd, n * (off_t)HUGEPAGE) == 0)
			p = mmap(NULL, (size_t)n * HUGEPAGE, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_POPULATE, fd, 0);
		if (fd >= 0)
			close(fd);
		if (p == MAP_FAILED) {
			n--;   /* taken meanwhile: try with fewer */
			continue;
		}
		n = free_hugepages();
	}
	h_note("hugepage pool drained: %ld free", free_hugepages());
	return free_hugepages() <= 0;
}

/* A TCP connection on the loopback with unsent data and SO_LINGER of 30 s:
 * its last close waits while the peer (*@p peer, which never reads) stays.
 * @return the lingering socket, or -1 */
static int
lingering_socket(int *peer)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { .l_onoff = 1, .l_linger = 30 };
	socklen_t alen = sizeof(a);
	int small = 4096, l, s, one = 1;
	char chunk[65536];

	memset(chunk, 'L', sizeof(chunk));
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || s < 0 || setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) != 0 ||
	    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) != 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) != 0 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    (*peer = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return -1;
	close(l);
	setsockopt(s, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof(one));
	fcntl(s, F_SETFL, O_NONBLOCK);
	while (send(s, chunk, sizeof(chunk), MSG_NOSIGNAL) > 0)
		;
	setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	return s;
}

/* A raw connection to viad with an open session; *@p seg gets the segment's fd. */
static int
raw_session(const struct sec_ctx *c, int *seg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct via_ctl_open_req q = { .abi_version = VIA_ABI_VERSION };
	uint8_t body[VIA_CTL_BODY_MAX];
	struct via_ctl_hdr h;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	*seg = -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->sock);
	strcpy(q.nic_name, "via0");
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    sec_send_fds(s, VIA_CTL_OPEN, 1, &q, NULL, 0, 0) != 0 ||
	    via_ctl_recv(s, &h, body, 1, seg) != 0 || h.status != 0) {
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* One request on a raw connection; the reply's status, its body in @p rep. */
static int
raw_call(int s, unsigned op, uint32_t seq, const void *req, void *rep)
{
	uint8_t body[VIA_CTL_BODY_MAX];
	struct via_ctl_hdr h;
	int rc = sec_send_fds(s, op, seq, req, NULL, 0, 0);

	if (rc == 0)
		rc = via_ctl_recv(s, &h, body, 1, NULL);
	if (rc != 0)
		return rc;
	if (rep != NULL)
		memcpy(rep, body, h.len);
	return h.status;
}

/*
 * A mapping at @p at whose line of /proc/self/maps a reader with 512-byte
 * lines (fgets) takes for two: the second, chosen here, says
 * "LO-HI rw-s 00000000 MAJ:MIN INODE /SYSV00000000" for [@p lo, @p hi) of
 * the file @p st names. The path of the mapped file, longer than a line,
 * ends with that text. @return whether the line reads so
 */
static bool
forge_maps_line(const struct sec_ctx *c, uintptr_t at, uintptr_t lo, uintptr_t hi,
		const struct stat *st, char *dir, size_t dir_size)
{
	/* maps pads what precedes the path to 73 columns (64-bit addresses) */
	const size_t first = 511 - 73;
	char forged[160], path[4096], line[8192];
	size_t n;
	FILE *f;
	int fd;
	bool ok = false;

	snprintf(forged, sizeof(forged), "%" PRIxPTR "-%" PRIxPTR " rw-s 00000000 %02x:%02x %lu ",
		 lo, hi, major(st->st_dev), minor(st->st_dev), (unsigned long)st->st_ino);
	snprintf(dir, dir_size, "%s/forge-XXXXXX", c->own_dir);
	if (mkdtemp(dir) == NULL)
		return false;
	/* directories of 'x' up to where the forged line starts */
	snprintf(path, sizeof(path), "%s", dir);
	while ((n = strlen(path)) < first - 1) {
		size_t take = first - 1 - n - 1;

		if (take > 200)
			take = 200;
		if (take == 0) {     /* one byte short: lengthen the last name */
			memmove(path + n, "x", 2);
			continue;
		}
		path[n] = '/';
		memset(path + n + 1, 'x', take);
		path[n + 1 + take] = '\0';
		if (strlen(path) < first - 1 && mkdir(path, 0700) != 0 && errno != EEXIST)
			return false;
	}
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return false;
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", forged);
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return false;
	strncat(path, "/SYSV00000000", sizeof(path) - strlen(path) - 1);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0 ||
	    mmap((void *)at, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0) != (void *)at)
		return false;
	close(fd);
	f = fopen("/proc/self/maps", "re");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strtoull(line, NULL, 16) == at) {
			ok = strlen(line) > 511 && strncmp(line + 511, forged, strlen(forged)) == 0;
			break;
		}
	}
	if (f != NULL)
		fclose(f);
	return ok;
}

/* ---- class fds ---------------------------------------------------------------------- */

int
attack_fd_types(const struct sec_ctx *c)
{
	struct via_ctl_client_fd_req q = { 0 };
	VIP_NIC_HANDLE nic;
	VIP_DPDK_COUNTERS counters;
	int pipefd[2], sv[2], fds[8], rc, verdict = SEC_REFUSED;
	struct {
		const char *what;
		uint32_t kind;
		int fd;
	} cases[5];
	unsigned i;

	if (VipOpenNic("via0", &nic) != VIP_SUCCESS || pipe2(pipefd, O_CLOEXEC) != 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return SEC_SETUP;
	cases[0] = (typeof(cases[0])){ "an eventfd as the share file", VIA_CTL_FD_SHARE_FILE,
				       eventfd(0, EFD_CLOEXEC) };
	cases[1] = (typeof(cases[0])){ "a directory as /proc/self/mem", VIA_CTL_FD_PROC_MEM,
				       open(c->tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
	cases[2] = (typeof(cases[0])){ "/dev/zero as the share file", VIA_CTL_FD_SHARE_FILE,
				       open("/dev/zero", O_RDWR | O_CLOEXEC) };
	cases[3] = (typeof(cases[0])){ "a pipe's write end as the exec witness",
				       VIA_CTL_FD_EXEC_WITNESS, pipefd[1] };
	cases[4] = (typeof(cases[0])){ "a Unix socket as the share file", VIA_CTL_FD_SHARE_FILE,
				       sv[0] };
	for (i = 0; i < 5; i++) {
		q.kind = cases[i].kind;
		rc = sec_call(nic, VIA_CTL_CLIENT_FD, &q, cases[i].fd, NULL, NULL);
		h_note("%s: %s", cases[i].what, rc == 0 ? "TAKEN" : strerror(-rc));
		if (rc == 0 || rc == -ECONNRESET)
			verdict = SEC_ACCEPTED;
	}
	/* an fd with a request that takes none */
	fds[0] = sealed_memfd("atk", 4096, 0, F_SEAL_SHRINK);
	rc = sec_call(nic, VIA_CTL_SMI_COUNTERS, NULL, fds[0], &counters, NULL);
	h_note("a memfd with SMI_COUNTERS: %s", rc == 0 ? "TAKEN" : strerror(-rc));
	if (rc == 0 || rc == -ECONNRESET)
		verdict = SEC_ACCEPTED;
	/* eight share files at once */
	for (i = 1; i < 8; i++)
		fds[i] = sealed_memfd("atk", VIA_SHARE_FILE_SIZE, 0,
				      F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	close(fds[0]);
	fds[0] = sealed_memfd("atk", VIA_SHARE_FILE_SIZE, 0, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	q.kind = VIA_CTL_FD_SHARE_FILE;
	rc = sec_send_fds(sec_sock(nic), VIA_CTL_CLIENT_FD, 999, &q, fds, 8, 0);
	rc = rc == 0 ? sec_recv(sec_sock(nic), 10000) : rc;
	h_note("eight share files in one message: %s", rc == 0 ? "TAKEN" : strerror(-rc));
	if (rc == 0 || rc == -ECONNRESET)
		verdict = SEC_ACCEPTED;
	VipCloseNic(nic);
	return verdict;
}

int
attack_linger_request(const struct sec_ctx *c)
{
	struct via_ctl_client_fd_req q = { .kind = VIA_CTL_FD_PROC_MEM };
	VIP_NIC_HANDLE nic;
	int peer, s, rc;

	(void)c;
	s = lingering_socket(&peer);
	if (s < 0 || VipOpenNic("via0", &nic) != VIP_SUCCESS)
		return SEC_SETUP;
	/* viad's last close of it would wait 30 s while the peer does not read */
	rc = sec_send_fds(sec_sock(nic), VIA_CTL_CLIENT_FD, 999, &q, &s, 1, 0);
	close(s);
	rc = rc == 0 ? sec_recv(sec_sock(nic), 8000) : rc;
	h_note("a lingering TCP socket as /proc/self/mem: %s",
	       rc == 0 ? "TAKEN" : strerror(-rc));
	/* the peer stays a while: a viad that waits in the close waits this long */
	h_sleep_ms(8000);
	close(peer);
	VipCloseNic(nic);
	return rc == 0 || rc == -ETIMEDOUT ? SEC_ACCEPTED : SEC_REFUSED;
}

int
attack_linger_at_exit(const struct sec_ctx *c)
{
	struct via_ctl_client_fd_req q = { .kind = VIA_CTL_FD_SHARE_FILE };
	int peer, s, seg, ls;
	pid_t holder;

	ls = lingering_socket(&peer);
	s = raw_session(c, &seg);
	if (ls < 0 || s < 0)
		return SEC_SETUP;
	/* the first 10 bytes of a request, with the socket: viad holds it for
	 * the rest, which never comes; the program exits */
	if (sec_send_fds(s, VIA_CTL_CLIENT_FD, 2, &q, &ls, 1, 10) != 0)
		return SEC_SETUP;
	close(ls);
	holder = fork();
	if (holder == 0) {
		/* keeps the peer, not reading, after the attacker is gone */
		close(s);
		h_sleep_ms(8000);
		_exit(0);
	}
	h_sleep_ms(200);
	return SEC_REFUSED;
}

int
attack_outsider(const struct sec_ctx *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	VIP_NIC_HANDLE nic;
	VIP_RETURN rc = VipOpenNic("via0", &nic);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->sock);
	err = connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
	h_note("VipOpenNic: %s; connect: %s", VipDpdkReturnString(rc), strerror(err));
	return rc != VIP_SUCCESS && err == EACCES ? SEC_REFUSED : SEC_ACCEPTED;
}

/* ---- class foreign ------------------------------------------------------------------ */

#define FORGE_AT     UINT64_C(0x6d0000000000)
#define FORGE_TARGET UINT64_C(0x6d0000100000)

int
attack_forged_maps(const struct sec_ctx *c)
{
	char dir[512];
	struct atk k;
	struct stat st;
	uint32_t mh, status;
	int fd = open(c->root_file, O_RDONLY | O_CLOEXEC), rc, verdict = SEC_REFUSED;

	if (fd < 0 || fstat(fd, &st) != 0 ||
	    mmap((void *)FORGE_TARGET, 8192, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0) !=
		    (void *)FORGE_TARGET)
		return SEC_SETUP;
	if (!forge_maps_line(c, FORGE_AT, FORGE_TARGET, FORGE_TARGET + 8192, &st, dir,
			     sizeof(dir))) {
		h_note("the forged maps line does not read as planned");
		return SEC_SETUP;
	}
	h_note("maps says the root-owned file's read-only mapping is \"rw-s /SYSV\" (forged)");
	if (!atk_open(&k))
		return SEC_SETUP;
	/* the file as a shared object, with the fd the user may have: read-only */
	rc = atk_register(&k, FORGE_TARGET, 8192, VIA_CTL_MEM_OBJECT_FD, fd, 0, 0, &mh);
	h_note("the root-owned file as a shared object: %s", rc == 0 ? "TAKEN" : strerror(-rc));
	if (rc == 0) {
		status = atk_move(&k, (void *)FORGE_TARGET, mh, 4096, 'P');
		h_note("a receive into it: status %#x", status);
		if (status != UINT32_MAX && !(status & VIP_STATUS_ERROR_MASK))
			verdict = SEC_ACCEPTED;
	}
	/* copied, claiming the pages are writable: the program's own rights
	 * through its /proc/self/mem, which cannot write a read-only shared
	 * mapping */
	if (verdict == SEC_REFUSED && atk_open(&k)) {
		rc = atk_register(&k, FORGE_TARGET, 8192, VIA_CTL_MEM_COPIED, -1, 0, 0, &mh);
		status = rc == 0 ? atk_move(&k, (void *)FORGE_TARGET, mh, 4096, 'C') : 0;
		h_note("copied, claimed writable: register %s, a receive into it: status %#x",
		       rc == 0 ? "taken" : strerror(-rc), status);
		if (rc == 0 && status != UINT32_MAX && !(status & VIP_STATUS_ERROR_MASK))
			verdict = SEC_ACCEPTED;
	}
	return verdict;
}

#define RO_OBJECT UINT64_C(0x6d0000200000)

int
attack_read_only_object(const struct sec_ctx *c)
{
	char path[64], byte = 0;
	struct atk k;
	uint32_t mh, status;
	int fd = sealed_memfd("atk-ro", 65536, 0, F_SEAL_SHRINK), ro, rc;

	(void)c;
	if (fd < 0 || pwrite(fd, "M", 1, 0) != 1 || !atk_open(&k))
		return SEC_SETUP;
	/* the same memfd, opened again for reading only, mapped read-only */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro < 0 || mmap((void *)RO_OBJECT, 65536, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, ro,
			   0) != (void *)RO_OBJECT)
		return SEC_SETUP;
	rc = atk_register(&k, RO_OBJECT, 65536, VIA_CTL_MEM_OBJECT_FD, ro, 0, 0, &mh);
	status = rc == 0 ? atk_move(&k, (void *)RO_OBJECT, mh, 4096, 'W') : 0;
	h_note("a read-only memfd: register %s, a receive into it: status %#x",
	       rc == 0 ? "taken" : strerror(-rc), status);
	if (pread(fd, &byte, 1, 0) != 1 || byte != 'M' ||
	    (rc == 0 && status != UINT32_MAX && !(status & VIP_STATUS_ERROR_MASK)))
		return SEC_ACCEPTED;
	return SEC_REFUSED;
}

/* ---- class sigbus ------------------------------------------------------------------- */

#define IN_PLACE_ADDR UINT64_C(0x6c0000000000)

int
attack_hugetlb_share_file(const struct sec_ctx *c)
{
	struct via_ctl_client_fd_req q = { .kind = VIA_CTL_FD_SHARE_FILE };
	struct atk k;
	uint32_t mh, status;
	int fd, rc;

	(void)c;
	if (!atk_open(&k) || !drain_hugepages())
		return SEC_SETUP;
	/* sealed, the share file's size: as a share file should be, on hugetlbfs */
	fd = sealed_memfd("atk-huge", VIA_SHARE_FILE_SIZE, MFD_HUGETLB,
			  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (fd < 0)
		return SEC_SETUP;
	rc = sec_call(k.nic, VIA_CTL_CLIENT_FD, &q, fd, NULL, NULL);
	h_note("a hugetlb memfd as the share file: %s", rc == 0 ? "TAKEN" : strerror(-rc));
	if (rc != 0)
		return SEC_REFUSED;
	/* pages viad would map from it with no hugepage left to fault in */
	rc = atk_register(&k, IN_PLACE_ADDR, 8192, VIA_CTL_MEM_IN_PLACE, -1, 0, 0, &mh);
	status = rc == 0 ? atk_move(&k, (void *)IN_PLACE_ADDR, mh, 4096, 'H') : 0;
	h_note("in place in it: register %s, a receive: status %#x",
	       rc == 0 ? "taken" : strerror(-rc), status);
	return status == UINT32_MAX && sec_call(k.nic, VIA_CTL_SMI_COUNTERS, NULL, -1, NULL, NULL) ==
							  -ECONNRESET ? SEC_LOST : SEC_ACCEPTED;
}

#define OWN_AT     UINT64_C(0x6b0000000000)
#define OWN_TARGET UINT64_C(0x6b0000100000)

int
attack_truncated_file(const struct sec_ctx *c)
{
	char path[512], dir[512];
	struct atk k;
	struct stat st;
	uint32_t mh, status;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/own-XXXXXX", c->own_dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 8192) != 0 || fstat(fd, &st) != 0 ||
	    mmap((void *)OWN_TARGET, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
		 fd, 0) != (void *)OWN_TARGET)
		return SEC_SETUP;
	unlink(path);
	if (!forge_maps_line(c, OWN_AT, OWN_TARGET, OWN_TARGET + 8192, &st, dir, sizeof(dir)) ||
	    !atk_open(&k))
		return SEC_SETUP;
	rc = atk_register(&k, OWN_TARGET, 8192, VIA_CTL_MEM_OBJECT_FD, fd, 0, 0, &mh);
	h_note("the user's own ext4 file as a shared object: %s",
	       rc == 0 ? "TAKEN" : strerror(-rc));
	if (rc != 0)
		return SEC_REFUSED;
	/* gone under viad's mapping */
	if (ftruncate(fd, 0) != 0)
		return SEC_SETUP;
	status = atk_move(&k, (void *)OWN_TARGET, mh, 4096, 'T');
	h_note("a receive into it after a truncate: status %#x", status);
	return SEC_ACCEPTED;
}

int
attack_punched_segment(const struct sec_ctx *c)
{
	struct via_ctl_vi_create_req vq;
	struct via_ctl_vi_create_rep vr;
	struct via_ctl_id pt;
	struct statfs sf;
	struct pollfd p;
	int seg, s = raw_session(c, &seg), rc;
	uint64_t t0;

	if (s < 0 || fstatfs(seg, &sf) != 0)
		return SEC_SETUP;
	if ((unsigned long)sf.f_type != HUGETLBFS_MAGIC) {
		h_note("the session segment is not on hugepages (the pool is empty?)");
		return SEC_SETUP;
	}
	if (raw_call(s, VIA_CTL_PTAG_CREATE, 2, NULL, &pt) != 0 || !drain_hugepages())
		return SEC_SETUP;
	/* the segment's first hugepage out from under viad's mapping (no VI
	 * yet: nothing of viad reads it), and the page it freed taken too */
	rc = fallocate(seg, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)HUGEPAGE);
	h_note("punched the segment's first hugepage: %s", rc == 0 ? "done" : strerror(errno));
	if (rc != 0 || !drain_hugepages())
		return SEC_SETUP;
	/* a VI: viad writes its queues into that page */
	memset(&vq, 0, sizeof(vq));
	vq.attr.reliability = VIP_SERVICE_UNRELIABLE;
	vq.attr.max_transfer = 32768;
	vq.attr.ptag = pt.id;
	vq.cookie = 1;
	rc = raw_call(s, VIA_CTL_VI_CREATE, 3, &vq, &vr);
	h_note("a VI in the punched page: %s", rc == 0 ? "created" : strerror(-rc));
	/* viad ends the session (it is not for viad to go down) */
	t0 = h_now_ms();
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	while (h_now_ms() - t0 < 5000) {
		char b;

		if (poll(&p, 1, 100) == 1 && recv(s, &b, 1, MSG_DONTWAIT) == 0)
			return SEC_REFUSED;
	}
	h_note("the session is still open 5 s later");
	return SEC_ACCEPTED;
}

/* ---- exhaustion ----------------------------------------------------------------------- */

#define MAP_SESSIONS 64
#define MAP_WINDOWS  2048
#define MAP_BASE     UINT64_C(0x100000000000)

int
attack_mappings(const struct sec_ctx *c)
{
	struct via_ctl_client_fd_req q = { .kind = VIA_CTL_FD_SHARE_FILE };
	int share = sealed_memfd("atk-share", VIA_SHARE_FILE_SIZE, 0,
				 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	uint64_t taken = 0;
	int rc = 0, s;

	if (share < 0)
		return SEC_SETUP;
	/* every session its own windows of the same file: one region each,
	 * in a window of its own */
	for (s = 0; s < MAP_SESSIONS && rc != -ENOSPC; s++) {
		struct atk k = { 0 };
		uint32_t mh;
		unsigned w;

		if (VipOpenNic("via0", &k.nic) != VIP_SUCCESS ||
		    VipCreatePtag(k.nic, &k.pt) != VIP_SUCCESS) {
			/* whose limit it was, the user's or viad's, is not known */
			h_note("session %d: could not open", s);
			rc = -EAGAIN;
			break;
		}
		rc = sec_call(k.nic, VIA_CTL_CLIENT_FD, &q, share, NULL, NULL);
		for (w = 0; rc == 0 && w < MAP_WINDOWS; w++) {
			rc = atk_register(&k, MAP_BASE + w * GiB, 4096, VIA_CTL_MEM_IN_PLACE, -1, 0, 0,
					  &mh);
			taken += rc == 0;
		}
	}
	h_note("%" PRIu64 " regions in distinct windows over %d sessions; then %s", taken, s,
	       strerror(-rc));
	c->sh->taken = taken;
	c->sh->verdict = rc == -ENOSPC ? SEC_REFUSED : SEC_ACCEPTED;
	/* hold them while the driver checks another user */
	raise(SIGSTOP);
	return (int)c->sh->verdict;
}

#define HUGE_SESSIONS 64
#define HUGE_ALLOC    (32 * MiB)

int
attack_hugepages(const struct sec_ctx *c)
{
	struct via_ctl_alloc_req q = { .len = HUGE_ALLOC };
	uint64_t taken = 0;
	bool normal = false;
	int s, rc = 0;

	for (s = 0; s < HUGE_SESSIONS && !normal && rc == 0; s++) {
		VIP_NIC_HANDLE nic;
		unsigned i;

		if (VipOpenNic("via0", &nic) != VIP_SUCCESS)
			break;
		for (i = 0; i < 32 && !normal && rc == 0; i++) {
			struct via_ctl_alloc_rep r = { 0 };
			int fd = -1;

			rc = sec_call(nic, VIA_CTL_ALLOC, &q, -1, &r, &fd);
			if (fd >= 0)
				close(fd);
			if (rc == -ENOSPC && i > 0) {
				rc = 0;     /* this session's max_alloc_bytes: the next one */
				break;
			}
			normal = rc == 0 && !r.hugepages;
			taken += rc == 0 && r.hugepages ? r.len : 0;
		}
	}
	h_note("%" PRIu64 " MiB of hugepage memory over %d sessions; then %s, %ld hugepages free",
	       taken >> 20, s, normal ? "normal pages" : strerror(-rc), free_hugepages());
	c->sh->taken = taken;
	/* what is left must still give another user a hugepage segment */
	c->sh->verdict = normal && free_hugepages() * HUGEPAGE >= 64 * MiB ? SEC_REFUSED
									  : SEC_ACCEPTED;
	raise(SIGSTOP);
	return (int)c->sh->verdict;
}

/* ---- class forkexec ---------------------------------------------------------------- */

int
attack_fork_exec(const struct sec_ctx *c)
{
	int out[2], in[2];
	struct atk k;
	pid_t child;

	if (!atk_open(&k) || pipe(out) != 0 || pipe(in) != 0)
		return SEC_SETUP;
	child = fork();
	if (child == 0) {
		/* keeps the control socket and the exec witness's write end */
		char line[64];
		unsigned long addr = 0;
		int shmid = -1, rc, verdict = SEC_REFUSED;
		ssize_t n;
		uint32_t mh, status;

		close(out[1]);
		close(in[0]);
		n = read(out[0], line, sizeof(line) - 1);
		line[n > 0 ? n : 0] = '\0';
		if (sscanf(line, "%d %lx", &shmid, &addr) != 2)
			_exit(SEC_SETUP);
		/* the set-user-ID program's root-only segment, where it maps it */
		rc = atk_register(&k, addr, SEC_SUID_LEN, VIA_CTL_MEM_SYSV, -1, shmid, 0, &mh);
		h_note("the set-user-ID program's segment %d at %#lx: %s", shmid, addr,
		       rc == 0 ? "TAKEN" : strerror(-rc));
		if (rc == 0) {
			status = atk_move(&k, (void *)addr, mh, 4096, 'P');
			h_note("a receive into it: status %#x", status);
			verdict = SEC_ACCEPTED;
		}
		close(in[1]);   /* the helper checks its segment now */
		_exit(verdict);
	}
	/* the parent becomes the set-user-ID program: it reports its segment
	 * on stdout and checks it when stdin closes (its exit status) */
	close(out[0]);
	close(in[1]);
	if (dup2(out[1], STDOUT_FILENO) < 0 || dup2(in[0], STDIN_FILENO) < 0)
		_exit(SEC_SETUP);
	execl(c->suid_helper, c->suid_helper, (char *)NULL);
	_exit(SEC_SETUP);
}
