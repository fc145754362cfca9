/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Upgrading viad under running clients (docs/design.md section 18).
 *
 * Asked by `viactl upgrade [BINARY]` on the admin socket (root only), or by
 * SIGUSR2, the control thread, between two batches of events (so at a
 * message boundary of every control request: a request partly read is in
 * its session's buffer), parks the poll lcores, writes the image (image.h)
 * into a sealed memfd, and hands over across exec, same pid: every fd the
 * image names loses its close-on-exec flag, every other fd keeps or gets
 * it, the ports and EAL are released as at a shutdown, and the new binary
 * starts with `--adopt FD`. Clients see a pause: their sockets, segments
 * and memory stay; the frames the peers sent meanwhile come again
 * (via_rel_resume).
 *
 * The new viad checks the image before anything else (image.c), starts
 * EAL and its ports, and adopts (image_adopt.c). An image it cannot adopt
 * (another version, a NIC that changed, anything malformed) it hands back:
 * it releases EAL and execs the old binary, whose fd (O_PATH, opened from
 * /proc/self/exe at start) the image's header names, with the same image
 * and `--adopt-refused WHY`: the old viad resumes and says why. Whichever
 * viad runs in the end answers the viactl that asked, on the socket that
 * crossed the exec with the rest.
 *
 * What the exec needs of viad's rights: to execute a root-owned binary and
 * to start as viad starts (hugepages, the ports); with a capability
 * bounding set that keeps what viad needs at start, an exec by uid 0
 * regains them (see docs/design.md section 18, "Rights").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_lcore.h>

#include <vipl_dpdk.h>

#include "capture.h"
#include "dp/dp.h"
#include "runtime.h"
#include "telemetry.h"
#include "upgrade.h"
#include "via_upgrade_proto.h"
#include "wire.h"

#define ADOPT_OPT "--adopt"
#define REFUSED_OPT "--adopt-refused"
#define ARGS_MAX 256

static struct {
	/* from the start */
	int exe_fd;                   /* O_PATH of the running binary: the rollback's */
	char exe_path[PATH_MAX];      /* where it was started from: the default new binary */
	char *argv[ARGS_MAX];         /* viad's arguments, without --adopt's */
	int argc;
	/* the CPUs viad was started on: EAL pins the thread that execs to
	 * the main lcore's CPU, and the new viad takes its lcores from the
	 * affinity it inherits (main.c:eal_args) */
	cpu_set_t cpus;
	bool cpus_known;
	uint32_t upgrades;            /* handovers in this pid's life */
	uint64_t blackout_us;         /* the last one's */
	bool allowed;                 /* viad.upgrades */
	/* the admin socket */
	int lfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int pending;                  /* a connection whose request has not come */
	/* an upgrade asked for */
	bool asked;
	int requester;                /* the socket to answer; -1: a signal asked */
	int binary;                   /* the new binary */
	/* an image adopted: what is answered and released once viad resumes */
	int image_fd;
	const void *image;
	size_t image_len;
	const char *refused;          /* the new binary's reason: this is a rollback */
} up = { .exe_fd = -1, .lfd = -1, .pending = -1, .requester = -1, .binary = -1,
	 .image_fd = -1 };

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- from the start -------------------------------------------------------- */

int
via_upgrade_init(int argc, char **argv, int *adopt_fd, const char **refused)
{
	ssize_t n;
	int i;

	*adopt_fd = -1;
	*refused = NULL;
	for (i = 0; i < argc && up.argc < ARGS_MAX - 5; i++) {
		if (i + 1 < argc && strcmp(argv[i], ADOPT_OPT) == 0) {
			*adopt_fd = atoi(argv[++i]);
			continue;
		}
		if (i + 1 < argc && strcmp(argv[i], REFUSED_OPT) == 0) {
			*refused = argv[++i];
			continue;
		}
		up.argv[up.argc++] = argv[i];
	}
	up.refused = *refused;
	up.cpus_known = sched_getaffinity(0, sizeof(up.cpus), &up.cpus) == 0;
	/* the binary running now, even if a package replaced its file */
	up.exe_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	n = readlink("/proc/self/exe", up.exe_path, sizeof(up.exe_path) - 1);
	if (up.exe_fd < 0 || n <= 0)
		return -errno;
	up.exe_path[n] = '\0';
	/* the path a replaced binary had: " (deleted)" is the kernel's note */
	if (n > 10 && strcmp(up.exe_path + n - 10, " (deleted)") == 0)
		up.exe_path[n - 10] = '\0';
	/* an exec by fd names the process after the fd's number before Linux
	 * 6.14 ("7"): ps, pgrep and pidof look for viad by its binary's name */
	if (*adopt_fd >= 0 || *refused != NULL) {
		const char *base = strrchr(up.exe_path, '/');

		prctl(PR_SET_NAME, base != NULL ? base + 1 : up.exe_path, 0, 0, 0);
	}
	return 0;
}

/* ---- the admin socket ---------------------------------------------------------- */

/* Answer @p fd (closed after) with @p result. */
static void
answer(int fd, uint32_t result, int status, const struct via_admin_rep *facts, const char *detail)
{
	struct via_admin_rep r = { 0 };

	if (fd < 0)
		return;
	if (facts != NULL)
		r = *facts;
	r.magic = VIA_ADMIN_MAGIC;
	r.result = result;
	r.status = status;
	snprintf(r.detail, sizeof(r.detail), "%s", detail != NULL ? detail : "");
	if (send(fd, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		VLOG_INFO("upgrade: the answer to viactl is lost: %s", strerror(errno));
	close(fd);
}

int
via_upgrade_listen(int ep, uint64_t key, bool allowed)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = key };
	int rc;

	up.allowed = allowed;
	if ((size_t)snprintf(up.path, sizeof(up.path), "%s/%s", rte_eal_get_runtime_dir(),
			     VIA_ADMIN_SOCKET) >= sizeof(up.path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, up.path);
	/* a socket left by this very pid before an exec, or by a dead viad of
	 * this instance: stale, removed; anything else is left alone */
	rc = via_socket_claim(up.path);
	if (rc != 0)
		return rc;
	up.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (up.lfd < 0)
		return -errno;
	if (bind(up.lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || chmod(up.path, 0600) != 0 ||
	    listen(up.lfd, 4) != 0 || epoll_ctl(ep, EPOLL_CTL_ADD, up.lfd, &ev) != 0) {
		rc = -errno;
		close(up.lfd);
		up.lfd = -1;
	}
	return rc;
}

void
via_upgrade_unlisten(void)
{
	if (up.lfd >= 0) {
		close(up.lfd);
		unlink(up.path);
		up.lfd = -1;
	}
}

/*
 * Whether the binary behind @p fd may be executed as viad: a regular,
 * executable file owned by root that only root may write. @return 0, -EACCES
 * (*@p why says which)
 */
static int
binary_check(int fd, const char **why)
{
	struct stat st;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		*why = "not a regular file";
	else if (st.st_uid != 0)
		*why = "not owned by root";
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		*why = "writable by others than root";
	else if (!(st.st_mode & S_IXUSR))
		*why = "not executable";
	else
		return 0;
	return -EACCES;
}

/* An upgrade to the binary of @p fd (-1: the one at viad's own path), answered on @p requester. */
static void
ask(int requester, int fd)
{
	const char *why = NULL;
	int rc;

	if (!up.allowed) {
		why = "upgrades are off (viad.upgrades = no): viad dropped what it needs to "
		      "start again";
		VLOG_WARN("upgrade refused: %s", why);
		answer(requester, VIA_ADMIN_REFUSED, -EPERM, NULL, why);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (fd < 0 && (fd = open(up.exe_path, O_PATH | O_CLOEXEC)) < 0) {
		rc = -errno;
		why = "the binary at viad's own path cannot be opened";
	} else {
		rc = binary_check(fd, &why);
	}
	if (rc != 0) {
		VLOG_WARN("upgrade refused: the new binary is %s", why);
		answer(requester, VIA_ADMIN_REFUSED, rc, NULL, why);
		if (fd >= 0)
			close(fd);
		return;
	}
	up.asked = true;
	up.requester = requester;
	up.binary = fd;
}

/* The pending connection's request: root's only; one fd at most. */
static void
request_read(int ep)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} cbuf;
	struct via_admin_req q;
	struct iovec iov = { .iov_base = &q, .iov_len = sizeof(q) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *cm;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int c = up.pending, fd = -1, extra = 0;
	ssize_t n = recvmsg(c, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0 && errno == EAGAIN)
		return;
	epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL);
	up.pending = -1;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t i, nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[4];

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || nfds > 4)
			continue;
		memcpy(fds, CMSG_DATA(cm), nfds * sizeof(int));
		for (i = 0; i < nfds; i++) {
			if (fd < 0) {
				fd = fds[i];
			} else {
				close(fds[i]);
				extra++;
			}
		}
	}
	if (n != (ssize_t)sizeof(q) || q.magic != VIA_ADMIN_MAGIC ||
	    q.version != VIA_ADMIN_VERSION || q.op != VIA_ADMIN_UPGRADE || q.reserved != 0 ||
	    extra != 0 || getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    cred.uid != 0) {
		int rc = n == (ssize_t)sizeof(q) && cred.uid != 0 ? -EPERM : -EPROTO;

		VLOG_WARN("upgrade: a request on the admin socket refused: %s",
			  rc == -EPERM ? "only root may upgrade viad" : "malformed");
		if (fd >= 0)
			close(fd);
		answer(c, VIA_ADMIN_REFUSED, rc, NULL,
		       rc == -EPERM ? "only root may upgrade viad" : "a malformed request");
		return;
	}
	VLOG_INFO("upgrade: asked by pid %d (viactl)", (int)cred.pid);
	ask(c, fd);
}

