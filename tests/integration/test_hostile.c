/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile clients. viad must answer or disconnect every one of them, never
 * crash, hang or leak, and a well-behaved client opened before the attacks
 * must keep working throughout.
 *
 *  (a) a library client that scribbles random bytes over its whole shared
 *      segment and keeps calling viad;
 *  (b) raw clients speaking garbage or abusing the control protocol
 *      (abi/via_ctl.h) on the control socket.
 *
 * Usage: it_hostile PATH/TO/viad      (VIA_TEST_SEED=N to replay)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "via_abi.h"
#include "via_ctl.h"

static struct viad_proc vd;
static VIP_NIC_HANDLE good;
static VIP_PROTECTION_HANDLE good_pt;
static uint64_t rng;
static uint64_t base_sessions;

/* ---- the well-behaved client ------------------------------------------ */

/*
 * After an attack: the attacker's connections are gone, the violation
 * counter moved by @p violations (-1: not checked), and the good client can
 * still create and destroy a VI.
 */
static void
after_attack(const char *attack, const VIP_DPDK_COUNTERS *before, int violations)
{
	VIP_DPDK_COUNTERS c;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi = NULL;
	VIP_RETURN r1, r2;

	CHECK(viad_alive(&vd), "%s: viad is alive", attack);
	CHECK(h_wait_sessions(good, base_sessions, &c), "%s: the attacker's sessions are closed",
	      attack);
	if (violations >= 0)
		CHECK(c.ClientsDisconnectedForViolation - before->ClientsDisconnectedForViolation ==
		      (uint64_t)violations,
		      "%s: ClientsDisconnectedForViolation grew by %d (%llu)", attack, violations,
		      (unsigned long long)(c.ClientsDisconnectedForViolation -
					   before->ClientsDisconnectedForViolation));
	else
		h_note("%s: ClientsDisconnectedForViolation grew by %llu", attack,
		       (unsigned long long)(c.ClientsDisconnectedForViolation -
					    before->ClientsDisconnectedForViolation));
	h_vi_attrs(&va, good_pt);
	r1 = VipCreateVi(good, &va, NULL, NULL, &vi);
	r2 = r1 == VIP_SUCCESS ? VipDestroyVi(vi) : r1;
	CHECK(r1 == VIP_SUCCESS && r2 == VIP_SUCCESS,
	      "%s: the good client creates and destroys a VI (%s, %s)", attack,
	      VipDpdkReturnString(r1), VipDpdkReturnString(r2));
}

/* ---- raw control clients ------------------------------------------------ */

static int
raw_send(int fd, unsigned op, uint32_t seq, const void *body)
{
	uint8_t zero[VIA_CTL_BODY_MAX] = { 0 };
	struct via_ctl_hdr h;

	via_ctl_hdr_init(&h, op, 0, seq, 0);
	return via_ctl_send(fd, &h, body != NULL ? body : zero, -1);
}

static int
send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Receive one reply within H_TIMEOUT_MS. @return 0 or -errno */
static int
raw_recv(int fd, struct via_ctl_hdr *h, void *body, int *rfd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, H_TIMEOUT_MS) != 1)
		return -ETIMEDOUT;
	return via_ctl_recv(fd, h, body, 1, rfd);
}

/* One request, one reply; @return viad's status, or a large positive
 * value if the exchange itself failed. */
static int
raw_call(int fd, unsigned op, uint32_t seq, const void *req, void *rep, int *rfd)
{
	uint8_t body[VIA_CTL_BODY_MAX];
	struct via_ctl_hdr h;
	int tmp = -1, rc;

	if (rfd != NULL)
		*rfd = -1;
	rc = raw_send(fd, op, seq, req);
	if (rc == 0)
		rc = raw_recv(fd, &h, body, rfd != NULL ? rfd : &tmp);
	if (tmp >= 0)
		close(tmp);
	if (rc != 0)
		return 1000;
	if (h.op != op || h.seq != seq || !(h.flags & VIA_CTL_F_REPLY))
		return 1001;
	if (rep != NULL)
		memcpy(rep, body, h.len);
	return h.status;
}

/* OPEN via0 on a raw connection; the segment fd is closed. @return status */
static int
raw_open(int fd, const char *name, uint32_t abi)
{
	struct via_ctl_open_req req;
	struct via_ctl_open_rep rep;
	int seg = -1, rc;

	memset(&req, 0, sizeof(req));
	snprintf(req.nic_name, sizeof(req.nic_name), "%s", name);
	req.abi_version = abi;
	rc = raw_call(fd, VIA_CTL_OPEN, 1, &req, &rep, &seg);
	if (seg >= 0)
		close(seg);
	return rc;
}

/* Whether viad closes the connection within H_TIMEOUT_MS (replies are
 * read and dropped on the way). */
