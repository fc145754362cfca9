/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: viad's main lcore. It sleeps in epoll on the listening
 * socket, the client sockets and a signalfd; it never spins. Each request is
 * read incrementally (a client that sends half a message cannot block
 * anyone), validated by the codec, dispatched through one table and answered
 * with one reply. A client that breaks the protocol is disconnected, which
 * frees all it held.
 *
 * What a client hands over with a request (SCM_RIGHTS) is judged as it
 * arrives (clientfd.c): viad keeps one fd of a kind it takes, for a request
 * that takes one, and refuses the rest, logged; it never closes a client's
 * fd itself, nor a socket a client may have queued fds in (reap.c). A
 * session is tied to the program that opened it: a request whose program
 * is gone (its /proc/self/mem reaches no address space: an exec, even one
 * a forked child outlives) ends it (docs/design.md section 10).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <linux/futex.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_telemetry.h>
#include <vipl.h>

#include "dp/dp.h"
#include "hosts.h"
#include "runtime.h"
#include "upgrade.h"
#include "viad.h"

/* Objects a client destroys itself are counted here; those freed because
 * the client went away are counted as reclaimed (session.c). */
static int
counted(int rc, uint64_t *counter)
{
	if (rc == 0)
		(*counter)++;
	return rc;
}

typedef int (*via_ctl_handler)(struct viad *d, struct via_session *s, const void *req,
			       void *rep, int *fd_out);

