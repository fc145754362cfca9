/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-message codec: the op table, header validation, and framing over
 * a real Unix stream socket pair (partial writes, fd passing, a peer that
 * sends an fd where none belongs, EOF mid-message).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_common.h"
#include "via_ctl.h"

static void
test_table(void)
{
	unsigned op;

	CHECK_EQ(via_ctl_body_size(0, 0), 0);
	CHECK_EQ(via_ctl_body_size(VIA_CTL_OP_COUNT, 1), 0);
	CHECK(strcmp(via_ctl_op_name(0), "unknown") == 0);
	CHECK(strcmp(via_ctl_op_name(9999), "unknown") == 0);
	for (op = 1; op < VIA_CTL_OP_COUNT; op++) {
		CHECK(strcmp(via_ctl_op_name(op), "unknown") != 0);
		CHECK(via_ctl_body_size(op, 0) <= VIA_CTL_BODY_MAX);
		CHECK(via_ctl_body_size(op, 1) <= VIA_CTL_BODY_MAX);
	}
	CHECK(via_ctl_reply_has_fd(VIA_CTL_OPEN));
	CHECK(via_ctl_reply_has_fd(VIA_CTL_ALLOC));
	CHECK(!via_ctl_reply_has_fd(VIA_CTL_VI_CREATE));
	CHECK_EQ(via_ctl_body_size(VIA_CTL_OPEN, 0), sizeof(struct via_ctl_open_req));
	CHECK_EQ(via_ctl_body_size(VIA_CTL_OPEN, 1), sizeof(struct via_ctl_open_rep));
	CHECK_EQ(via_ctl_body_size(VIA_CTL_PTAG_CREATE, 0), 0);
}

static void
test_check(void)
{
	struct via_ctl_hdr h, bad;
	unsigned op;

	for (op = 1; op < VIA_CTL_OP_COUNT; op++) {
		via_ctl_hdr_init(&h, op, 0, 7, 0);
		CHECK_EQ(via_ctl_check(&h, 0), 0);
		CHECK_EQ(via_ctl_check(&h, 1), -EPROTO);      /* wrong direction */
		via_ctl_hdr_init(&h, op, 1, 7, -ENOENT);
		CHECK_EQ(via_ctl_check(&h, 1), 0);
		CHECK_EQ(via_ctl_check(&h, 0), -EPROTO);
		bad = h;
		bad.len++;
		CHECK_EQ(via_ctl_check(&bad, 1), -EMSGSIZE);
		bad = h;
		bad.len = UINT32_MAX;
		CHECK_EQ(via_ctl_check(&bad, 1), -EMSGSIZE);
	}
	via_ctl_hdr_init(&h, VIA_CTL_VI_CREATE, 0, 1, 0);
	bad = h;
	bad.cookie ^= 1;                                 /* other ABI version */
	CHECK_EQ(via_ctl_check(&bad, 0), -EPROTO);
	bad = h;
	bad.reserved = 1;
	CHECK_EQ(via_ctl_check(&bad, 0), -EPROTO);
	bad = h;
	bad.flags = 0x8000;
	CHECK_EQ(via_ctl_check(&bad, 0), -EPROTO);
	bad = h;
	bad.status = -1;                                 /* requests carry no status */
	CHECK_EQ(via_ctl_check(&bad, 0), -EPROTO);
	bad = h;
	bad.op = 0;
	CHECK_EQ(via_ctl_check(&bad, 0), -EOPNOTSUPP);
	bad.op = VIA_CTL_OP_COUNT;
	CHECK_EQ(via_ctl_check(&bad, 0), -EOPNOTSUPP);
	bad.op = UINT16_MAX;
	CHECK_EQ(via_ctl_check(&bad, 0), -EOPNOTSUPP);
}

/*
 * Valid headers with one random byte changed: every mutation is either
 * rejected or leaves a header a sender could have built.
 */