static bool
closed_by_viad(int fd)
{
	uint64_t end = h_now_ms() + H_TIMEOUT_MS;
	char buf[4096];

	while (h_now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
	return false;
}

/* Send @p len bytes of @p buf on a new connection, expect a disconnect. */
static void
attack_bytes(const char *what, const void *buf, size_t len, bool open_first)
{
	int fd = h_raw_connect(&vd);

	CHECK(fd >= 0, "%s: connect", what);
	if (fd < 0)
		return;
	if (open_first)
		CHECK(raw_open(fd, "via0", VIA_ABI_VERSION) == 0, "%s: OPEN first", what);
	send_all(fd, buf, len);
	CHECK(closed_by_viad(fd), "%s: viad disconnects the client", what);
	close(fd);
}

/* ---- (a) a client that scribbles over its own shared segment ---------- */

/* The [start, end) of every "viad-session" mapping of this process. */
static unsigned
session_maps(uintptr_t *lo, uintptr_t *hi, unsigned max)
{
	char line[512];
	unsigned n = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f != NULL && n < max && fgets(line, sizeof(line), f) != NULL) {
		unsigned long a, b;

		if (strstr(line, "viad-session") == NULL || sscanf(line, "%lx-%lx", &a, &b) != 2)
			continue;
		lo[n] = a;
		hi[n] = b;
		n++;
	}
	if (f != NULL)
		fclose(f);
	return n;
}

static void
scribble(uint8_t *p, size_t len, uint64_t *state)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = h_rand(state);

		memcpy(p + i, &v, 8);
	}
}

static int
hostile_child(uint64_t seed)
{
	uintptr_t lo0[16], hi0[16], lo1[16], hi1[16];
	unsigned n0, n1, i, j, round, bad = 0;
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va, got;
	VIP_VI_HANDLE vi[6];
	VIP_CQ_HANDLE cq[3];
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_MEM_HANDLE mh;
	VIP_DPDK_COUNTERS c;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_RETURN r;
	VIP_PVOID a;
	uint8_t *seg = NULL;
	size_t seg_len = 0;
	char *buf = malloc(8192);
	bool destroyed[6] = { false }, cq_gone[3] = { false }, disconnected = false;

	h_set_child("hostile");
	n0 = session_maps(lo0, hi0, 16);
	if (VipOpenNic("via0", &nic) != VIP_SUCCESS || VipCreatePtag(nic, &pt) != VIP_SUCCESS)
		return 3;
	for (i = 0; i < 3; i++) {
		if (VipCreateCQ(nic, 32, &cq[i]) != VIP_SUCCESS)
			return 3;
	}
	h_vi_attrs(&va, pt);
	for (i = 0; i < 6; i++) {
		if (VipCreateVi(nic, &va, i < 3 ? cq[i] : NULL, i == 1 ? cq[0] : NULL, &vi[i]) !=
		    VIP_SUCCESS)
			return 3;
	}
	ma.Ptag = pt;
	if (VipRegisterMem(nic, buf, 8192, &ma, &mh) != VIP_SUCCESS ||
	    VipDpdkAllocMem(nic, 4096, &a) != VIP_SUCCESS)
		return 3;
	/* our own segment: the mapping that appeared with VipOpenNic (a
	 * forked child also maps its parent's segments: leave those alone) */
	n1 = session_maps(lo1, hi1, 16);
	for (i = 0; i < n1 && seg == NULL; i++) {
		bool old = false;

		for (j = 0; j < n0; j++)
			old |= lo0[j] == lo1[i];
		if (!old) {
			seg = (uint8_t *)lo1[i];
			seg_len = hi1[i] - lo1[i];
		}
	}
	CHECK(seg != NULL, "found the session's segment in /proc/self/maps");
	if (seg == NULL)
		return 3;
	h_note("scribbling over %zu bytes at %p, seed %#llx", seg_len, (void *)seg,
	       (unsigned long long)seed);
	/*
	 * viad may answer normally (the corruption only hurts this client) or
	 * disconnect the client for corrupting shared state; then every call
	 * fails with VIP_ERROR_RESOURCE. Either way each call returns a code.
	 */
	for (round = 0; round < 8; round++) {
		scribble(seg, seg_len, &seed);
		for (i = 0; i < 6; i++) {
			r = VipQueryVi(vi[i], &st, &got, &se, &re);
			if (destroyed[i])
				bad += r != VIP_INVALID_PARAMETER;
			else if (r == VIP_SUCCESS)
				bad += st != VIP_STATE_IDLE;
			else
				bad += r != VIP_ERROR_RESOURCE;
			if (round >= 2 && !destroyed[i]) {
				r = VipDestroyVi(vi[i]);
				if (r == VIP_SUCCESS)
					destroyed[i] = true;
				else
					bad += r != VIP_ERROR_RESOURCE;
			}
		}
		for (i = 0; round >= 4 && i < 3; i++) {
			if (cq_gone[i])
				continue;
			r = VipDestroyCQ(cq[i]);
			if (r == VIP_SUCCESS)
				cq_gone[i] = true;
			else
				bad += r != VIP_ERROR_RESOURCE;
		}
		/* new objects over the scribbled segment */
		{
			VIP_CQ_HANDLE ncq;
			VIP_VI_HANDLE nvi;

			r = VipCreateCQ(nic, 16, &ncq);
			if (r == VIP_SUCCESS) {
				r = VipCreateVi(nic, &va, ncq, ncq, &nvi);
				if (r == VIP_SUCCESS)
					r = VipDestroyVi(nvi);
				bad += r != VIP_SUCCESS && r != VIP_ERROR_RESOURCE;
				r = VipDestroyCQ(ncq);
			}
			bad += r != VIP_SUCCESS && r != VIP_ERROR_RESOURCE;
		}
		r = VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_COUNTERS, &c);
		bad += r != VIP_SUCCESS && r != VIP_ERROR_RESOURCE;
		if (r != VIP_SUCCESS && !disconnected) {
			h_note("round %u: the session was disconnected by viad", round);
			disconnected = true;
		}
	}
	CHECK(bad == 0, "every call over a scribbled segment got a sensible answer (%u odd)", bad);
	for (i = 0, j = 0; i < 6; i++)
		j += destroyed[i];
	h_note("%u of 6 VIs could be destroyed over the scribbled rings", j);
	/* the scribble also overwrote the segment header's daemon_state, so
	 * the library may conclude viad is gone: it releases the NIC either way */
	r = VipCloseNic(nic);
	CHECK(r == VIP_SUCCESS || r == VIP_ERROR_RESOURCE, "VipCloseNic: %s",
	      VipDpdkReturnString(r));
	return h_failures() == 0 ? 0 : 1;
}

