/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control message codec, shared by viad and libvipl-dpdk. One table says
 * what each op carries; framing and validation are driven by it alone.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "via_ctl.h"

struct via_ctl_op_desc {
	const char *name;
	uint16_t req_size;
	uint16_t rep_size;
	uint8_t  fds;       /* FD_REP: the reply carries one fd; FD_REQ: the request may */
};

#define FD_REP 0x1
#define FD_REQ 0x2

#define OP(op_, name_, req_, rep_, fds_) \
	[op_] = { .name = name_, .req_size = req_, .rep_size = rep_, .fds = fds_ }

static const struct via_ctl_op_desc via_ctl_ops[VIA_CTL_OP_COUNT] = {
	OP(VIA_CTL_OPEN, "open", sizeof(struct via_ctl_open_req),
	   sizeof(struct via_ctl_open_rep), FD_REP),
	OP(VIA_CTL_PTAG_CREATE, "ptag_create", 0, sizeof(struct via_ctl_id), 0),
	OP(VIA_CTL_PTAG_DESTROY, "ptag_destroy", sizeof(struct via_ctl_id), 0, 0),
	OP(VIA_CTL_MEM_REGISTER, "mem_register", sizeof(struct via_ctl_mem_register_req),
	   sizeof(struct via_ctl_id), FD_REQ),
	OP(VIA_CTL_MEM_DEREGISTER, "mem_deregister", sizeof(struct via_ctl_mem_ref), 0, 0),
	OP(VIA_CTL_MEM_QUERY, "mem_query", sizeof(struct via_ctl_mem_ref),
	   sizeof(struct via_ctl_mem_attr), 0),
	OP(VIA_CTL_MEM_SET_ATTR, "mem_set_attr", sizeof(struct via_ctl_mem_set_attr_req), 0, 0),
	OP(VIA_CTL_ALLOC, "alloc", sizeof(struct via_ctl_alloc_req),
	   sizeof(struct via_ctl_alloc_rep), FD_REP),
	OP(VIA_CTL_ALLOC_MAPPED, "alloc_mapped", sizeof(struct via_ctl_alloc_mapped_req), 0, 0),
	OP(VIA_CTL_FREE, "free", sizeof(struct via_ctl_id), 0, 0),
	OP(VIA_CTL_CQ_CREATE, "cq_create", sizeof(struct via_ctl_cq_create_req),
	   sizeof(struct via_ctl_cq_create_rep), 0),
	OP(VIA_CTL_CQ_DESTROY, "cq_destroy", sizeof(struct via_ctl_id), 0, 0),
	OP(VIA_CTL_VI_CREATE, "vi_create", sizeof(struct via_ctl_vi_create_req),
	   sizeof(struct via_ctl_vi_create_rep), 0),
	OP(VIA_CTL_VI_DESTROY, "vi_destroy", sizeof(struct via_ctl_id), 0, 0),
	OP(VIA_CTL_VI_QUERY, "vi_query", sizeof(struct via_ctl_id),
	   sizeof(struct via_ctl_vi_query_rep), 0),
	OP(VIA_CTL_VI_SET_ATTR, "vi_set_attr", sizeof(struct via_ctl_vi_set_attr_req), 0, 0),
	OP(VIA_CTL_NS_BY_NAME, "ns_by_name", sizeof(struct via_ctl_ns_by_name_req),
	   sizeof(struct via_ctl_mac), 0),
	OP(VIA_CTL_NS_BY_ADDR, "ns_by_addr", sizeof(struct via_ctl_mac),
	   sizeof(struct via_ctl_ns_by_addr_rep), 0),
	OP(VIA_CTL_SMI_COUNTERS, "smi_counters", 0, sizeof(struct via_ctl_counters), 0),
	OP(VIA_CTL_SMI_PORT, "smi_port", 0, sizeof(struct via_ctl_port_info), 0),
	OP(VIA_CTL_CONN_WAIT, "conn_wait", sizeof(struct via_ctl_conn_wait_req),
	   sizeof(struct via_ctl_conn_wait_rep), 0),
	OP(VIA_CTL_CONN_ACCEPT, "conn_accept", sizeof(struct via_ctl_conn_accept_req), 0, 0),
	OP(VIA_CTL_CONN_REJECT, "conn_reject", sizeof(struct via_ctl_id), 0, 0),
	OP(VIA_CTL_CONN_REQUEST, "conn_request", sizeof(struct via_ctl_conn_request_req),
	   sizeof(struct via_ctl_vi_attr), 0),
	OP(VIA_CTL_DISCONNECT, "disconnect", sizeof(struct via_ctl_id), 0, 0),
	OP(VIA_CTL_PEER_REQUEST, "peer_request", sizeof(struct via_ctl_conn_request_req), 0, 0),
	OP(VIA_CTL_PEER_DONE, "peer_done", sizeof(struct via_ctl_id),
	   sizeof(struct via_ctl_vi_attr), 0),
	OP(VIA_CTL_PEER_WAIT, "peer_wait", sizeof(struct via_ctl_id),
	   sizeof(struct via_ctl_vi_attr), 0),
	OP(VIA_CTL_CQ_RESIZE, "cq_resize", sizeof(struct via_ctl_cq_resize_req),
	   sizeof(struct via_ctl_cq_resize_rep), 0),
	OP(VIA_CTL_WAKE_FD, "wake_fd", 0, 0, FD_REP),
	OP(VIA_CTL_CLIENT_FD, "client_fd", sizeof(struct via_ctl_client_fd_req), 0, FD_REQ),
	OP(VIA_CTL_MEM_TABLE, "mem_table", sizeof(struct via_ctl_mem_table_req),
	   sizeof(struct via_ctl_mem_table_rep), 0),
};