static int
h_open(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_open_req *q = req;
	struct via_ctl_open_rep *r = rep;
	char name[VIA_CTL_NAME_MAX];
	int rc;

	if (q->abi_version != VIA_ABI_VERSION) {
		VLOG_WARN("session %u: pid %d: a library of segment ABI %u, this viad has ABI %u: "
			  "refused (rebuild or update the program's libvipl-dpdk)", s->id,
			  (int)s->pid, q->abi_version, VIA_ABI_VERSION);
		return -EPROTO;
	}
	memcpy(name, q->nic_name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	rc = via_session_open(d, s, name);
	if (rc != 0)
		return rc;
	r->nic = s->nic->info;
	r->shm_size = s->seg.len;
	r->session_id = s->id;
	r->port_index = (uint32_t)(s->nic - d->nics);
	/* a copy goes to the client; viad keeps its own, which an upgrade
	 * hands to the next viad (upgrade.c) */
	*fd_out = fcntl(s->seg.fd, F_DUPFD_CLOEXEC, 0);
	if (*fd_out < 0)
		return -errno;      /* the library closes the session on failure */
	VLOG_INFO("session %u: pid %d uid %u opened %s (%s segment, %llu KiB)", s->id,
		  (int)s->pid, (unsigned)s->uid, s->nic->info.name,
		  s->seg.hugepages ? "hugepage" : "normal-page",
		  (unsigned long long)(s->seg.len >> 10));
	return 0;
}

static int
h_ptag_create(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	struct via_ctl_id *r = rep;

	(void)req;
	(void)fd_out;
	return via_ptag_create(d, s, &r->id);
}

static int
h_ptag_destroy(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;

	(void)rep;
	(void)fd_out;
	return counted(via_ptag_destroy(d, s, q->id), &d->counters.ptags_destroyed);
}

static int
h_mem_register(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_mem_register_req *q = req;
	struct via_ctl_id *r = rep;

	(void)fd_out;
	return via_mr_register(d, s, q, &r->id);
}

static int
h_mem_deregister(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_mem_ref *q = req;

	(void)rep;
	(void)fd_out;
	return counted(via_mr_deregister(d, s, q->addr, q->handle),
		       &d->counters.regions_deregistered);
}

static int
h_mem_query(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_mem_ref *q = req;
	struct via_ctl_mem_attr *r = rep;
	struct via_mr *mr = via_mr_get(d, s, q->addr, q->handle);

	(void)fd_out;
	if (mr == NULL)
		return -ENOENT;
	r->ptag = mr->ptag;
	r->rdma_write = mr->rdma_write;
	r->rdma_read = mr->rdma_read;
	return 0;
}

static int
h_mem_set_attr(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_mem_set_attr_req *q = req;

	(void)rep;
	(void)fd_out;
	return via_mr_set_attr(d, s, q->ref.addr, q->ref.handle, &q->attr);
}

static int
h_mem_table(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_mem_table_req *q = req;

	(void)fd_out;
	return via_mr_table_window(d, s, q->addr, rep);
}

static int
h_alloc(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_alloc_req *q = req;
	struct via_ctl_alloc_rep *r = rep;
	struct via_pmem *p;
	int rc = via_pmem_alloc(d, s, q->len, &p);

	if (rc != 0)
		return rc;
	r->id = p->id;
	r->len = p->shm.len;
	r->hugepages = p->shm.hugepages;
	/* a copy, as for the segment (h_open); none, no allocation */
	*fd_out = fcntl(p->shm.fd, F_DUPFD_CLOEXEC, 0);
	if (*fd_out < 0) {
		rc = -errno;
		via_pmem_free(d, s, p->id);
	}
	return rc;
}

static int
h_alloc_mapped(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_alloc_mapped_req *q = req;

	(void)rep;
	(void)fd_out;
	return via_pmem_mapped(d, s, q->id, q->client_va);
}

static int
h_free(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;

	(void)rep;
	(void)fd_out;
	return via_pmem_free(d, s, q->id);
}

static int
h_cq_create(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_cq_create_req *q = req;
	struct via_ctl_cq_create_rep *r = rep;
	struct via_cq *cq;
	int rc = via_cq_create(d, s, q->entries, &cq);

	(void)fd_out;
	if (rc != 0)
		return rc;
	r->id = cq->id;
	r->capacity = cq->capacity;
	r->shm_off = cq->shm_off;
	return 0;
}

/* VipResizeCQ: under every shard's lock, like every handler (via_ctl_run) */
static int
h_cq_resize(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_cq_resize_req *q = req;
	struct via_ctl_cq_resize_rep *r = rep;

	(void)fd_out;
	return via_cq_resize(d, s, q->id, q->entries, q->cons, &r->slots_off, &r->capacity);
}

static int
h_cq_destroy(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;

	(void)rep;
	(void)fd_out;
	return counted(via_cq_destroy(d, s, q->id), &d->counters.cqs_destroyed);
}

static int
h_vi_create(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	struct via_ctl_vi_create_rep *r = rep;
	struct via_vi *vi;
	int rc = via_vi_create(d, s, req, &vi);

	(void)fd_out;
	if (rc != 0)
		return rc;
	r->id = vi->id;
	r->wq_capacity = vi->wq_capacity;
	r->shm_off = vi->shm_off;
	r->bell = vi->bell;
	r->entry_size = vi->entry_size;
	return 0;
}

static int
h_vi_destroy(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;

	(void)rep;
	(void)fd_out;
	return counted(via_vi_destroy(d, s, q->id), &d->counters.vis_destroyed);
}

static int
h_vi_query(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;
	struct via_ctl_vi_query_rep *r = rep;
	struct via_vi *vi = via_vi_get(d, s, q->id);

	(void)fd_out;
	if (vi == NULL)
		return -ENOENT;
	r->attr = vi->attr;
	r->state = vi->state;
	r->send_empty = via_vi_wq_empty(vi, VIA_WQ_SEND);
	r->recv_empty = via_vi_wq_empty(vi, VIA_WQ_RECV);
	return 0;
}

static int
h_vi_set_attr(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_vi_set_attr_req *q = req;

	(void)rep;
	(void)fd_out;
	return via_vi_set_attr(d, s, q->id, &q->attr);
}

/* The local host name and "localhost" name the NIC the session opened. */
static bool
is_local_name(const char *name)
{
	char host[HOST_NAME_MAX + 1];

	if (strcmp(name, "localhost") == 0)
		return true;
	return gethostname(host, sizeof(host)) == 0 && strcmp(name, host) == 0;
}

static int
h_ns_by_name(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_ns_by_name_req *q = req;
	struct via_ctl_mac *r = rep;
	char name[VIA_CTL_HOSTNAME_MAX];

	(void)fd_out;
	memcpy(name, q->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (via_hosts_by_name(d->hosts, name, q->index, r->mac) == 0)
		return 0;
	if (q->index == 0 && is_local_name(name)) {
		memcpy(r->mac, s->nic->info.mac, sizeof(r->mac));
		return 0;
	}
	return -ENOENT;
}

static int
h_ns_by_addr(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_mac *q = req;
	struct via_ctl_ns_by_addr_rep *r = rep;
	const char *name;

	(void)fd_out;
	if (via_hosts_by_addr(d->hosts, q->mac, &name) == 0) {
		snprintf(r->name, sizeof(r->name), "%s", name);
		return 0;
	}
	if (memcmp(q->mac, s->nic->info.mac, sizeof(q->mac)) == 0 &&
	    gethostname(r->name, sizeof(r->name) - 1) == 0)
		return 0;
	return -ENOENT;
}

static int
h_smi_counters(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	struct via_ctl_counters *r = rep;

	(void)s;
	(void)req;
	(void)fd_out;
	*r = d->counters;
	via_poll_stats_sum(r);
	return 0;
}

static int
h_smi_port(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	(void)d;
	(void)req;
	(void)fd_out;
	via_nic_port_info(s->nic, rep);
	return 0;
}

/* ---- connection management (cm.c does the work) ------------------------ */

static int
h_conn_wait(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	(void)fd_out;
	return via_cm_wait(d, s, req, s->in.hdr.seq, rep);
}

static int
h_conn_accept(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_conn_accept_req *q = req;

	(void)rep;
	(void)fd_out;
	return via_cm_accept(d, s, q->conn, q->vi, s->in.hdr.seq);
}

static int
h_conn_reject(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;

	(void)rep;
	(void)fd_out;
	return via_cm_reject(d, s, q->id);
}

static int
h_conn_request(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	(void)rep;
	(void)fd_out;
	return via_cm_request(d, s, req, s->in.hdr.seq);
}

static int
h_disconnect(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;

	(void)rep;
	(void)fd_out;
	return via_cm_disconnect(d, s, q->id);
}

static int
h_peer_request(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	(void)rep;
	(void)fd_out;
	return via_cm_peer_request(d, s, req);
}

static int
h_peer_done(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;

	(void)fd_out;
	return via_cm_peer_done(d, s, q->id, 0, rep);
}

static int
h_peer_wait(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_id *q = req;

	(void)fd_out;
	return via_cm_peer_done(d, s, q->id, s->in.hdr.seq, rep);
}

/* The poller's eventfd, for clients to wake it when it sleeps (adaptive). */
static int
h_wake_fd(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	(void)s;
	(void)req;
	(void)rep;
	/* a copy: dispatch closes what it sent */
	*fd_out = fcntl(d->wake_fd, F_DUPFD_CLOEXEC, 0);
	return *fd_out < 0 ? -errno : 0;
}

/*
 * Whether the program of session @p s is exiting, for the log line of its
 * witness's hang-up: a killed program closes its files (the witness pipe)
 * before its pidfd says it exited, so the kernel's PF_EXITING flag (field 9
 * of /proc/PID/stat) is looked at too. Decides nothing but words.
 */
static bool
session_exiting(const struct via_session *s)
{
	struct pollfd p = { .fd = s->pidfd, .events = POLLIN };
	char path[64], buf[512], *end;
	unsigned long flags = 0;
	ssize_t n;
	int fd;

	if (poll(&p, 1, 0) > 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)s->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* after the command name, which may hold anything: state, ppid,
	 * pgrp, session, tty, tpgid, flags */
	end = strrchr(buf, ')');
	return end == NULL ||
	       (sscanf(end + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
		(flags & 0x4 /* PF_EXITING */) != 0);
}

/* epoll keys besides session ids */
#define EP_LISTEN  UINT64_MAX
#define EP_SIGNAL  (UINT64_MAX - 1)
#define EP_CM      (UINT64_MAX - 2)  /* viad.cm_fd: frames for the connection manager */
#define EP_GUARD   (UINT64_MAX - 3)  /* guard.c: a bus error in a client's memory */
#define EP_ADMIN   (UINT64_MAX - 4)  /* upgrade.c: the admin socket */
#define EP_ADMIN_CONN (UINT64_MAX - 5) /* upgrade.c: an admin connection's request */
#define EP_PIDFD   (1ull << 32)      /* | session id: the session's process exited */
#define EP_WITNESS (2ull << 32)      /* | session id: its program exec'd or exited */

/* the control thread's epoll set (via_ctl_run) */
static int ctl_epoll = -1;

/* The read end of a pipe: its hang-up ends the session. @return 0, -errno */
static int
watch_witness(struct via_session *s, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EP_WITNESS | s->id };

	return epoll_ctl(ctl_epoll, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

static const char *const client_fd_names[] = {
	[VIA_CTL_FD_SHARE_FILE] = "the share file",
	[VIA_CTL_FD_PROC_MEM] = "its /proc/self/mem",
	[VIA_CTL_FD_EXEC_WITNESS] = "the exec witness",
};

/* CLIENT_FD: keep one of the client program's fds (via_ctl.h says which). */
static int
h_client_fd(struct viad *d, struct via_session *s, const void *req, void *rep, int *fd_out)
{
	const struct via_ctl_client_fd_req *q = req;
	const char *why;
	int *slot, rc;

	(void)rep;
	(void)fd_out;
	rc = via_client_fd_check(s, q->kind, &slot, &why);
	if (rc == 0 && slot == &s->witness_fd && (rc = watch_witness(s, s->in_fd)) != 0)
		why = "epoll";
	if (rc != 0) {
		if (s->in_fd >= 0)
			d->sec.fds_refused++;
		VLOG_WARN("session %u (pid %d, uid %u): %s refused as %s: %s (%s)", s->id,
			  (int)s->pid, (unsigned)s->uid, s->in_fd >= 0 ? s->in_fd_info.what : "no fd",
			  q->kind < sizeof(client_fd_names) / sizeof(client_fd_names[0]) &&
				  client_fd_names[q->kind] != NULL ? client_fd_names[q->kind]
								     : "a kind of none",
			  why, strerror(-rc));
		return rc;
	}
	*slot = s->in_fd;
	s->in_fd = -1;
	return 0;
}

static const via_ctl_handler handlers[VIA_CTL_OP_COUNT] = {
	[VIA_CTL_OPEN] = h_open,
	[VIA_CTL_PTAG_CREATE] = h_ptag_create,
	[VIA_CTL_PTAG_DESTROY] = h_ptag_destroy,
	[VIA_CTL_MEM_REGISTER] = h_mem_register,
	[VIA_CTL_MEM_DEREGISTER] = h_mem_deregister,
	[VIA_CTL_MEM_QUERY] = h_mem_query,
	[VIA_CTL_MEM_SET_ATTR] = h_mem_set_attr,
	[VIA_CTL_ALLOC] = h_alloc,
	[VIA_CTL_ALLOC_MAPPED] = h_alloc_mapped,
	[VIA_CTL_FREE] = h_free,
	[VIA_CTL_CQ_CREATE] = h_cq_create,
	[VIA_CTL_CQ_DESTROY] = h_cq_destroy,
	[VIA_CTL_VI_CREATE] = h_vi_create,
	[VIA_CTL_VI_DESTROY] = h_vi_destroy,
	[VIA_CTL_VI_QUERY] = h_vi_query,
	[VIA_CTL_VI_SET_ATTR] = h_vi_set_attr,
	[VIA_CTL_NS_BY_NAME] = h_ns_by_name,
	[VIA_CTL_NS_BY_ADDR] = h_ns_by_addr,
	[VIA_CTL_SMI_COUNTERS] = h_smi_counters,
	[VIA_CTL_SMI_PORT] = h_smi_port,
	[VIA_CTL_CONN_WAIT] = h_conn_wait,
	[VIA_CTL_CONN_ACCEPT] = h_conn_accept,
	[VIA_CTL_CONN_REJECT] = h_conn_reject,
	[VIA_CTL_CONN_REQUEST] = h_conn_request,
	[VIA_CTL_DISCONNECT] = h_disconnect,
	[VIA_CTL_PEER_REQUEST] = h_peer_request,
	[VIA_CTL_PEER_DONE] = h_peer_done,
	[VIA_CTL_PEER_WAIT] = h_peer_wait,
	[VIA_CTL_CQ_RESIZE] = h_cq_resize,
	[VIA_CTL_WAKE_FD] = h_wake_fd,
	[VIA_CTL_CLIENT_FD] = h_client_fd,
	[VIA_CTL_MEM_TABLE] = h_mem_table,
};

_Static_assert(sizeof(handlers) / sizeof(handlers[0]) == VIA_CTL_OP_COUNT, "one handler per op");

/* The requests whose handler may answer later (VIA_CTL_DEFERRED): each
 * waiting one counts against its user's limits.user_max_requests. */
static const bool may_defer[VIA_CTL_OP_COUNT] = {
	[VIA_CTL_CONN_WAIT] = true,
	[VIA_CTL_CONN_ACCEPT] = true,
	[VIA_CTL_CONN_REQUEST] = true,
	[VIA_CTL_PEER_WAIT] = true,
};

/* End a session: its connections first (peers are told), then its objects. */
static void
session_end(struct viad *d, struct via_session *s)
{
	struct via_vi *vi;

	via_cm_session_closed(d, s);
	/* frames kept for retransmission go back to the pool */
	TAILQ_FOREACH(vi, &s->vis, link)
		via_dp_vi_reset(vi);
	/* out of the epoll set now, the client told at once: the reapers
	 * close the socket and the witness later */
	epoll_ctl(ctl_epoll, EPOLL_CTL_DEL, s->sock, NULL);
	if (s->witness_fd >= 0)
		epoll_ctl(ctl_epoll, EPOLL_CTL_DEL, s->witness_fd, NULL);
	shutdown(s->sock, SHUT_RDWR);
	via_session_close(d, s);
}

/* Disconnect a client that broke the protocol: everything it held goes. */
static void
violation(struct viad *d, struct via_session *s, const char *why, int err)
{
	VLOG_WARN("session %u (pid %d): %s (%s); disconnecting", s->id, (int)s->pid, why,
		  strerror(-err));
	d->counters.clients_disconnected_for_violation++;
	session_end(d, s);
}

void
via_ctl_reply(struct viad *d, struct via_session *s, unsigned op, uint32_t seq, int status,
	      const void *body)
{
	uint8_t zero[VIA_CTL_BODY_MAX] = { 0 };
	struct via_ctl_hdr rh;

	if (status != 0) {
		d->counters.control_errors++;
		body = NULL;
	}
	/* a deferred request is answered: no longer waiting (dispatch) */
	if (s->deferred > 0) {
		s->deferred--;
		via_user_uncharge(d, s, VIA_USER_REQUESTS, 1);
	}
	via_ctl_hdr_init(&rh, op, 1, seq, status);
	/* never block, never close here (a deferred reply may come from deep
	 * in the connection manager); a client that does not read its replies
	 * is shut down and the control thread ends its session when it sees
	 * the hang-up */
	if (via_ctl_send(s->sock, &rh, body != NULL ? body : zero, -1) != 0)
		shutdown(s->sock, SHUT_RDWR);
}

/* Refused fds a session gets logged, at most (a flood of them is not). */
#define FD_REFUSALS_LOGGED 16

/*
 * Refuse the fd in *@p fd (it becomes -1): logged as @p what, @p why and
 * @p extra (@p what NULL: not logged; @p extra NULL: none), counted, the
 * request it came with fails, and the fd is closed by a reaper. A socket
 * is closed without lingering: its unsent data, if it has any, is dropped
 * rather than waited for.
 */
static void
fd_refuse(struct viad *d, struct via_session *s, int *fd, const char *what, const char *why,
	  const char *extra)
{
	struct linger abort_close = { .l_onoff = 1, .l_linger = 0 };

	d->sec.fds_refused++;
	s->in_fd_refused = true;
	if (what != NULL && s->fd_refusals_logged < FD_REFUSALS_LOGGED) {
		VLOG_WARN("session %u (pid %d, uid %u): fd refused: %s, %s%s%s%s", s->id, (int)s->pid,
			  (unsigned)s->uid, what, why, extra != NULL ? " (" : "",
			  extra != NULL ? extra : "", extra != NULL ? ")" : "");
		if (++s->fd_refusals_logged == FD_REFUSALS_LOGGED)
			VLOG_WARN("session %u: its further refused fds are not logged", s->id);
	}
	/* ENOTSOCK for anything else */
	setsockopt(*fd, SOL_SOCKET, SO_LINGER, &abort_close, sizeof(abort_close));
	via_reap(*fd, s->id);
	*fd = -1;
}

static void
dispatch(struct viad *d, struct via_session *s)
{
	const struct via_ctl_hdr *q = &s->in.hdr;
	uint8_t rep[VIA_CTL_BODY_MAX];
	struct via_ctl_hdr rh;
	int fd = -1;
	int rc;

	memset(rep, 0, sizeof(rep));
	/* the session is its program's: once that is gone (exec, exit), not
	 * another program's that kept the socket */
	if (s->opened && !via_procmem_alive(s)) {
		d->sec.programs_gone++;
		VLOG_WARN("session %u (pid %d, uid %u): the program that opened the session is gone "
			  "(its address space was replaced by an exec, or ended), yet its socket "
			  "sends %s: the session ends", s->id, (int)s->pid, (unsigned)s->uid,
			  via_ctl_op_name(q->op));
		session_end(d, s);
		return;
	}
	if (s->in_fd >= 0 && !via_ctl_request_has_fd(q->op))
		fd_refuse(d, s, &s->in_fd, s->in_fd_info.what, "with a request that takes none",
			  via_ctl_op_name(q->op));
	if (s->in_fd_refused) {
		rc = -EBADF;
	} else if (!s->opened && q->op != VIA_CTL_OPEN) {
		rc = -ENOTCONN;
	} else if (may_defer[q->op]) {
		/* charged while it may wait; uncharged at its reply */
		rc = via_user_charge(d, s, VIA_USER_REQUESTS, 1);
		if (rc == 0) {
			rc = handlers[q->op](d, s, s->in.body, rep, &fd);
			if (rc == VIA_CTL_DEFERRED)
				s->deferred++;
			else
				via_user_uncharge(d, s, VIA_USER_REQUESTS, 1);
		}
	} else {
		rc = handlers[q->op](d, s, s->in.body, rep, &fd);
	}
	if (rc == VIA_CTL_DEFERRED)
		return;      /* answered later with via_ctl_reply() */
	if (rc != 0) {
		d->counters.control_errors++;
		memset(rep, 0, sizeof(rep));
		VLOG_DBG("session %u: %s: %s", s->id, via_ctl_op_name(q->op), strerror(-rc));
	}
	/* a request's fd is the handler's to keep; one it did not keep goes */
	via_reap(s->in_fd, s->id);
	s->in_fd = -1;
	s->in_fd_refused = false;
	via_ctl_hdr_init(&rh, q->op, 1, q->seq, rc);
	rc = via_ctl_send(s->sock, &rh, rep, fd);
	/* only a successful OPEN, ALLOC or WAKE_FD carries an fd, viad's own
	 * memfd or eventfd, which was the handler's to give: closed once sent */
	if (fd >= 0)
		close(fd);
	if (rc != 0) {
		/* EAGAIN: the client does not read its replies */
		VLOG_INFO("session %u: reply lost (%s); closing", s->id, strerror(-rc));
		session_end(d, s);
	}
}

/* The kernel passes at most this many fds with one message (SCM_MAX_FD):
 * room for all, since one the buffer cannot take would be released right
 * here, on the control thread, by the kernel */
#define SCM_FDS_MAX 253

/* The @p n fds of one SCM_RIGHTS message: one of a kind viad takes becomes
 * the request's in_fd; any other, and every fd of a message of several, is
 * refused. */
static void
fds_take(struct viad *d, struct via_session *s, int *fds, size_t n)
{
	char what[64];
	size_t i;

	if (n > 1 || s->in_fd >= 0 || s->in_fd_refused) {
		snprintf(what, sizeof(what), "%zu fds in one message", n + (s->in_fd >= 0));
		for (i = 0; i < n; i++)
			fd_refuse(d, s, &fds[i], i == 0 ? what : NULL,
				  "a request carries one at most", NULL);
		if (s->in_fd >= 0)
			fd_refuse(d, s, &s->in_fd, NULL, NULL, NULL);
		return;
	}
	if (via_fd_classify(fds[0], &s->in_fd_info) == VIA_FD_REFUSED) {
		fd_refuse(d, s, &fds[0], s->in_fd_info.what,
			  "not a memfd, a /proc/PID/mem or a pipe", NULL);
		return;
	}
	s->in_fd = fds[0];
}

/*
 * recv() that also takes the fds passed with the bytes (fds_take()), for
 * the request being read.
 */
static ssize_t
recv_with_fd(struct viad *d, struct via_session *s, void *buf, size_t len)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(SCM_FDS_MAX * sizeof(int))];
	} cbuf;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	ssize_t n = recvmsg(s->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	struct cmsghdr *cm;

	if (n < 0)
		return n;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		int fds[SCM_FDS_MAX];
		size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || nfds == 0 ||
		    nfds > SCM_FDS_MAX)
			continue;
		memcpy(fds, CMSG_DATA(cm), nfds * sizeof(int));
		fds_take(d, s, fds, nfds);
	}
	return n;
}