static void
attack_scribble(uint64_t seed)
{
	VIP_DPDK_COUNTERS before;
	int st;
	pid_t pid;

	h_note("(a) a client scribbling over its shared segment");
	h_counters(good, &before);
	pid = fork();
	if (pid == 0)
		_exit(hostile_child(seed));
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the scribbling client finished normally");
	after_attack("scribble", &before, -1);
}

/* ---- (b) raw attacks ---------------------------------------------------- */

static void
attack_random(void)
{
	VIP_DPDK_COUNTERS before;
	uint8_t buf[4096];
	size_t i;

	h_note("(b) random bytes");
	h_counters(good, &before);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)h_rand(&rng);
	attack_bytes("random bytes before OPEN", buf, sizeof(buf), false);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)h_rand(&rng);
	attack_bytes("random bytes after OPEN", buf, sizeof(buf), true);
	after_attack("random bytes", &before, 2);
}

static void
attack_headers(void)
{
	static const char *const cases[] = {
		"a wrong cookie", "len too large (1 MiB)", "len one byte too long",
		"len 0 for an op with a body", "unknown op 0", "unknown op VIA_CTL_OP_COUNT",
		"unknown op 0xffff", "the reply flag in a request", "unknown flags",
		"a status in a request", "reserved not zero",
	};
	uint8_t msg[sizeof(struct via_ctl_hdr) + 600];
	VIP_DPDK_COUNTERS before;
	struct via_ctl_hdr h;
	unsigned i, pass;
	size_t len;

	h_note("(b) malformed headers");
	h_counters(good, &before);
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char what[160];

			via_ctl_hdr_init(&h, VIA_CTL_VI_QUERY, 0, 7, 0);
			switch (i) {
			case 0: h.cookie ^= 0x100; break;
			case 1: h.len = 1u << 20; break;
			case 2: h.len += 1; break;
			case 3: h.len = 0; break;
			case 4: h.op = 0; h.len = 0; break;
			case 5: h.op = VIA_CTL_OP_COUNT; break;
			case 6: h.op = 0xffff; break;
			case 7: h.flags = VIA_CTL_F_REPLY; break;
			case 8: h.flags = 0x80; break;
			case 9: h.status = -1; break;
			default: h.reserved = 1; break;
			}
			memset(msg, 0, sizeof(msg));
			memcpy(msg, &h, sizeof(h));
			/* the body as far as the header announces it, bounded */
			len = sizeof(h) + (h.len < 600 ? h.len : 600);
			snprintf(what, sizeof(what), "%s (%s)", cases[i],
				 pass == 0 ? "first message" : "after OPEN");
			attack_bytes(what, msg, len, pass == 1);
		}
	}
	after_attack("malformed headers", &before, 2 * (int)(sizeof(cases) / sizeof(cases[0])));
}

static void
attack_before_open(void)
{
	VIP_DPDK_COUNTERS before;
	struct via_ctl_id id = { .id = 1 };
	struct via_ctl_counters rc;
	int fd;

	h_note("(b) requests before OPEN, OPEN twice, OPEN with a wrong ABI or NIC");
	h_counters(good, &before);
	fd = h_raw_connect(&vd);
	CHECK(raw_call(fd, VIA_CTL_SMI_COUNTERS, 1, NULL, &rc, NULL) == -ENOTCONN,
	      "SMI_COUNTERS before OPEN is answered -ENOTCONN");
	CHECK(raw_call(fd, VIA_CTL_PTAG_CREATE, 2, NULL, NULL, NULL) == -ENOTCONN,
	      "PTAG_CREATE before OPEN is answered -ENOTCONN");
	CHECK(raw_call(fd, VIA_CTL_VI_DESTROY, 3, &id, NULL, NULL) == -ENOTCONN,
	      "VI_DESTROY before OPEN is answered -ENOTCONN");
	CHECK(raw_call(fd, VIA_CTL_ALLOC, 4, &(struct via_ctl_alloc_req){ .len = 4096 }, NULL,
		       NULL) == -ENOTCONN,
	      "ALLOC before OPEN is answered -ENOTCONN");
	CHECK(raw_open(fd, "via0", VIA_ABI_VERSION) == 0, "then OPEN succeeds");
	CHECK(raw_open(fd, "via0", VIA_ABI_VERSION) == -EALREADY, "a second OPEN: -EALREADY");
	CHECK(raw_call(fd, VIA_CTL_SMI_COUNTERS, 5, NULL, &rc, NULL) == 0,
	      "the session works after the second OPEN");
	close(fd);
	fd = h_raw_connect(&vd);
	CHECK(raw_open(fd, "via0", VIA_ABI_VERSION + 1) == -EPROTO, "OPEN with another ABI: -EPROTO");
	CHECK(raw_open(fd, "no-such-nic", VIA_ABI_VERSION) == -ENODEV,
	      "OPEN of an unknown NIC: -ENODEV");
	CHECK(raw_open(fd, "via0", VIA_ABI_VERSION) == 0, "then OPEN of via0 succeeds");
	close(fd);
	after_attack("requests before OPEN", &before, 0);
}

