/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control-message codec (abi/via_ctl.c) on a hostile byte stream.
 *
 * Input: one control byte, one chunk-size byte, one byte saying which of
 * the first eight chunks carry passed fds, one byte picking their kinds
 * (its top bit: two fds at once), then the stream.
 *
 * 1. Every 24 bytes of the stream as a header: via_ctl_check() in both
 *    directions, and the table behind it.
 * 2. The stream through a Unix socket, read with via_ctl_recv() as the
 *    library reads replies (or requests), the sender cutting it in chunks
 *    and passing fds of every kind a client could (/dev/null, a memfd, an
 *    eventfd, a pipe, a socket, a directory), one or two at once, with
 *    some: no fd leaks into the reader.
 * 3. The stream reassembled as viad's control thread does it
 *    (daemon/ctl.c, session_readable: header, then hdr.len body bytes into
 *    a VIA_CTL_BODY_MAX buffer), in the same chunks.
 *
 * Properties: no memory error; a header that passes has len == the op's
 * body size <= VIA_CTL_BODY_MAX and a known op; hdr_init() makes headers
 * that pass; no fd is left open that the reader was not handed.
 */
#include "fuzz_common.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "via_ctl.h"
#include "viad.h"

static void
check_header(const struct via_ctl_hdr *h)
{
	int reply;

	for (reply = 0; reply <= 1; reply++) {
		int rc = via_ctl_check(h, reply);

		FUZZ_ASSERT(rc == 0 || rc == -EPROTO || rc == -EOPNOTSUPP || rc == -EMSGSIZE);
		if (rc != 0)
			continue;
		FUZZ_ASSERT(h->op > 0 && h->op < VIA_CTL_OP_COUNT);
		FUZZ_ASSERT(h->len == via_ctl_body_size(h->op, reply));
		FUZZ_ASSERT(h->len <= VIA_CTL_BODY_MAX);
		FUZZ_ASSERT(strcmp(via_ctl_op_name(h->op), "unknown") != 0);
	}
	/* whatever the op, the table's answers are sound */
	FUZZ_ASSERT(via_ctl_body_size(h->op, 0) <= VIA_CTL_BODY_MAX);
	FUZZ_ASSERT(via_ctl_body_size(h->op, 1) <= VIA_CTL_BODY_MAX);
	FUZZ_ASSERT(via_ctl_op_name(h->op) != NULL);
	if (h->op > 0 && h->op < VIA_CTL_OP_COUNT) {
		struct via_ctl_hdr mine;

		via_ctl_hdr_init(&mine, h->op, 0, h->seq, 0);
		FUZZ_ASSERT(via_ctl_check(&mine, 0) == 0);
		via_ctl_hdr_init(&mine, h->op, 1, h->seq, h->status);
		FUZZ_ASSERT(via_ctl_check(&mine, 1) == 0);
	}
}

/* The lowest free fd now: equal before and after means nothing leaked. */
static int
lowest_free_fd(void)
{
	int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);

	if (fd >= 0)
		close(fd);
	return fd;
}

#define FD_KINDS 6

/* An fd of kind @p k: what a hostile peer may pass (the other end of a
 * pipe or socket is closed: the passed fd is all there is of it). */
static int
make_fd(unsigned k)
{
	int two[2], fd = -1;

	switch (k % FD_KINDS) {
	case 0:
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		break;
	case 1:
		fd = memfd_create("fuzz-ctl", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		break;
	case 2:
		fd = eventfd(0, EFD_CLOEXEC);
		break;
	case 3:
		if (pipe2(two, O_CLOEXEC) == 0) {
			close(two[0]);
			fd = two[1];
		}
		break;
	case 4:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, two) == 0) {
			close(two[1]);
			fd = two[0];
		}
		break;
	default:
		fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		break;
	}
	FUZZ_ASSERT(fd >= 0);
	return fd;
}

/* Send @p data, the first eight chunks of @p chunk bytes, fds with those
 * @p fd_mask says, of the kinds @p kinds picks (top bit: two at once). */