/* Read what is available; dispatch each complete message. */
static void
session_readable(struct viad *d, struct via_session *s)
{
	struct via_ctl_inbuf *in = &s->in;

	for (;;) {
		size_t want = sizeof(in->hdr) + (in->got >= sizeof(in->hdr) ? in->hdr.len : 0);
		uint8_t *dst = in->got < sizeof(in->hdr) ? (uint8_t *)&in->hdr + in->got
							 : in->body + (in->got - sizeof(in->hdr));
		ssize_t n = recv_with_fd(d, s, dst, want - in->got);
		int rc;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			VLOG_INFO("session %u (pid %d): closed", s->id, (int)s->pid);
			session_end(d, s);
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN)
				return;
			continue;
		}
		in->got += (size_t)n;
		if (in->got == sizeof(in->hdr)) {
			rc = via_ctl_check(&in->hdr, 0);
			if (rc != 0) {
				violation(d, s, "malformed request header", rc);
				return;
			}
		}
		if (in->got < sizeof(in->hdr) || in->got < sizeof(in->hdr) + in->hdr.len)
			continue;
		in->got = 0;
		/* one request per wake-up: dispatch may close the session, and
		 * epoll is level-triggered, so what is left is read next time */
		dispatch(d, s);
		return;
	}
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77   /* Linux 6.5; the libc headers of Debian 12 predate it */
#endif