static void
attack_half(void)
{
	VIP_DPDK_COUNTERS before, c;
	struct via_ctl_hdr h;
	uint8_t msg[64];
	int fd, fd2;

	h_note("(b) half messages");
	h_counters(good, &before);
	/* half a header, then the client goes away */
	via_ctl_hdr_init(&h, VIA_CTL_SMI_COUNTERS, 0, 1, 0);
	fd = h_raw_connect(&vd);
	send_all(fd, &h, 10);
	/* a full header and half a body, left hanging while others work */
	via_ctl_hdr_init(&h, VIA_CTL_PTAG_DESTROY, 0, 1, 0);
	memcpy(msg, &h, sizeof(h));
	memset(msg + sizeof(h), 0, 4);
	fd2 = h_raw_connect(&vd);
	CHECK(raw_open(fd2, "via0", VIA_ABI_VERSION) == 0, "OPEN");
	send_all(fd2, msg, sizeof(h) + 4);
	CHECK_RET(h_counters(good, &c), VIP_SUCCESS,
		  "the good client is served while two requests hang half-sent");
	CHECK(c.Sessions >= base_sessions + 1, "the opened hanging client is a session");
	close(fd);
	close(fd2);
	after_attack("half messages", &before, 0);
}

/* A client that sends requests and never reads the replies. */
static void
attack_flood(void)
{
	struct via_ctl_hdr hdrs[64];
	VIP_DPDK_COUNTERS before;
	uint64_t end, sent = 0;
	size_t off = 0;
	unsigned i;
	bool closed = false;
	int fd;

	h_note("(b) a client that never reads its replies");
	h_counters(good, &before);
	for (i = 0; i < 64; i++)
		via_ctl_hdr_init(&hdrs[i], VIA_CTL_SMI_COUNTERS, 0, i + 10, 0);
	fd = h_raw_connect(&vd);
	CHECK(raw_open(fd, "via0", VIA_ABI_VERSION) == 0, "OPEN");
	end = h_now_ms() + H_TIMEOUT_MS;
	while (!closed && h_now_ms() < end) {
		/* one byte stream of whole headers, even across short sends */
		ssize_t n = send(fd, (uint8_t *)hdrs + off, sizeof(hdrs) - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			sent += (uint64_t)n;
			off = (off + (size_t)n) % sizeof(hdrs);
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, 100);
		} else {
			closed = true;   /* EPIPE / ECONNRESET: viad hung up */
		}
	}
	h_note("flood: %llu requests sent", (unsigned long long)(sent / sizeof(hdrs[0])));
	CHECK(closed, "viad disconnects a client that does not read its replies");
	close(fd);
	after_attack("flood", &before, -1);
}

/* What viad holds of an open session: its connection, its process's pidfd
 * and its own copy of the segment's memfd (kept for an upgrade,
 * docs/design.md section 18.3; the client gets one with OPEN's reply). */
#define SESSION_FDS 3

/*
 * viad's open fds once they are at most @p at_most, or after 2 s: an fd a
 * client handed over is closed by viad's reaper threads, after the reply
 * (daemon/reap.c), so a count taken right after the reply may still see
 * it; one viad kept never goes.
 */
static int
fds_settled(int at_most)
{
	uint64_t end = h_now_ms() + 2000;
	int n;

	while ((n = viad_fd_count(&vd)) > at_most && h_now_ms() < end)
		h_sleep_ms(10);
	return n;
}

/* Requests that carry descriptors (SCM_RIGHTS) where none is taken: refused
 * (-EBADF), never kept (docs/design.md section 10). */
static void
attack_fd_passing(void)
{
	VIP_DPDK_COUNTERS before;
	struct via_ctl_hdr h;
	uint8_t body[VIA_CTL_BODY_MAX];
	int fd, p[2], before_fds, opened_fds, i, rfd, ok = 1;

	h_note("(b) requests carrying file descriptors");
	h_counters(good, &before);
	before_fds = viad_fd_count(&vd);
	fd = h_raw_connect(&vd);
	CHECK(raw_open(fd, "via0", VIA_ABI_VERSION) == 0, "OPEN");
	opened_fds = fds_settled(before_fds + SESSION_FDS);
	CHECK(opened_fds <= before_fds + SESSION_FDS,
	      "an open session holds its connection and its pidfd, no more (%d -> %d)",
	      before_fds, opened_fds);
	if (pipe(p) != 0)
		return;
	for (i = 0; i < 200; i++) {
		via_ctl_hdr_init(&h, VIA_CTL_SMI_COUNTERS, 0, (uint32_t)i + 2, 0);
		ok &= via_ctl_send(fd, &h, body, p[i & 1]) == 0;
		rfd = -1;
		ok &= raw_recv(fd, &h, body, &rfd) == 0 && h.status == -EBADF;
		if (rfd >= 0)
			close(rfd);
	}
	CHECK(ok, "200 requests with an fd attached are answered -EBADF");
	CHECK(fds_settled(before_fds + SESSION_FDS) <= before_fds + SESSION_FDS,
	      "viad did not keep the descriptors (%d before the session, %d once open, %d after "
	      "the requests)", before_fds, opened_fds, viad_fd_count(&vd));
	close(fd);
	close(p[0]);
	close(p[1]);
	after_attack("fd passing", &before, 0);
	CHECK(fds_settled(before_fds) <= before_fds, "viad's descriptors are back to %d (%d)",
	      before_fds, viad_fd_count(&vd));
}