static void
send_stream(int sock, const uint8_t *data, size_t size, size_t chunk, uint8_t fd_mask,
	    uint8_t kinds)
{
	size_t off = 0, i = 0;

	while (off < size) {
		union {
			char buf[CMSG_SPACE(2 * sizeof(int))];
			struct cmsghdr align;
		} ctrl;
		/* past the eighth chunk, the rest at once: the kernel joins
		 * what carries no fd anyway */
		size_t piece = i < 8 ? chunk : size;
		size_t n = size - off < piece ? size - off : piece;
		struct iovec iov = { .iov_base = (void *)(data + off), .iov_len = n };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		int fds[2] = { -1, -1 };
		unsigned nfds = 0, k;
		ssize_t w;

		if (i < 8 && (fd_mask & (1u << i))) {
			struct cmsghdr *cm;

			nfds = kinds & 0x80 ? 2 : 1;
			for (k = 0; k < nfds; k++)
				fds[k] = make_fd((kinds & 0x7f) + (unsigned)i + k);
			memset(&ctrl, 0, sizeof(ctrl));
			msg.msg_control = ctrl.buf;
			msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
			memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
		}
		w = sendmsg(sock, &msg, MSG_NOSIGNAL);
		/* the reader holds its own copies now */
		for (k = 0; k < nfds; k++)
			close(fds[k]);
		FUZZ_ASSERT(w > 0);
		off += (size_t)w;
		i++;
	}
}

/* Part 2: the stream through via_ctl_recv(). */
static void
recv_stream(const uint8_t *data, size_t size, size_t chunk, uint8_t fd_mask, uint8_t kinds,
	    int reply)
{
	int sv[2], before = lowest_free_fd();
	uint8_t *body = malloc(VIA_CTL_BODY_MAX);
	struct via_ctl_hdr h;
	int fd, rc, n = 0;

	FUZZ_ASSERT(body != NULL);
	FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	/* the input is at most a few KiB (libFuzzer -max_len): it fits */
	send_stream(sv[0], data, size, chunk, fd_mask, kinds);
	shutdown(sv[0], SHUT_WR);
	do {
		fd = -2;
		rc = via_ctl_recv(sv[1], &h, body, reply, &fd);
		FUZZ_ASSERT(fd == -1 || fd >= 0);
		if (rc == 0) {
			FUZZ_ASSERT(via_ctl_check(&h, reply) == 0);
			/* an fd only where this direction of the op carries one */
			FUZZ_ASSERT(fd == -1 || (reply && via_ctl_reply_has_fd(h.op)));
		} else {
			FUZZ_ASSERT(fd == -1);
		}
		if (fd >= 0)
			close(fd);
	} while (rc == 0 && ++n < 4096);
	/* after an error the stream is out of sync: what follows is read on,
	 * without a place for an fd (whatever comes is closed) */
	for (n = 0; n < 4096 && via_ctl_recv(sv[1], &h, body, reply, NULL) != -ECONNRESET; n++)
		;
	close(sv[0]);
	close(sv[1]);
	free(body);
	FUZZ_ASSERT(lowest_free_fd() == before);
}

/* Part 3: viad's incremental reader (daemon/ctl.c, session_readable()). */
static void
reassemble(const uint8_t *data, size_t size, size_t chunk)
{
	/* viad's struct, on its own allocation: a write past it is caught */
	struct via_ctl_inbuf *in = calloc(1, sizeof(*in));
	size_t off = 0;

	FUZZ_ASSERT(in != NULL);
	while (off < size) {
		size_t avail = size - off < chunk ? size - off : chunk;

		while (avail > 0) {
			size_t want = sizeof(in->hdr) +
				      (in->got >= sizeof(in->hdr) ? in->hdr.len : 0);
			uint8_t *dst = in->got < sizeof(in->hdr)
					       ? (uint8_t *)&in->hdr + in->got
					       : in->body + (in->got - sizeof(in->hdr));
			size_t n = want - in->got < avail ? want - in->got : avail;

			FUZZ_ASSERT(in->got < want);
			FUZZ_ASSERT(dst + n <= in->body + VIA_CTL_BODY_MAX);
			memcpy(dst, data + off, n);
			off += n;
			avail -= n;
			in->got += n;
			if (in->got == sizeof(in->hdr) && via_ctl_check(&in->hdr, 0) != 0)
				goto out;       /* violation: the session ends */
			if (in->got < sizeof(in->hdr) || in->got < sizeof(in->hdr) + in->hdr.len)
				continue;
			in->got = 0;    /* a whole request: dispatched */
		}
	}
out:
	free(in);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t ctl = fuzz_u8(&in), chunk = fuzz_u8(&in), fd_mask = fuzz_u8(&in),
		kinds = fuzz_u8(&in);
	size_t off;

	/* 1: every header-sized window of the stream */
	for (off = 0; off + sizeof(struct via_ctl_hdr) <= in.left; off += 4) {
		struct via_ctl_hdr h;

		memcpy(&h, in.p + off, sizeof(h));
		check_header(&h);
	}
	recv_stream(in.p, in.left, chunk ? chunk : 256, fd_mask, kinds, ctl & 1);
	reassemble(in.p, in.left, chunk ? chunk : 256);
	return 0;
}