/*
 * A pidfd of the process at the other end of @p sock: the one that
 * connected (SO_PEERPIDFD), which no pid reuse can swap for another; on an
 * older kernel, one opened from its pid (@p pid, read at connect).
 * @return the fd, or -1 with errno
 */
static int
peer_pidfd(int sock, pid_t pid)
{
	socklen_t len = sizeof(int);
	int fd = -1;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0) {
		/* not inherited by what viad might exec */
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) == 0)
			return fd;
		close(fd);
	}
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* ---- who may connect (issue 14) ------------------------------------------ */

#define ACCESS_MAX 64

/* viad.allowed_uids and viad.allowed_gids, resolved at start */
static struct {
	uid_t uids[ACCESS_MAX];
	unsigned nb_uids;
	gid_t gids[ACCESS_MAX];
	unsigned nb_gids;
} allowed;

/* A uid or gid: a number, or a name of the passwd or group database. @return 0, -ENOENT */
static int
id_of(const char *name, bool group, unsigned *id)
{
	char *end;
	unsigned long n = strtoul(name, &end, 10);

	if (*name != '\0' && *end == '\0' && n < UINT32_MAX) {
		*id = (unsigned)n;
		return 0;
	}
	if (group) {
		struct group *g = getgrnam(name);

		if (g == NULL)
			return -ENOENT;
		*id = g->gr_gid;
	} else {
		struct passwd *pw = getpwnam(name);

		if (pw == NULL)
			return -ENOENT;
		*id = pw->pw_uid;
	}
	return 0;
}