void
via_upgrade_admin_event(int ep, bool listener, uint64_t conn_key)
{
	if (!listener) {
		request_read(ep);
		return;
	}
	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = conn_key };
		int c = accept4(up.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (c < 0)
			return;
		/* one at a time, as one handover at a time */
		if (up.pending >= 0 || up.asked || epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) != 0) {
			answer(c, VIA_ADMIN_REFUSED, -EBUSY, NULL, "an upgrade is under way");
			continue;
		}
		up.pending = c;
	}
}

void
via_upgrade_signal(void)
{
	if (up.asked)
		return;
	VLOG_INFO("upgrade: asked by SIGUSR2: to the binary at %s", up.exe_path);
	ask(-1, -1);
}

uint32_t
via_upgrade_count(uint64_t *blackout_us)
{
	*blackout_us = up.blackout_us;
	return up.upgrades;
}

bool
via_upgrade_asked(void)
{
	return up.asked;
}

/* ---- the handover -------------------------------------------------------------- */

/* A sealed memfd holding the image. @return the fd, -errno */
static int
image_memfd(const struct via_image_buf *ib)
{
	int fd = memfd_create("viad-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < ib->len) {
		ssize_t n = write(fd, ib->p + off, ib->len - off);

		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/*
 * Execute the binary of @p bin with viad's arguments and `--adopt
 * @p image_fd` (and `--adopt-refused @p refused`), every fd but @p keep
 * (@p nb_keep of them), the image, the old binary and the asker's socket
 * closed by the exec (@p keep NULL: those unknown, no fd is closed). Returns
 * only if the exec failed (-errno); the fds' flags stay changed, which only
 * the next exec reads.
 */
static int
exec_adopt(int bin, int image_fd, const int32_t *keep, uint32_t nb_keep, int rollback_fd,
	   int requester, const char *refused)
{
	char *argv[ARGS_MAX + 8], fdarg[16];
	cpu_set_t mine;
	int i, n = 0, k = 0;
	uint32_t j;

	snprintf(fdarg, sizeof(fdarg), "%d", image_fd);
	/* the options before EAL's "--", where getopt stops */
	for (i = 0; i < up.argc && strcmp(up.argv[i], "--") != 0; i++)
		argv[n++] = up.argv[i];
	argv[n++] = ADOPT_OPT;
	argv[n++] = fdarg;
	if (refused != NULL) {
		argv[n++] = REFUSED_OPT;
		argv[n++] = (char *)refused;
	}
	for (; i < up.argc; i++)
		argv[n++] = up.argv[i];
	argv[n] = NULL;
	/* what EAL, the telemetry, the pools left open goes with the exec */
	if (keep != NULL && close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0)
		return -errno;
	for (j = 0; j < nb_keep; j++)
		k |= fcntl(keep[j], F_SETFD, 0);
	k |= fcntl(image_fd, F_SETFD, 0);
	k |= fcntl(rollback_fd, F_SETFD, 0);
	if (requester >= 0)
		k |= fcntl(requester, F_SETFD, 0);
	if (k != 0)
		return -EBADF;
	/* the new viad places its lcores within the CPUs this one was started
	 * on, not within the main lcore's one CPU (all its poll lcores and
	 * its control thread on one CPU: every round trip after an upgrade
	 * waited for that CPU) */
	if (sched_getaffinity(0, sizeof(mine), &mine) != 0 ||
	    (up.cpus_known && sched_setaffinity(0, sizeof(up.cpus), &up.cpus) != 0))
		return -errno;
	execveat(bin, "", argv, environ, AT_EMPTY_PATH);
	k = -errno;
	(void)!sched_setaffinity(0, sizeof(mine), &mine);
	return k;
}

/* The handover failed before anything was released: viad goes on. */
static void
resume_old(struct viad *d, const int *reap, uint32_t nb_reap, int rc, const char *why)
{
	uint32_t i;
	unsigned s;

	for (i = 0; i < nb_reap; i++)
		via_reap(reap[i], 0);
	__atomic_store_n(&d->parked, false, __ATOMIC_RELEASE);
	for (s = 0; s < d->nb_shards; s++)
		rte_eal_remote_launch(via_poll_main, d, d->shards[s].lcore);
	VLOG_ERR("upgrade refused: %s (%s); viad goes on", why, strerror(-rc));
	answer(up.requester, VIA_ADMIN_REFUSED, rc, NULL, why);
	close(up.binary);
	up.asked = false;
	up.requester = up.binary = -1;
}

void
via_upgrade_run(struct viad *d, int listen_fd)
{
	struct via_image_hdr h = {
		.version = via_image_version, .rollback_fd = up.exe_fd, .admin_fd = up.requester,
		.abi_version = VIA_ABI_VERSION, .pid = getpid(), .wire_version = VIA_WIRE_VERSION,
		.upgrades = up.upgrades + 1,
	};
	struct via_image_buf ib = { 0 };
	struct via_image self;
	const char *why = NULL;
	int *reap = NULL, rc, memfd = -1;
	uint32_t nb_reap = 0;
	unsigned i;

	/* the poll lcores leave their loops, asleep ones woken */
	__atomic_store_n(&d->parked, true, __ATOMIC_RELEASE);
	eventfd_write(d->wake_fd, 1);
	rte_eal_mp_wait_lcore();
	h.frozen_ns = now_ns();
	via_dp_lock_all(d);
	/* posts during the blackout ring doorbells (via_abi.h, pair 6) */
	for (i = 0; i < d->nb_shards; i++)
		via_dp_polled_stop_all(&d->shards[i]);
	rc = via_reap_take(&reap, &nb_reap);
	if (rc == 0)
		rc = via_image_save(d, &ib, listen_fd, reap, nb_reap);
	if (rc == 0)
		rc = via_image_finish(&ib, &h);
	/* the checks the new viad makes, made here first: an image this
	 * binary could not adopt back must never leave it (image.c) */
	if (rc == 0 && (rc = via_image_parse(ib.p, ib.len, via_image_version, &self, &why)) == 0)
		via_image_free(&self);
	else if (rc != 0 && why != NULL)
		VLOG_ERR("upgrade: the image fails its own checks: %s", why);
	if (rc == 0 && (memfd = image_memfd(&ib)) < 0)
		rc = memfd;
	via_dp_unlock_all(d);
	if (rc != 0) {
		resume_old(d, reap, nb_reap, rc,
			   rc == -EFAULT ? "a client took away the pages of a frame in flight "
					   "(its session ends); ask again"
			   : rc == -EBUSY ? "frames wait behind an RDMA Read not answered yet; "
					    "ask again"
					  : "its image could not be written");
		via_image_buf_free(&ib);
		free(reap);
		return;
	}
	VLOG_INFO("upgrade: image of %zu bytes written in %.1f ms; handing over", ib.len,
		  (double)(now_ns() - h.frozen_ns) / 1e6);
	/* from here viad is the new one or the old one again, by exec */
	via_capture_fini();
	via_telemetry_fini();
	via_upgrade_unlisten();
	via_nics_close(d);
	rte_eal_cleanup();
	rc = exec_adopt(up.binary, memfd, ib.fds, ib.nb_fds, up.exe_fd, up.requester, NULL);
	VLOG_ERR("upgrade: the new binary cannot be executed (%s): the old one takes over again",
		 strerror(-rc));
	exec_adopt(up.exe_fd, memfd, ib.fds, ib.nb_fds, up.exe_fd, up.requester,
		   "the new binary could not be executed");
	VLOG_ERR("upgrade: the old binary cannot be executed either: %s; viad exits, its "
		 "clients' sessions end", strerror(errno));
	_exit(1);
}

/* ---- the new side --------------------------------------------------------------- */

/* Give the image back to the binary that wrote it (it refused @p why). Never returns. */
static void __attribute__((noreturn))
rollback(int image_fd, const struct via_image_hdr *h, const struct via_image *img, const char *why)
{
	if (up.refused != NULL || h == NULL) {
		/* this is the old binary already, or no header to trust */
		VLOG_ERR("upgrade: the image cannot be adopted (%s)%s; viad exits, its clients' "
			 "sessions end", why, up.refused != NULL ? " by the old binary either" : "");
		exit(1);
	}
	VLOG_ERR("upgrade: the image is refused (%s): the old binary takes over again", why);
	/* every fd as it came: the old binary needs them all (image.h: the
	 * header's stable part names the binary and the asker) */
	exec_adopt(h->rollback_fd, image_fd, img != NULL ? img->fds : NULL,
		   img != NULL ? img->nb_fds : 0, h->rollback_fd, h->admin_fd, why);
	VLOG_ERR("upgrade: the old binary cannot be executed (%s); viad exits", strerror(errno));
	exit(1);
}

void
via_upgrade_failed(const struct via_image *img, const char *why)
{
	rollback(up.image_fd, img->hdr, img, why);
}

int
via_upgrade_open(int fd, struct via_image *img)
{
	const struct via_image_hdr *h = NULL;
	const char *why = NULL;
	struct stat st;
	void *p = MAP_FAILED;
	int rc;

	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(*h))
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		rollback(fd, NULL, NULL, "the image fd cannot be read");
	up.image_fd = fd;
	up.image = p;
	up.image_len = (size_t)st.st_size;
	if (via_image_check_header(p, up.image_len, &why) == 0)
		h = p;
	rc = via_image_parse(p, up.image_len, via_image_version, img, &why);
	if (rc != 0)
		rollback(fd, h, NULL, why);
	VLOG_INFO("upgrade: adopting an image of %zu bytes (version %u, handover %u of pid %d)%s",
		  up.image_len, h->version, h->upgrades, (int)h->pid,
		  up.refused != NULL ? ", handed back" : "");
	up.upgrades = h->upgrades;
	return 0;
}

void
via_upgrade_adopt(struct viad *d, const struct via_image *img, int *listen_fd)
{
	const struct via_img_daemon *dm = img->daemon;
	const char *why = NULL;
	char link[64], target[64];
	ssize_t n;
	int type = 0, listening = 0, rc;
	socklen_t len = sizeof(int);

	/* the clients' socket, listening; the eventfd clients hold copies of */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dm->wake_fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	if (img->hdr->wire_version != VIA_WIRE_VERSION) {
		why = "an image of another wire version: a restart changes the wire";
		rc = -EPROTO;
	} else if (getsockopt(dm->listen_fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
		   type != SOCK_STREAM ||
		   (len = sizeof(int),
		    getsockopt(dm->listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len)) != 0 ||
		   !listening || strcmp(target, "anon_inode:[eventfd]") != 0) {
		why = "the clients' socket or the pollers' eventfd is not one";
		rc = -EINVAL;
	} else {
		rc = via_image_adopt(d, img, &why);
	}
	if (rc != 0) {
		/* nothing of the image was closed: the old binary gets it whole */
		via_nics_close(d);
		rte_eal_cleanup();
		rollback(up.image_fd, img->hdr, img, why != NULL ? why : strerror(-rc));
	}
	d->wake_fd = dm->wake_fd;
	*listen_fd = dm->listen_fd;
}

void
via_upgrade_resumed(struct viad *d, const struct via_image *img)
{
	struct via_admin_rep r = { .image_version = img->hdr->version,
				   .image_bytes = img->hdr->total_len,
				   .frames = img->nb_recs[VIA_IMG_FRAME] };
	struct via_session *s;
	struct via_vi *vi;
	uint32_t i;

	via_dp_lock_all(d);
	TAILQ_FOREACH(s, &d->session_list, link) {
		r.sessions++;
		TAILQ_FOREACH(vi, &s->vis, link) {
			r.vis++;
			if (vi->state == VIP_STATE_CONNECTED) {
				r.connections++;
				if (via_rel_level(vi))
					via_rel_resume(d, vi);
			}
			/* completions that waited for frames now in the image */
			via_sq_drain(d, vi);
			/* its first turn comes at the first iteration */
			via_dp_ring_again(vi);
		}
	}
	via_dp_unlock_all(d);
	/* what crossed the exec is viad's again, not the next program's */
	for (i = 0; i < img->nb_fds; i++)
		fcntl(img->fds[i], F_SETFD, FD_CLOEXEC);
	for (i = 0; img->reap != NULL && i < img->reap->count; i++)
		via_reap(img->reap_fds[i], 0);
	r.blackout_us = (now_ns() - img->hdr->frozen_ns) / 1000u;
	up.blackout_us = r.blackout_us;
	if (up.refused != NULL) {
		VLOG_WARN("upgrade refused by the new binary (%s): resumed %u sessions, %u VIs, %u "
			  "connections after %.1f ms", up.refused, r.sessions, r.vis, r.connections,
			  (double)r.blackout_us / 1000.0);
		answer(img->hdr->admin_fd, VIA_ADMIN_ROLLED_BACK, 0, &r, up.refused);
	} else {
		char detail[64];

		snprintf(detail, sizeof(detail), "viad %lu.%lu",
			 (unsigned long)VIPL_DPDK_PROVIDER_VERSION >> 16,
			 (unsigned long)VIPL_DPDK_PROVIDER_VERSION & 0xffff);
		VLOG_INFO("upgrade: adopted %u sessions, %u VIs, %u connections, %u frames in flight; "
			  "blackout %.1f ms", r.sessions, r.vis, r.connections, r.frames,
			  (double)r.blackout_us / 1000.0);
		answer(img->hdr->admin_fd, VIA_ADMIN_UPGRADED, 0, &r, detail);
	}
	/* the old binary: no way back from here (a handed-back viad has its own) */
	close(img->hdr->rollback_fd);
	munmap((void *)up.image, up.image_len);
	close(up.image_fd);
	up.image = NULL;
	up.image_fd = -1;
}