static void
test_fuzz(unsigned seed)
{
	unsigned i, accepted = 0;

	srandom(seed);
	for (i = 0; i < 200000; i++) {
		int reply = (int)(random() & 1);
		unsigned op = 1 + (unsigned)random() % (VIA_CTL_OP_COUNT - 1);
		struct via_ctl_hdr h;
		unsigned char *p = (unsigned char *)&h;

		via_ctl_hdr_init(&h, op, reply, (uint32_t)random(), reply ? -(int)(random() & 63) : 0);
		p[(unsigned)random() % sizeof(h)] = (unsigned char)random();
		if (via_ctl_check(&h, reply) == 0) {
			accepted++;
			CHECK(h.op > 0 && h.op < VIA_CTL_OP_COUNT);
			CHECK_EQ(h.len, via_ctl_body_size(h.op, reply));
			CHECK_EQ(h.reserved, 0);
			CHECK_EQ(h.flags, reply ? VIA_CTL_F_REPLY : 0);
			CHECK(reply || h.status == 0);
		}
	}
	printf("fuzz: seed %u, %u of 200000 mutated headers still well-formed\n", seed, accepted);
}

static int
count_open_fds(void)
{
	int fd, n = 0;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void
test_framing(void)
{
	struct via_ctl_mem_register_req req = { .addr = 0x1000, .len = 42 };
	uint8_t body[VIA_CTL_BODY_MAX];
	struct via_ctl_hdr h, got;
	int sp[2], fd, pipefd[2], before;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	CHECK_EQ(pipe(pipefd), 0);

	/* a request round trip */
	via_ctl_hdr_init(&h, VIA_CTL_MEM_REGISTER, 0, 5, 0);
	CHECK_EQ(via_ctl_send(sp[0], &h, &req, -1), 0);
	CHECK_EQ(via_ctl_recv(sp[1], &got, body, 0, NULL), 0);
	CHECK_EQ(got.seq, 5);
	CHECK(memcmp(body, &req, sizeof(req)) == 0);

	/* a reply that carries an fd */
	via_ctl_hdr_init(&h, VIA_CTL_ALLOC, 1, 6, 0);
	memset(body, 0xab, sizeof(body));
	CHECK_EQ(via_ctl_send(sp[1], &h, body, pipefd[0]), 0);
	fd = -1;
	CHECK_EQ(via_ctl_recv(sp[0], &got, body, 1, &fd), 0);
	CHECK(fd >= 0 && fd != pipefd[0]);
	if (fd >= 0)
		close(fd);

	/* an fd on a message whose op carries none is closed, not leaked */
	before = count_open_fds();
	via_ctl_hdr_init(&h, VIA_CTL_VI_QUERY, 1, 7, 0);
	CHECK_EQ(via_ctl_send(sp[1], &h, body, pipefd[0]), 0);
	fd = 123;
	CHECK_EQ(via_ctl_recv(sp[0], &got, body, 1, &fd), 0);
	CHECK_EQ(fd, -1);
	CHECK_EQ(count_open_fds(), before);

	/* a message written byte by byte still arrives whole */
	via_ctl_hdr_init(&h, VIA_CTL_MEM_REGISTER, 0, 8, 0);
	{
		uint8_t raw[sizeof(h) + sizeof(req)];
		size_t k;

		memcpy(raw, &h, sizeof(h));
		memcpy(raw + sizeof(h), &req, sizeof(req));
		for (k = 0; k < sizeof(raw); k++)
			CHECK_EQ(write(sp[0], &raw[k], 1), 1);
	}
	CHECK_EQ(via_ctl_recv(sp[1], &got, body, 0, NULL), 0);
	CHECK_EQ(got.seq, 8);

	/* a malformed header is refused before any body is read */
	h.cookie = 0;
	CHECK_EQ(write(sp[0], &h, sizeof(h)), (ssize_t)sizeof(h));
	CHECK_EQ(via_ctl_recv(sp[1], &got, body, 0, NULL), -EPROTO);

	/* EOF in the middle of a body */
	via_ctl_hdr_init(&h, VIA_CTL_MEM_REGISTER, 0, 9, 0);
	CHECK_EQ(write(sp[0], &h, sizeof(h)), (ssize_t)sizeof(h));
	CHECK_EQ(write(sp[0], &req, 3), 3);
	close(sp[0]);
	CHECK_EQ(via_ctl_recv(sp[1], &got, body, 0, NULL), -ECONNRESET);

	/* sending to a closed peer fails with an error, not SIGPIPE */
	CHECK(via_ctl_send(sp[1], &h, &req, -1) < 0);
	close(sp[1]);
	close(pipefd[0]);
	close(pipefd[1]);
}

int
main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 20261122u;

	test_table();
	test_check();
	test_fuzz(seed);
	test_framing();
	return test_summary("test_ctl");
}