/* Parse a comma-separated list of @p key into @p ids. @return 0, -EINVAL (logged) */
static int
id_list(const char *key, const char *list, bool group, unsigned *ids, unsigned *nb)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	*nb = 0;
	for (tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
		if (*nb == ACCESS_MAX || id_of(tok, group, &ids[*nb]) != 0) {
			VLOG_ERR("viad.%s: \"%s\" %s", key, tok,
				 *nb == ACCESS_MAX ? "is one too many" : "is no known id or name");
			return -EINVAL;
		}
		(*nb)++;
	}
	return 0;
}

static int
access_init(const struct via_conf *c)
{
	_Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned),
		       "ids are unsigned ints");
	int rc = id_list("allowed_uids", c->allowed_uids, false, (unsigned *)allowed.uids,
			 &allowed.nb_uids);

	return rc != 0 ? rc : id_list("allowed_gids", c->allowed_gids, true,
				      (unsigned *)allowed.gids, &allowed.nb_gids);
}

/*
 * The group of the socket: @p group's id, or root's. A group that does not
 * exist leaves viad to root, with a warning: a default "vipl" that was never
 * created must not open viad to everyone.
 */
static unsigned
socket_gid(const char *group)
{
	unsigned gid = 0;

	if (group[0] != '\0' && id_of(group, true, &gid) != 0)
		VLOG_WARN("viad.socket_group \"%s\" does not exist: only root may connect "
			  "(create it: groupadd %s)", group, group);
	return gid;
}