/*
 * An error reply of an fd-carrying op (OPEN, ALLOC) carries viad's own end
 * of the connection as its "stand-in" fd. A client that keeps it keeps the
 * connection alive inside viad's epoll set after viad closed the session.
 */
static void
attack_keep_standin_fd(void)
{
	struct via_ctl_open_req req;
	uint8_t body[VIA_CTL_BODY_MAX];
	struct via_ctl_hdr h;
	VIP_DPDK_COUNTERS before;
	double cpu0, cpu1;
	int fd, kept = -1, fds0;

	h_note("(b) a client that keeps the fd of a failed OPEN reply");
	h_counters(good, &before);
	fds0 = viad_fd_count(&vd);
	fd = h_raw_connect(&vd);
	memset(&req, 0, sizeof(req));
	snprintf(req.nic_name, sizeof(req.nic_name), "no-such-nic");
	req.abi_version = VIA_ABI_VERSION;
	raw_send(fd, VIA_CTL_OPEN, 1, &req);
	CHECK(raw_recv(fd, &h, body, &kept) == 0 && h.status == -ENODEV, "OPEN fails with -ENODEV");
	h_note("the failed OPEN reply carried fd %d", kept);
	/* the client leaves but keeps the passed descriptor */
	close(fd);
	after_attack("kept stand-in fd", &before, 0);
	cpu0 = viad_main_thread_cpu(&vd);
	h_sleep_ms(1000);
	cpu1 = viad_main_thread_cpu(&vd);
	CHECK(cpu0 >= 0 && cpu1 - cpu0 < 0.3,
	      "viad's control thread stays idle after the client left (%.2f s of CPU in 1 s)",
	      cpu1 - cpu0);
	if (kept >= 0)
		close(kept);
	h_sleep_ms(100);
	cpu0 = viad_main_thread_cpu(&vd);
	h_sleep_ms(500);
	cpu1 = viad_main_thread_cpu(&vd);
	CHECK(cpu1 - cpu0 < 0.2, "the control thread is idle once the fd is closed (%.2f s)",
	      cpu1 - cpu0);
	CHECK(viad_fd_count(&vd) == fds0, "viad's descriptors are back to %d (%d)", fds0,
	      viad_fd_count(&vd));
}

/*
 * A raw client that guesses the ids of the good client's objects (ids are
 * small integers) must not reach them.
 */
static void
attack_foreign_ids(void)
{
	VIP_DPDK_COUNTERS before;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma = { 0 }, q;
	VIP_VI_ATTRIBUTES va, got;
	VIP_MEM_HANDLE mh;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_PVOID a;
	char *buf = malloc(4096);
	uint32_t id;
	int fd, unexpected = 0, rc;

	h_note("(b) a raw client guessing other sessions' object ids");
	h_counters(good, &before);
	VipCreatePtag(good, &pt);
	ma.Ptag = pt;
	VipRegisterMem(good, buf, 4096, &ma, &mh);
	VipCreateCQ(good, 16, &cq);
	h_vi_attrs(&va, pt);
	VipCreateVi(good, &va, cq, NULL, &vi);
	VipDpdkAllocMem(good, 4096, &a);
	memset(a, 0x42, 4096);

	fd = h_raw_connect(&vd);
	CHECK(raw_open(fd, "via0", VIA_ABI_VERSION) == 0, "OPEN");
	for (id = 0; id < 3000; id++) {
		struct via_ctl_id q_id = { .id = id };
		struct via_ctl_mem_ref ref = { .addr = (uintptr_t)buf, .handle = id };
		struct via_ctl_mem_set_attr_req sa = { .ref = ref, .attr = { .ptag = id } };
		struct via_ctl_vi_set_attr_req vs = {
			.attr = { .reliability = VIP_SERVICE_UNRELIABLE, .max_transfer = 32768,
				  .ptag = id },
			.id = id,
		};
		struct via_ctl_vi_create_req vc = {
			.attr = { .reliability = VIP_SERVICE_UNRELIABLE, .max_transfer = 32768,
				  .ptag = id },
			.send_cq = id,
		};
		struct via_ctl_alloc_mapped_req am = { .client_va = 0x10000000, .id = id };
		uint8_t rep[VIA_CTL_BODY_MAX];

		rc = raw_call(fd, VIA_CTL_VI_QUERY, 10, &q_id, rep, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_VI_DESTROY, 11, &q_id, NULL, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_VI_SET_ATTR, 12, &vs, NULL, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_VI_CREATE, 13, &vc, rep, NULL);
		unexpected += id != 0 && rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_CQ_DESTROY, 14, &q_id, NULL, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_PTAG_DESTROY, 15, &q_id, NULL, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_MEM_QUERY, 16, &ref, rep, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_MEM_DEREGISTER, 17, &ref, NULL, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_MEM_SET_ATTR, 18, &sa, NULL, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_FREE, 19, &q_id, NULL, NULL);
		unexpected += rc != -ENOENT;
		rc = raw_call(fd, VIA_CTL_ALLOC_MAPPED, 20, &am, NULL, NULL);
		unexpected += rc != -ENOENT;
		if (unexpected > 0) {
			h_note("id %u: an unexpected answer (last %d)", id, rc);
			break;
		}
	}
	CHECK(unexpected == 0, "3000 guessed ids x 11 ops: all answered -ENOENT");
	close(fd);
	after_attack("foreign ids", &before, 0);
	CHECK_RET(VipQueryVi(vi, &st, &got, &se, &re), VIP_SUCCESS, "the good VI is intact");
	CHECK(got.Ptag == pt && got.MaxTransferSize == 32768, "its attributes are unchanged");
	CHECK_RET(VipQueryMem(good, buf, mh, &q), VIP_SUCCESS, "the good region is intact");
	CHECK(q.Ptag == pt, "its tag is unchanged");
	CHECK(((uint8_t *)a)[100] == 0x42, "the good allocation is intact");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the good VI");
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the good CQ");
	CHECK_RET(VipDeregisterMem(good, buf, mh), VIP_SUCCESS, "deregister the good region");
	CHECK_RET(VipDpdkFreeMem(good, a), VIP_SUCCESS, "free the good allocation");
	CHECK_RET(VipDestroyPtag(good, pt), VIP_SUCCESS, "destroy the good tag");
	free(buf);
}