#undef OP

static const struct via_ctl_op_desc *
op_desc(unsigned op)
{
	if (op == 0 || op >= VIA_CTL_OP_COUNT)
		return NULL;
	return &via_ctl_ops[op];
}

size_t
via_ctl_body_size(unsigned op, int reply)
{
	const struct via_ctl_op_desc *d = op_desc(op);

	if (d == NULL)
		return 0;
	return reply ? d->rep_size : d->req_size;
}

int
via_ctl_reply_has_fd(unsigned op)
{
	const struct via_ctl_op_desc *d = op_desc(op);

	return d != NULL && (d->fds & FD_REP);
}

int
via_ctl_request_has_fd(unsigned op)
{
	const struct via_ctl_op_desc *d = op_desc(op);

	return d != NULL && (d->fds & FD_REQ);
}

const char *
via_ctl_op_name(unsigned op)
{
	const struct via_ctl_op_desc *d = op_desc(op);

	return d != NULL ? d->name : "unknown";
}

int
via_ctl_check(const struct via_ctl_hdr *hdr, int reply)
{
	if (hdr->cookie != VIA_CTL_COOKIE || hdr->reserved != 0)
		return -EPROTO;
	if (!!(hdr->flags & VIA_CTL_F_REPLY) != !!reply || (hdr->flags & ~VIA_CTL_F_REPLY))
		return -EPROTO;
	if (!reply && hdr->status != 0)
		return -EPROTO;
	if (op_desc(hdr->op) == NULL)
		return -EOPNOTSUPP;
	if (hdr->len != via_ctl_body_size(hdr->op, reply))
		return -EMSGSIZE;
	return 0;
}

void
via_ctl_hdr_init(struct via_ctl_hdr *hdr, unsigned op, int reply, uint32_t seq, int32_t status)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->cookie = VIA_CTL_COOKIE;
	hdr->op = (uint16_t)op;
	hdr->flags = reply ? VIA_CTL_F_REPLY : 0;
	hdr->seq = seq;
	hdr->status = status;
	hdr->len = (uint32_t)via_ctl_body_size(op, reply);
}

int
via_ctl_send(int sock, const struct via_ctl_hdr *hdr, const void *body, int fd)
{
	struct iovec iov[2] = {
		{ .iov_base = (void *)hdr, .iov_len = sizeof(*hdr) },
		{ .iov_base = (void *)body, .iov_len = hdr->len },
	};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = hdr->len ? 2 : 1 };
	size_t total = sizeof(*hdr) + hdr->len;
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&ctrl, 0, sizeof(ctrl));
		msg.msg_control = ctrl.buf;
		msg.msg_controllen = sizeof(ctrl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	/* A stream socket may take a message in pieces; the fd rides with the
	 * first byte, so later pieces are sent without it. */
	while (total > 0) {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		total -= (size_t)n;
		msg.msg_control = NULL;
		msg.msg_controllen = 0;
		while (n > 0 && msg.msg_iovlen > 0) {
			size_t step = (size_t)n < msg.msg_iov->iov_len ? (size_t)n : msg.msg_iov->iov_len;

			msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + step;
			msg.msg_iov->iov_len -= step;
			n -= (ssize_t)step;
			if (msg.msg_iov->iov_len == 0) {
				msg.msg_iov++;
				msg.msg_iovlen--;
			}
		}
	}
	return 0;
}

/* Read exactly @p len bytes; collect at most one passed fd on the way. */
static int
recv_full(int sock, void *buf, size_t len, int *fd)
{
	size_t got = 0;

	while (got < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 4)];
			struct cmsghdr align;
		} ctrl;
		struct iovec iov = { .iov_base = (char *)buf + got, .iov_len = len - got };
		struct msghdr msg = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctrl.buf, .msg_controllen = sizeof(ctrl.buf),
		};
		struct cmsghdr *cm;
		ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
			size_t nfds, i;

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < nfds; i++) {
				int f;

				memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (*fd < 0)
					*fd = f;
				else
					close(f);  /* more than the one fd we expect */
			}
		}
		got += (size_t)n;
	}
	return 0;
}

int
via_ctl_recv(int sock, struct via_ctl_hdr *hdr, void *body, int reply, int *fd_out)
{
	int fd = -1;
	int rc;

	rc = recv_full(sock, hdr, sizeof(*hdr), &fd);
	if (rc == 0)
		rc = via_ctl_check(hdr, reply);
	if (rc == 0 && hdr->len > 0)
		rc = recv_full(sock, body, hdr->len, &fd);
	if (rc == 0 && fd >= 0 && (fd_out == NULL || !reply || !via_ctl_reply_has_fd(hdr->op))) {
		close(fd);
		fd = -1;
	}
	if (rc != 0 && fd >= 0) {
		close(fd);
		fd = -1;
	}
	if (fd_out != NULL)
		*fd_out = fd;
	return rc;
}

_Static_assert(VIA_CTL_BODY_MAX >= sizeof(struct via_ctl_ns_by_name_req), "body buffer");
_Static_assert(VIA_CTL_BODY_MAX >= sizeof(struct via_ctl_counters), "body buffer");