/*
 * The socket file (mode 0660) or the directory viad made for it (0750, as
 * tmpfiles.d makes /run/viad: config/viad.tmpfiles): owned by root and the
 * socket's group @p gid, so that the kernel lets root and the group's
 * members connect and nobody else.
 */
static int
socket_owner(const char *path, unsigned gid, mode_t mode)
{
	if (chown(path, 0, (gid_t)gid) != 0 || chmod(path, mode) != 0) {
		int err = -errno;

		VLOG_ERR("%s: cannot set owner root:%u, mode %04o: %s", path, gid, (unsigned)mode,
			 strerror(-err));
		return err;
	}
	return 0;
}

/* Whether viad's own lists let a client in: credentials @p cred, and
 * @p nb_groups supplementary groups @p groups. */
static bool
access_allowed(const struct ucred *cred, const gid_t *groups, unsigned nb_groups)
{
	unsigned i, j;

	if (cred->uid == 0 || (allowed.nb_uids == 0 && allowed.nb_gids == 0))
		return true;
	for (i = 0; i < allowed.nb_uids; i++)
		if (allowed.uids[i] == cred->uid)
			return true;
	/* the primary group, then the supplementary ones */
	for (i = 0; i < allowed.nb_gids; i++) {
		if (allowed.gids[i] == cred->gid)
			return true;
		for (j = 0; j < nb_groups; j++)
			if (allowed.gids[i] == groups[j])
				return true;
	}
	return false;
}

/* held so that a client can still be refused when viad is out of fds */
static int reserve_fd = -1;

/* A session's socket, its process's pidfd and its exec witness in epoll set
 * @p ep. @return 0, -errno */
static int
session_watch(int ep, struct via_session *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = s->id };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, s->sock, &ev) != 0)
		return -errno;
	ev.data.u64 = EP_PIDFD | s->id;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, s->pidfd, &ev) != 0)
		return -errno;
	if (s->witness_fd < 0)
		return 0;
	ev.data.u64 = EP_WITNESS | s->id;
	return epoll_ctl(ep, EPOLL_CTL_ADD, s->witness_fd, &ev) == 0 ? 0 : -errno;
}