/* Well-framed requests with nonsense bodies. */
static void
attack_bad_bodies(void)
{
	VIP_DPDK_COUNTERS before;
	struct via_ctl_id id;
	struct via_ctl_alloc_rep ar;
	struct via_ctl_cq_create_rep cr;
	struct via_ctl_vi_create_rep vr;
	uint8_t rep[VIA_CTL_BODY_MAX];
	int fd, afd = -1, rc;
	uint32_t pt;

	h_note("(b) well-framed requests with nonsense bodies");
	h_counters(good, &before);
	fd = h_raw_connect(&vd);
	CHECK(raw_open(fd, "via0", VIA_ABI_VERSION) == 0, "OPEN");
	CHECK(raw_call(fd, VIA_CTL_PTAG_CREATE, 2, NULL, &id, NULL) == 0, "PTAG_CREATE");
	pt = id.id;
	{
		struct via_ctl_mem_register_req mr = { .addr = 0x1000, .len = 0, .attr = { .ptag = pt } };

		CHECK(raw_call(fd, VIA_CTL_MEM_REGISTER, 3, &mr, rep, NULL) == -EINVAL,
		      "MEM_REGISTER of 0 bytes: -EINVAL");
		mr.addr = UINT64_MAX - 10;
		mr.len = 100;
		CHECK(raw_call(fd, VIA_CTL_MEM_REGISTER, 4, &mr, rep, NULL) == -EINVAL,
		      "MEM_REGISTER that wraps: -EINVAL");
		mr.addr = 0xffff800000000000ull;
		mr.len = 4096;
		CHECK(raw_call(fd, VIA_CTL_MEM_REGISTER, 5, &mr, rep, NULL) == -EINVAL,
		      "MEM_REGISTER of a kernel address: -EINVAL");
		mr.addr = 0x1000;
		mr.len = 1ull << 46;
		CHECK(raw_call(fd, VIA_CTL_MEM_REGISTER, 6, &mr, rep, NULL) == -EINVAL,
		      "MEM_REGISTER of 64 TiB: -EINVAL");
	}
	{
		struct via_ctl_cq_create_req cq = { .entries = 0 };

		CHECK(raw_call(fd, VIA_CTL_CQ_CREATE, 7, &cq, &cr, NULL) == -EINVAL,
		      "CQ_CREATE of 0 entries: -EINVAL");
		cq.entries = UINT32_MAX;
		CHECK(raw_call(fd, VIA_CTL_CQ_CREATE, 8, &cq, &cr, NULL) == -ENOSPC,
		      "CQ_CREATE of 2^32-1 entries: -ENOSPC");
		cq.entries = 65536;
		rc = raw_call(fd, VIA_CTL_CQ_CREATE, 9, &cq, &cr, NULL);
		CHECK(rc == 0, "CQ_CREATE of MaxCQEntries entries (%d)", rc);
	}
	{
		static const uint32_t bad_entry[] = {
			8, 32, VIA_WQE_LINE_SIZE + 1, VIA_WQE_LINE_SIZE + 32,
			VIA_WQE_LINE_SIZE + VIA_WQE_INLINE_MAX + VIA_WQE_LINE_SIZE, UINT32_MAX,
			UINT32_MAX - VIA_WQE_LINE_SIZE + 1,
		};
		struct via_ctl_vi_create_req vc = {
			.attr = { .reliability = VIP_SERVICE_UNRELIABLE, .max_transfer = 32768,
				  .ptag = pt, .rdma_write = 7 },
		};

		CHECK(raw_call(fd, VIA_CTL_VI_CREATE, 10, &vc, &vr, NULL) == -EINVAL,
		      "VI_CREATE with rdma_write 7: -EINVAL");
		vc.attr.rdma_write = 0;
		vc.attr.reliability = 0xffff;
		CHECK(raw_call(fd, VIA_CTL_VI_CREATE, 11, &vc, &vr, NULL) == -EPROTONOSUPPORT,
		      "VI_CREATE with reliability 0xffff: -EPROTONOSUPPORT");
		vc.attr.reliability = VIP_SERVICE_UNRELIABLE;
		vc.attr.max_transfer = UINT32_MAX;
		CHECK(raw_call(fd, VIA_CTL_VI_CREATE, 12, &vc, &vr, NULL) == -EMSGSIZE,
		      "VI_CREATE with max_transfer 2^32-1: -EMSGSIZE");
		vc.attr.max_transfer = 32768;
		vc.send_cq = cr.id;
		vc.recv_cq = cr.id;
		/* ring entries: 16 bytes, or line entries of 64 plus up to
		 * VIA_WQE_INLINE_MAX in lines (issue 30); nothing else */
		for (unsigned i = 0; i < sizeof(bad_entry) / sizeof(bad_entry[0]); i++) {
			vc.entry_size = bad_entry[i];
			CHECK(raw_call(fd, VIA_CTL_VI_CREATE, 12, &vc, &vr, NULL) == -EINVAL,
			      "VI_CREATE with entry_size %u: -EINVAL", bad_entry[i]);
		}
		vc.entry_size = VIA_WQE_LINE_SIZE + VIA_WQE_INLINE_MAX;
		CHECK(raw_call(fd, VIA_CTL_VI_CREATE, 13, &vc, &vr, NULL) == 0 &&
			      vr.entry_size == vc.entry_size,
		      "VI_CREATE of the largest line entries works");
		vc.entry_size = 0;
		CHECK(raw_call(fd, VIA_CTL_VI_CREATE, 13, &vc, &vr, NULL) == 0,
		      "VI_CREATE with a good body works");
	}
	{
		struct via_ctl_alloc_req al = { .len = UINT64_MAX };
		struct via_ctl_alloc_mapped_req am;

		CHECK(raw_call(fd, VIA_CTL_ALLOC, 14, &al, &ar, &afd) == -ENOSPC,
		      "ALLOC of 2^64-1 bytes: -ENOSPC");
		if (afd >= 0)
			close(afd);
		al.len = 0;
		CHECK(raw_call(fd, VIA_CTL_ALLOC, 15, &al, &ar, &afd) == -EINVAL,
		      "ALLOC of 0 bytes: -EINVAL");
		if (afd >= 0)
			close(afd);
		al.len = 8192;
		CHECK(raw_call(fd, VIA_CTL_ALLOC, 16, &al, &ar, &afd) == 0 && afd >= 0,
		      "ALLOC of 8 KiB, with its fd");
		if (afd >= 0)
			close(afd);
		am = (struct via_ctl_alloc_mapped_req){ .client_va = 0, .id = ar.id };
		CHECK(raw_call(fd, VIA_CTL_ALLOC_MAPPED, 17, &am, NULL, NULL) == -EINVAL,
		      "ALLOC_MAPPED at address 0: -EINVAL");
		am.client_va = UINT64_MAX - 4096;
		CHECK(raw_call(fd, VIA_CTL_ALLOC_MAPPED, 18, &am, NULL, NULL) == -EINVAL,
		      "ALLOC_MAPPED at an address that wraps: -EINVAL");
		am.client_va = 0x7f0000000000ull;
		CHECK(raw_call(fd, VIA_CTL_ALLOC_MAPPED, 19, &am, NULL, NULL) == 0,
		      "ALLOC_MAPPED at a (false) address: accepted");
		CHECK(raw_call(fd, VIA_CTL_ALLOC_MAPPED, 20, &am, NULL, NULL) == -EINVAL,
		      "ALLOC_MAPPED a second time: -EINVAL");
	}
	{
		struct via_ctl_ns_by_name_req nb;
		struct via_ctl_mac mac = { .mac = { 2, 0, 0, 0, 0, 0 } };

		memset(&nb, 'A', sizeof(nb));   /* no NUL anywhere */
		CHECK(raw_call(fd, VIA_CTL_NS_BY_NAME, 21, &nb, rep, NULL) == -ENOENT,
		      "NS_BY_NAME with an unterminated name: -ENOENT");
		CHECK(raw_call(fd, VIA_CTL_NS_BY_ADDR, 22, &mac, rep, NULL) == 0,
		      "NS_BY_ADDR still works");
	}
	CHECK(raw_call(fd, VIA_CTL_SMI_PORT, 23, NULL, rep, NULL) == 0, "SMI_PORT still works");
	close(fd);
	after_attack("nonsense bodies", &before, 0);
}

