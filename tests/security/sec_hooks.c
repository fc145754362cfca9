/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The attacker's hooks into libvipl-dpdk: see sec_hooks.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "sec_hooks.h"
#include "vipl_priv.h"

int
sec_call(VIP_NIC_HANDLE handle, unsigned op, const void *req, int fd_in, void *rep, int *fd_out)
{
	struct vipl_nic *nic = vipl_nic_get(handle);

	if (nic == NULL)
		return -EINVAL;
	return vipl_ctl_call_fd(nic, op, req, fd_in, rep, fd_out);
}

int
sec_sock(VIP_NIC_HANDLE handle)
{
	struct vipl_nic *nic = vipl_nic_get(handle);

	return nic != NULL ? nic->sock : -1;
}

int
sec_send_fds(int sock, unsigned op, uint32_t seq, const void *body, const int *fds, unsigned n,
	     unsigned cut)
{
	union {
		char buf[CMSG_SPACE(253 * sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	uint8_t msg[sizeof(struct via_ctl_hdr) + VIA_CTL_BODY_MAX] = { 0 };
	struct via_ctl_hdr h;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t len;

	via_ctl_hdr_init(&h, op, 0, seq, 0);
	memcpy(msg, &h, sizeof(h));
	if (body != NULL)
		memcpy(msg + sizeof(h), body, h.len);
	len = sizeof(h) + h.len;
	iov = (struct iovec){ .iov_base = msg, .iov_len = cut != 0 && cut < len ? cut : len };
	if (n > 0) {
		struct cmsghdr *cm;

		if (n > 253)
			return -EINVAL;
		memset(&ctrl, 0, sizeof(ctrl));
		mh.msg_control = ctrl.buf;
		mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)iov.iov_len ? 0 : -errno;
}

int
sec_recv(int sock, unsigned ms)
{
	uint8_t body[VIA_CTL_BODY_MAX];
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct via_ctl_hdr h;
	int rc;

	if (poll(&p, 1, (int)ms) != 1)
		return -ETIMEDOUT;
	rc = via_ctl_recv(sock, &h, body, 1, NULL);
	return rc != 0 ? rc : h.status;
}