static void
session_accept(struct viad *d, int lfd, int ep)
{
	gid_t groups[VIA_SESSION_GROUPS];
	socklen_t glen = sizeof(groups);
	struct via_session *s;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	unsigned nb_groups;
	int sock;

	/* a client's socket may hold fds it queued already: the reapers close
	 * those of the clients refused here too */
	sock = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (sock < 0 && (errno == EMFILE || errno == ENFILE) && reserve_fd >= 0) {
		/* out of descriptors: the pending connection would make epoll
		 * report the listening socket forever. Free the reserve,
		 * refuse the client cleanly, take the reserve back. */
		VLOG_WARN("accept: out of file descriptors; refusing a client");
		close(reserve_fd);
		sock = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (sock >= 0) {
			shutdown(sock, SHUT_RDWR);
			via_reap(sock, 0);
		}
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return;
	}
	if (sock < 0)
		return;
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		VLOG_WARN("accept: SO_PEERCRED: %s", strerror(errno));
		via_reap(sock, 0);
		return;
	}
	/* the supplementary groups (Linux 4.13), for allowed_gids and SysV
	 * permissions; more than viad keeps count as none */
	nb_groups = getsockopt(sock, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0
			    ? (unsigned)(glen / sizeof(gid_t)) : 0;
	if (!access_allowed(&cred, groups, nb_groups)) {
		VLOG_WARN("accept: pid %d uid %u gid %u refused: not in viad.allowed_uids or "
			  "viad.allowed_gids", (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.gid);
		via_reap(sock, 0);
		return;
	}
	if (via_session_new(d, sock, &s) != 0) {
		VLOG_WARN("accept: pid %d refused: session limit (%u) reached", (int)cred.pid,
			  d->conf.max_sessions);
		via_reap(sock, 0);
		return;
	}
	s->pid = cred.pid;
	s->uid = cred.uid;
	s->gid = cred.gid;
	memcpy(s->groups, groups, nb_groups * sizeof(gid_t));
	s->nb_groups = nb_groups;
	/* the user's sessions (limits.user_max_sessions): refused as above,
	 * the client's VipOpenNic fails with VIP_ERROR_RESOURCE */
	if (via_user_attach(d, s) != 0) {
		session_end(d, s);
		return;
	}
	/*
	 * The session is the process, not the socket: a child may inherit the
	 * socket and outlive it, and its pid may then be reused by another
	 * process. The pidfd says when the process exits; the session ends
	 * then (and when its program execs: the witness, the mem fd).
	 */
	s->pidfd = peer_pidfd(sock, cred.pid);
	if (s->pidfd < 0) {
		VLOG_WARN("accept: pid %d: pidfd_open: %s; refused", (int)cred.pid,
			  strerror(errno));
		session_end(d, s);
		return;
	}
	if (session_watch(ep, s) != 0)
		session_end(d, s);
}

int
via_ctl_listen(struct viad *d, int *lfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = d->conf.socket_path;
	char dir[sizeof(sa.sun_path)];
	unsigned gid;
	char *slash;
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	gid = socket_gid(d->conf.socket_group);
	strcpy(sa.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0750) == 0) {
			rc = socket_owner(dir, gid, 0750);
			if (rc != 0)
				return rc;
		} else if (errno != EEXIST) {
			return -errno;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a socket file left by a dead viad is removed; a live one, or a
	 * file that is no socket, is not (runtime.h) */
	rc = via_socket_claim(path);
	if (rc != 0) {
		close(fd);
		return rc;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	rc = socket_owner(path, gid, 0660);
	if (rc != 0) {
		close(fd);
		unlink(path);
		return rc;
	}
	*lfd = fd;
	return 0;
}

static void
futex_wake_all(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Tell every client viad is going: waits return, later calls fail. */
static void
announce_stop(struct viad *d)
{
	struct via_session *s;

	TAILQ_FOREACH(s, &d->session_list, link) {
		struct via_shm_header *h = (struct via_shm_header *)s->seg.va;
		struct via_cq *cq;
		struct via_vi *vi;

		if (!s->opened)
			continue;
		__atomic_store_n(&h->daemon_state, VIA_DAEMON_STOPPING, __ATOMIC_SEQ_CST);
		futex_wake_all(&h->daemon_state);
		TAILQ_FOREACH(cq, &s->cqs, link)
			futex_wake_all(&cq->sh->wait.seq);
		TAILQ_FOREACH(vi, &s->vis, link) {
			futex_wake_all(&vi->sh->wq[VIA_WQ_SEND].done.seq);
			futex_wake_all(&vi->sh->wq[VIA_WQ_RECV].done.seq);
		}
	}
}


/* ---- what clients tried (docs/design.md section 10) -------------------- */

static const struct viad *sec_viad;

/* telemetry /viad/security: read without a lock, each counter on its own */
static int
tel_security(const char *cmd, const char *params, struct rte_tel_data *r)
{
	const struct viad *d = sec_viad;

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_u64(r, "fds_refused",
				  __atomic_load_n(&d->sec.fds_refused, __ATOMIC_RELAXED));
	rte_tel_data_add_dict_u64(r, "bus_errors", via_guard_faults());
	rte_tel_data_add_dict_u64(r, "programs_gone",
				  __atomic_load_n(&d->sec.programs_gone, __ATOMIC_RELAXED));
	rte_tel_data_add_dict_u64(r, "mappings", __atomic_load_n(&d->mappings, __ATOMIC_RELAXED));
	rte_tel_data_add_dict_u64(r, "max_mappings", d->host.max_mappings);
	return 0;
}

/* Bus errors in clients' memory (guard.c): each ends its session. */
static void
guard_faults(struct viad *d)
{
	const char *what;
	uint64_t addr;
	uint32_t id;

	while (via_guard_next_fault(&id, &addr, &what)) {
		struct via_session *s = via_idtab_lookup(&d->sessions, id);

		d->sec.bus_errors++;
		if (s == NULL) {
			VLOG_WARN("bus error (SIGBUS) at %#" PRIx64 " in %s of session %u, which has "
				  "ended", addr, what, id);
			continue;
		}
		VLOG_WARN("session %u (pid %d, uid %u): bus error (SIGBUS) at %#" PRIx64 " in %s: "
			  "the client took pages away under viad's mapping; the session ends",
			  s->id, (int)s->pid, (unsigned)s->uid, addr, what);
		session_end(d, s);
	}
}

/* The guard's table at most: 40 MiB of address space, faulted in as used */
#define GUARD_SLOTS_MAX (1u << 20)

int
via_ctl_init(struct viad *d)
{
	int rc;

	rc = access_init(&d->conf);
	if (rc != 0)
		return rc;
	via_user_init(d);
	/* a slot for every mapping viad makes of clients' memory (past
	 * GUARD_SLOTS_MAX, one more is not guarded) */
	rc = via_guard_init(d->host.max_mappings != 0 && d->host.max_mappings < GUARD_SLOTS_MAX
				    ? (uint32_t)d->host.max_mappings : GUARD_SLOTS_MAX);
	if (rc == 0)
		rc = via_reap_start();
	if (rc != 0) {
		VLOG_ERR("the control thread: %s", strerror(-rc));
		return rc;
	}
	sec_viad = d;
	rc = rte_telemetry_register_cmd("/viad/security", tel_security,
					"viad: what clients tried and viad refused. No parameters");
	if (rc != 0)
		VLOG_WARN("telemetry: /viad/security: %s", strerror(rc < 0 ? -rc : rc));
	return 0;
}

int
via_ctl_run(struct viad *d, int lfd)
{
	struct epoll_event ev[32];
	struct via_session *s;
	sigset_t sigs;
	int ep, sfd, n, i;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR2);
	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || ep < 0)
		return -errno;
	ctl_epoll = ep;
	/* the sessions an upgrade handed over (section 18); none at a start */
	TAILQ_FOREACH(s, &d->session_list, link) {
		n = session_watch(ep, s);
		if (n != 0) {
			VLOG_ERR("session %u: epoll: %s", s->id, strerror(-n));
			return n;
		}
	}
	n = via_upgrade_listen(ep, EP_ADMIN, d->conf.upgrades);
	if (n != 0)
		VLOG_WARN("admin socket (viactl upgrade): %s", strerror(-n));
	ev[0].events = EPOLLIN;
	ev[0].data.u64 = EP_LISTEN;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev[0]);
	ev[0].data.u64 = EP_SIGNAL;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev[0]);
	ev[0].data.u64 = EP_CM;
	epoll_ctl(ep, EPOLL_CTL_ADD, d->cm_fd, &ev[0]);
	ev[0].data.u64 = EP_GUARD;
	epoll_ctl(ep, EPOLL_CTL_ADD, via_guard_fd(), &ev[0]);
	VLOG_INFO("listening on %s", d->conf.socket_path);

	while (!d->stopping) {
		int timeout;

		via_reap_watch();
		/* allocations the poll lcores' last zero-copy frames released */
		via_pmem_reap();
		via_dp_lock_all(d);
		{
			uint64_t now = via_now_ms();
			int cm = via_cm_timers(d, now), watch = via_nics_watch(d, now);

			timeout = cm >= 0 && cm < watch ? cm : watch;
		}
		via_dp_unlock_all(d);
		n = epoll_wait(ep, ev, (int)(sizeof(ev) / sizeof(ev[0])), timeout);
		/* everything below may touch what the data path reads */
		via_dp_lock_all(d);
		for (i = 0; i < n; i++) {
			uint64_t key = ev[i].data.u64;

			if (key == EP_LISTEN) {
				session_accept(d, lfd, ep);
			} else if (key == EP_GUARD) {
				guard_faults(d);
			} else if (key == EP_CM) {
				uint64_t cnt;

				if (read(d->cm_fd, &cnt, sizeof(cnt)) > 0)
					via_dp_cm_input(d);
			} else if (key == EP_SIGNAL) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
					continue;
				if (si.ssi_signo == SIGUSR2) {
					via_upgrade_signal();
					continue;
				}
				VLOG_INFO("signal %u: shutting down", si.ssi_signo);
				__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
			} else if (key == EP_ADMIN || key == EP_ADMIN_CONN) {
				via_upgrade_admin_event(ep, key == EP_ADMIN, EP_ADMIN_CONN);
			} else {
				/* a session closed earlier in this batch is gone
				 * from the table: its id no longer resolves */
				s = via_idtab_lookup(&d->sessions, (uint32_t)key);
				if (s != NULL && (key & EP_PIDFD)) {
					VLOG_INFO("session %u (pid %d): the process exited", s->id,
						  (int)s->pid);
					session_end(d, s);
				} else if (s != NULL && (key & EP_WITNESS)) {
					/* its memory is another program's now: no access
					 * to it may outlive the one that registered it */
					if (session_exiting(s))
						VLOG_INFO("session %u (pid %d): the process exited",
							  s->id, (int)s->pid);
					else
						VLOG_WARN("session %u (pid %d): the program was "
							  "replaced (exec) or closed the library; the "
							  "session ends", s->id, (int)s->pid);
					session_end(d, s);
				} else if (s != NULL) {
					session_readable(d, s);
				}
			}
		}
		via_dp_unlock_all(d);
		/* what was just done (a new session, frames queued to the self
		 * ring) may be work for a poller asleep in adaptive mode */
		if (n > 0 && __atomic_load_n(&d->poller_asleep, __ATOMIC_SEQ_CST))
			eventfd_write(d->wake_fd, 1);
		/* between two batches: every request read so far is answered
		 * or waits deferred (section 18); returns only if refused */
		if (via_upgrade_asked() && !d->stopping)
			via_upgrade_run(d, lfd);
	}
	via_dp_lock_all(d);
	announce_stop(d);
	while ((s = TAILQ_FIRST(&d->session_list)) != NULL)
		session_end(d, s);
	via_dp_unlock_all(d);
	via_reap_stop(2000);
	via_guard_fini();
	via_upgrade_unlisten();
	close(ep);
	close(sfd);
	close(lfd);
	if (reserve_fd >= 0)
		close(reserve_fd);
	unlink(d->conf.socket_path);
	return 0;
}