/* Many connections at once, each in a different state. */
static void
attack_many(void)
{
	VIP_DPDK_COUNTERS before, c;
	int fds[120], i;
	bool ok = true;

	h_note("(b) 120 connections at once");
	h_counters(good, &before);
	for (i = 0; i < 120; i++) {
		fds[i] = h_raw_connect(&vd);
		ok &= fds[i] >= 0;
		if (fds[i] >= 0 && i % 3 == 0)
			ok &= raw_open(fds[i], "via0", VIA_ABI_VERSION) == 0;
		if (fds[i] >= 0 && i % 3 == 1)
			send_all(fds[i], "VIA", 3);
	}
	CHECK(ok, "120 connections, a third of them opened");
	h_counters(good, &c);
	/* vipl_dpdk.h: Sessions counts open sessions, "one per VipOpenNic" */
	CHECK(c.Sessions == base_sessions + 40,
	      "Sessions counts the 40 opened connections, not the 80 that never sent OPEN (%llu)",
	      (unsigned long long)(c.Sessions - base_sessions));
	for (i = 0; i < 120; i++)
		close(fds[i]);
	after_attack("120 connections", &before, 0);
}

/*
 * One client exhausting viad's descriptors with small VipDpdkAllocMem
 * allocations (each keeps a memfd open in viad), within its byte limit,
 * under a descriptor limit of 1024 (`ulimit -n 1024`: EAL raises the soft
 * limit to the hard one, so both are set). Other clients must not
 * hang, and viad must not spin.
 */
static void
attack_fd_exhaustion(void)
{
	struct viad_proc v2;
	VIP_NIC_HANDLE g2 = NULL, late = NULL;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi;
	VIP_DPDK_COUNTERS c;
	uint64_t end;
	double cpu0, cpu1;
	int p[2], st, count = 0;
	pid_t hog, newcomer;
	bool exited = false;
	VIP_RETURN r;

	h_note("(b) one client exhausting viad's file descriptors (ulimit -n 1024)");
	h_viad_set_nofile(1024);
	if (viad_start(&v2, "nofile", NULL) != 0) {
		h_viad_set_nofile(0);
		viad_use(&vd);
		return;
	}
	h_viad_set_nofile(0);
	CHECK_RET(VipOpenNic("via0", &g2), VIP_SUCCESS, "a good client opens a NIC first");
	VipCreatePtag(g2, &pt);
	if (pipe(p) != 0)
		return;
	hog = fork();
	if (hog == 0) {
		VIP_NIC_HANDLE nic;
		VIP_PVOID a;
		int i = 0;

		close(p[0]);
		if (VipOpenNic("via0", &nic) == VIP_SUCCESS) {
			for (i = 0; i < 4000; i++) {
				if (VipDpdkAllocMem(nic, 4096, &a) != VIP_SUCCESS)
					break;
			}
		}
		if (write(p[1], &i, sizeof(i)) != sizeof(i))
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	{
		struct pollfd pf = { .fd = p[0], .events = POLLIN };

		CHECK(poll(&pf, 1, 60000) == 1 && read(p[0], &count, sizeof(count)) == sizeof(count),
		      "the hog allocated until refused");
	}
	close(p[0]);
	h_note("the hog got %d allocations of 4 KiB (%d KiB of its 1 GiB limit)", count, count * 4);
	h_vi_attrs(&va, pt);
	r = VipCreateVi(g2, &va, NULL, NULL, &vi);
	CHECK(r == VIP_SUCCESS && VipDestroyVi(vi) == VIP_SUCCESS,
	      "the good client still creates and destroys a VI");
	/* a client arriving now must get an answer, whatever it is */
	newcomer = fork();
	if (newcomer == 0) {
		alarm(30);
		r = VipOpenNic("via0", &late);
		if (r == VIP_SUCCESS)
			VipCloseNic(late);
		_exit(r == VIP_SUCCESS || r == VIP_ERROR_RESOURCE ? 0 : 1);
	}
	end = h_now_ms() + 5000;
	while (!exited && h_now_ms() < end) {
		exited = waitpid(newcomer, &st, WNOHANG) == newcomer;
		if (!exited)
			h_sleep_ms(20);
	}
	CHECK(exited, "a new client's VipOpenNic returns within 5 s while viad is out of descriptors");
	cpu0 = viad_main_thread_cpu(&v2);
	h_sleep_ms(1000);
	cpu1 = viad_main_thread_cpu(&v2);
	CHECK(cpu1 - cpu0 < 0.3,
	      "viad's control thread does not spin while out of descriptors (%.2f s of CPU in 1 s)",
	      cpu1 - cpu0);
	if (!exited) {
		kill(newcomer, SIGKILL);
		waitpid(newcomer, &st, 0);
	}
	kill(hog, SIGKILL);
	waitpid(hog, &st, 0);
	end = h_now_ms() + H_TIMEOUT_MS;
	do {
		h_counters(g2, &c);
		if (c.Sessions == 1)
			break;
		h_sleep_ms(20);
	} while (h_now_ms() < end);
	CHECK(c.Sessions == 1, "the hog's session is reclaimed (%llu sessions)",
	      (unsigned long long)c.Sessions);
	CHECK_RET(VipOpenNic("via0", &late), VIP_SUCCESS, "new clients are served again");
	VipCloseNic(late);
	VipDestroyPtag(g2, pt);
	VipCloseNic(g2);
	viad_stop(&v2);
	viad_use(&vd);
}

int
main(int argc, char **argv)
{
	VIP_DPDK_COUNTERS c;
	uint64_t seed;

	h_init(argc, argv, 115);
	seed = h_seed();
	rng = seed;
	/* one user's attacks on viad's own limits: the per-user ones
	 * (it_limits) all the way up to them */
	if (viad_start(&vd, "hostile", (const char *const[]){ "limits.user_share=1", NULL }) != 0)
		return h_finish();
	if (VipOpenNic("via0", &good) != VIP_SUCCESS || VipCreatePtag(good, &good_pt) != VIP_SUCCESS) {
		CHECK(0, "the good client opens a NIC");
		viad_stop(&vd);
		return h_finish();
	}
	CHECK(h_wait_sessions(good, 1, &c), "the good client is the only session");
	base_sessions = c.Sessions;

	attack_scribble(seed);
	attack_random();
	attack_headers();
	attack_before_open();
	attack_half();
	attack_flood();
	attack_fd_passing();
	attack_foreign_ids();
	attack_bad_bodies();
	attack_many();
	attack_keep_standin_fd();
	attack_fd_exhaustion();

	CHECK(viad_alive(&vd), "viad survived every attack");
	CHECK_RET(VipDestroyPtag(good, good_pt), VIP_SUCCESS, "the good client destroys its tag");
	CHECK_RET(VipCloseNic(good), VIP_SUCCESS, "the good client closes its NIC");
	viad_stop(&vd);
	return h_finish();
}
