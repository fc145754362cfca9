/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_legacy: a VIPL program written the way they were written in 1999
 * for M-VIA or Giganet cLAN, using only <vipl.h> and libc.
 *
 *   vipl_legacy server [-d NIC] [-n COUNT] [-D DISC] [-s SEED]
 *   vipl_legacy client -H HOST [-d NIC] [-n COUNT] [-D DISC]
 *
 * The client sends COUNT messages of several sizes; the server checks each
 * one and answers with a short reply saying how many bytes were wrong.
 * Small messages go by Send/Receive; large ones by RDMA Write with
 * immediate data into a region the server registered for it and announced
 * in its first message.  The payload of message i is a pattern computed
 * from the server's seed and i, so that either side can check it.
 *
 * What it shows, with the sections of the VIA 1.0 specification:
 *  - buffers and descriptors from memalign(), registered with
 *    VipRegisterMem (§3.2, §9.5.3); descriptors 64-byte aligned (§10.1);
 *  - one completion queue for both work queues, polled a number of times
 *    with VipCQDone before sleeping in VipCQWait (§2.4, §9.6.7, §9.6.8);
 *  - the peer found by name with VipNSGetHostByName (§9.10.8);
 *  - Reliable Reception VIs (§2.5.3), Reliable Delivery if the NIC has no
 *    Reliable Reception;
 *  - RDMA Write with immediate data (§2.3.2, §10.2).
 *
 * Exit status: 0 if every message arrived intact, 1 otherwise.
 */
#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vipl.h>

#define NRECV 4             /* receive descriptors kept posted */
#define SMALL_MAX 4096      /* larger messages go by RDMA Write */
#define CQ_POLLS 1000       /* VipCQDone calls before VipCQWait */
#define TIMEOUT_MS 30000    /* longest wait for anything */
#define HELLO_MAGIC 0x4c454731u /* "LEG1" */
#define REPLY_MAGIC 0x4c454752u /* "LEGR" */

/* Message sizes, in turn; capped at the VI's MaxTransferSize. */
static const VIP_ULONG sizes[] = { 1, 100, 1500, 4096, 10000, 65536 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* The server's first message.  Both ends run on the same kind of host:
 * no byte swapping, as most programs of the time did. */
struct hello {
	uint32_t magic;
	uint32_t count;         /* messages the server expects */
	uint32_t seed;          /* of the payload pattern */
	uint32_t region_len;    /* largest message */
	uint64_t region_addr;   /* where RDMA Writes go ... */
	VIP_MEM_HANDLE region_handle; /* ... and its memory handle */
};

/* The server's answer to message index. */
struct reply {
	uint32_t magic;
	uint32_t index;
	uint32_t bad_bytes;
};

/* Everything one end holds: a program of the time kept it in globals. */
static VIP_NIC_HANDLE nic;
static VIP_NIC_ATTRIBUTES nic_attr;
static VIP_PROTECTION_HANDLE ptag;
static VIP_CQ_HANDLE cq;
static VIP_VI_HANDLE vi;
static VIP_RELIABILITY_LEVEL level;
static const char *level_name;
static VIP_ULONG max_msg;         /* largest message: MaxTransferSize, capped */
static VIP_DESCRIPTOR *desc;      /* NRECV receive descriptors, then one send */
static uint8_t *recv_buf, *send_buf, *region;
static VIP_MEM_HANDLE desc_mh, recv_mh, send_mh, region_mh;
static unsigned sends_ready, recvs_ready, recvs_posted; /* see next_completion */
static atomic_int hanging_up, async_errors;

/* VIP_RETURN in words, in the order of vipl.h (§9.10.1) */
static const char *const return_names[] = {
	"VIP_SUCCESS", "VIP_NOT_DONE", "VIP_INVALID_PARAMETER", "VIP_ERROR_RESOURCE",
	"VIP_TIMEOUT", "VIP_REJECT", "VIP_INVALID_RELIABILITY_LEVEL", "VIP_INVALID_MTU",
	"VIP_INVALID_QOS", "VIP_INVALID_PTAG", "VIP_INVALID_RDMAREAD", "VIP_DESCRIPTOR_ERROR",
	"VIP_INVALID_STATE", "VIP_ERROR_NAMESERVICE", "VIP_NO_MATCH",
};
#define RETURN_NAME(rc) ((unsigned)(rc) <= VIP_NO_MATCH ? return_names[rc] : "?")

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vipl_legacy: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Every call but the few whose failures the program handles goes through
 * CHECK: a sample has no better answer to an error than to stop. */
static void
check(const char *call, VIP_RETURN rc)
{
	if (rc != VIP_SUCCESS)
		die("%s: %s", call, RETURN_NAME(rc));
}
#define CHECK(call) check(#call, call)

/* Asynchronous errors (§9.9.1) come on a thread of the provider.  When the
 * peer hangs up at the end, VIP_ERROR_CONN_LOST is expected. */
static void
error_handler(VIP_PVOID context, VIP_ERROR_DESCRIPTOR *ed)
{
	(void)context;
	if (atomic_load(&hanging_up) && ed->ErrorCode == VIP_ERROR_CONN_LOST)
		return;
	fprintf(stderr, "vipl_legacy: asynchronous error %d on resource %d\n",
		(int)ed->ErrorCode, (int)ed->ResourceCode);
	atomic_fetch_add(&async_errors, 1);
}

/* --------------------------------------------------------------- payload */

/*
 * The payload of message index: a xorshift32 stream seeded by seed and
 * index, so that the receiver can recompute what it should find.  Fills p
 * (fill) or returns how many of its bytes differ from the pattern.
 */
static uint32_t
pattern(uint8_t *p, VIP_ULONG len, uint32_t seed, uint32_t index, int fill)
{
	uint32_t x = (seed ^ (index * 0x9e3779b9u)) | 1, bad = 0;

	for (VIP_ULONG i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		if (fill)
			p[i] = (uint8_t)x;
		else
			bad += p[i] != (uint8_t)x;
	}
	return bad;
}

/* -S: every message this size (0: the sizes above in turn) */
static VIP_ULONG fixed_size;

static VIP_ULONG
msg_size(uint32_t index)
{
	VIP_ULONG want = fixed_size != 0 ? fixed_size : sizes[index % NSIZES];

	return want < max_msg ? want : max_msg;
}

/* ------------------------------------------------------------ descriptors */

/* Receive descriptor i owns receive buffer i (SMALL_MAX bytes). */
static void
post_recv(unsigned i)
{
	VIP_DESCRIPTOR *d = &desc[i];

	memset(d, 0, sizeof(*d)); /* Status must be 0 when posted (§10.2) */
	d->CS.SegCount = 1;
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.Length = SMALL_MAX;
	d->DS[0].Local.Data.Address = recv_buf + (size_t)i * SMALL_MAX;
	d->DS[0].Local.Handle = recv_mh;
	d->DS[0].Local.Length = SMALL_MAX;
	CHECK(VipPostRecv(vi, d, desc_mh));
	recvs_posted++;
}

/* A Send of the first len bytes of send_buf. */
static void
post_send(VIP_ULONG len)
{
	VIP_DESCRIPTOR *d = &desc[NRECV];

	memset(d, 0, sizeof(*d));
	d->CS.SegCount = 1;
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.Length = (VIP_UINT32)len;
	d->DS[0].Local.Data.Address = send_buf;
	d->DS[0].Local.Handle = send_mh;
	d->DS[0].Local.Length = (VIP_UINT32)len;
	CHECK(VipPostSend(vi, d, desc_mh));
}

/* An RDMA Write of len bytes of send_buf to the peer's region: an address
 * segment, then a data segment (§10.3, §10.4).  The immediate data consumes
 * a receive at the peer, which tells it the data is there (§2.3.2). */
static void
post_rdma_write(VIP_ULONG len, const struct hello *peer, uint32_t immediate)
{
	VIP_DESCRIPTOR *d = &desc[NRECV];

	memset(d, 0, sizeof(*d));
	d->CS.SegCount = 2;
	d->CS.Control = VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE;
	d->CS.ImmediateData = immediate;
	d->CS.Length = (VIP_UINT32)len;
	d->DS[0].Remote.Data.AddressBits = peer->region_addr;
	d->DS[0].Remote.Handle = peer->region_handle;
	d->DS[1].Local.Data.Address = send_buf;
	d->DS[1].Local.Handle = send_mh;
	d->DS[1].Local.Length = (VIP_UINT32)len;
	CHECK(VipPostSend(vi, d, desc_mh));
}

/*
 * One entry of the completion queue.  A CQ entry only says which queue of
 * which VI has a completed descriptor; the descriptor itself is dequeued
 * with VipSendDone or VipRecvDone (§9.6.7).  The entries are counted, and
 * the descriptors dequeued when the program wants them.  Spin first (cheap
 * when the answer is a few microseconds away), then sleep.
 */
static void
next_completion(void)
{
	VIP_VI_HANDLE which;
	VIP_BOOLEAN is_recv;
	VIP_RETURN rc = VIP_NOT_DONE;

	for (int i = 0; i < CQ_POLLS && rc == VIP_NOT_DONE; i++)
		rc = VipCQDone(cq, &which, &is_recv);
	if (rc == VIP_NOT_DONE)
		rc = VipCQWait(cq, TIMEOUT_MS, &which, &is_recv);
	if (rc == VIP_TIMEOUT)
		die("nothing completed within %d ms", TIMEOUT_MS);
	check("VipCQWait", rc);
	if (which != vi)
		die("completion for an unknown VI");
	if (is_recv)
		recvs_ready++;
	else
		sends_ready++;
}

static void
check_status(const VIP_DESCRIPTOR *d, const char *what)
{
	if (d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR)
		die("%s descriptor flushed: the connection is gone (did the peer exit?)", what);
	if (!(d->CS.Status & VIP_STATUS_DONE) || (d->CS.Status & VIP_STATUS_ERROR_MASK))
		die("%s descriptor completed with status 0x%08x", what, d->CS.Status);
}

/* Wait for the send descriptor.  On a Reliable Reception VI it completes
 * only once the data is in the peer's memory (§2.5.3). */
static void
wait_send(void)
{
	VIP_DESCRIPTOR *d;

	while (sends_ready == 0)
		next_completion();
	sends_ready--;
	CHECK(VipSendDone(vi, &d));
	check_status(d, "send");
}

/* Wait for the next receive descriptor (they complete in posting order). */
static VIP_DESCRIPTOR *
take_recv(void)
{
	VIP_DESCRIPTOR *d;

	while (recvs_ready == 0)
		next_completion();
	recvs_ready--;
	CHECK(VipRecvDone(vi, &d));
	recvs_posted--;
	return d;
}

static VIP_DESCRIPTOR *
wait_recv(void)
{
	VIP_DESCRIPTOR *d = take_recv();

	check_status(d, "receive");
	return d;
}

/* After a disconnect the receives still posted come back flushed (§4.2). */
static void
drain_receives(void)
{
	while (recvs_posted > 0)
		take_recv();
}

/* ------------------------------------------------------------ set-up */

/* Zeroed memory from memalign(), registered with the NIC under our
 * protection tag (§3.2.1): the NIC may only touch registered memory. */
static void *
alloc_registered(size_t align, VIP_ULONG len, VIP_BOOLEAN rdma_write, VIP_MEM_HANDLE *mh)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = ptag, .EnableRdmaWrite = rdma_write };
	void *p = memalign(align, len);

	if (p == NULL)
		die("out of memory");
	memset(p, 0, len);
	CHECK(VipRegisterMem(nic, p, len, &ma, mh));
	return p;
}

static void
open_endpoint(const char *nic_name, VIP_BOOLEAN accept_rdma_write)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	VIP_VI_ATTRIBUTES va = { 0 };
	VIP_RETURN rc;

	rc = VipOpenNic(nic_name, &nic);
	if (rc != VIP_SUCCESS)
		die("cannot open NIC %s (%s): is viad running?", nic_name, RETURN_NAME(rc));
	CHECK(VipQueryNic(nic, &nic_attr));
	CHECK(VipErrorCallback(nic, NULL, error_handler));

	/* Reliable Reception where the NIC offers it (§9.10.4) */
	if (nic_attr.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_RECEPTION) {
		level = VIP_SERVICE_RELIABLE_RECEPTION;
		level_name = "reliable reception";
	} else if (nic_attr.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY) {
		level = VIP_SERVICE_RELIABLE_DELIVERY;
		level_name = "reliable delivery";
		fprintf(stderr, "vipl_legacy: %s has no Reliable Reception: using Reliable "
				"Delivery\n", nic_name);
	} else {
		die("%s offers neither Reliable Reception nor Reliable Delivery", nic_name);
	}
	max_msg = nic_attr.MaxTransferSize < sizes[NSIZES - 1] ? nic_attr.MaxTransferSize
							      : sizes[NSIZES - 1];

	CHECK(VipCreatePtag(nic, &ptag));
	/* descriptors are registered like any buffer, 64-byte aligned (§6.1, §10.1) */
	desc = alloc_registered(VIP_DESCRIPTOR_ALIGNMENT, (NRECV + 1) * sizeof(VIP_DESCRIPTOR),
				VIP_FALSE, &desc_mh);
	recv_buf = alloc_registered(page, NRECV * SMALL_MAX, VIP_FALSE, &recv_mh);
	send_buf = alloc_registered(page, max_msg, VIP_FALSE, &send_mh);

	/* one CQ for both work queues: room for every descriptor */
	CHECK(VipCreateCQ(nic, NRECV + 1, &cq));
	va.ReliabilityLevel = level;
	va.MaxTransferSize = nic_attr.MaxTransferSize;
	va.Ptag = ptag;
	/* RDMA Write needs the permission of both the VI and the region (§3.2.2.2) */
	va.EnableRdmaWrite = accept_rdma_write;
	CHECK(VipCreateVi(nic, &va, cq, cq, &vi));

	/* receives may be posted before the connection (§6.2); on a reliable VI
	 * a message that finds none breaks the connection (§2.5.2) */
	for (unsigned i = 0; i < NRECV; i++)
		post_recv(i);
}

static void
close_endpoint(void)
{
	CHECK(VipDestroyVi(vi));
	CHECK(VipDestroyCQ(cq));
	if (region != NULL) {
		CHECK(VipDeregisterMem(nic, region, region_mh));
		free(region);
	}
	CHECK(VipDeregisterMem(nic, send_buf, send_mh));
	CHECK(VipDeregisterMem(nic, recv_buf, recv_mh));
	CHECK(VipDeregisterMem(nic, desc, desc_mh));
	free(send_buf);
	free(recv_buf);
	free(desc);
	CHECK(VipDestroyPtag(nic, ptag));
	CHECK(VipCloseNic(nic));
}

/* A VIA address: host address (a MAC here), then the discriminator (§4.3). */
static VIP_NET_ADDRESS *
net_address(const VIP_UINT8 *host, VIP_UINT16 host_len, const char *disc)
{
	size_t disc_len = strlen(disc);
	VIP_NET_ADDRESS *a = malloc(sizeof(*a) + host_len + nic_attr.MaxDiscriminatorLen);

	if (a == NULL)
		die("out of memory");
	if (disc_len > nic_attr.MaxDiscriminatorLen)
		die("discriminator '%s' longer than %u bytes", disc, nic_attr.MaxDiscriminatorLen);
	a->HostAddressLen = host_len;
	a->DiscriminatorLen = (VIP_UINT16)disc_len;
	if (host != NULL)
		memcpy(a->HostAddress, host, host_len);
	memcpy(a->HostAddress + host_len, disc, disc_len);
	return a;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ the server */

static int
run_server(const char *nic_name, uint32_t count, const char *disc, uint32_t seed)
{
	VIP_NET_ADDRESS *local, *remote;
	VIP_VI_ATTRIBUTES remote_attr;
	VIP_CONN_HANDLE conn;
	uint32_t bad = 0, by_rdma = 0;
	double t0;

	open_endpoint(nic_name, VIP_TRUE);
	/* the region the client RDMA-writes into; the VI allows it too */
	region = alloc_registered((size_t)sysconf(_SC_PAGESIZE), max_msg, VIP_TRUE, &region_mh);

	/* wait for a client on our own address and the discriminator (§4.1) */
	local = net_address(nic_attr.LocalNicAddress, nic_attr.NicAddressLen, disc);
	remote = net_address(NULL, nic_attr.NicAddressLen, "");
	CHECK(VipConnectWait(nic, local, TIMEOUT_MS, remote, &remote_attr, &conn));
	if (VipConnectAccept(conn, vi) != VIP_SUCCESS) {
		VipConnectReject(conn);
		die("cannot accept the client (its VI: reliability level %u, MaxTransferSize %lu)",
		    remote_attr.ReliabilityLevel, remote_attr.MaxTransferSize);
	}
	t0 = now();

	/* first message: where the client may write, and the pattern's seed */
	*(struct hello *)send_buf = (struct hello){
		.magic = HELLO_MAGIC, .count = count, .seed = seed,
		.region_len = (uint32_t)max_msg, .region_addr = (uint64_t)(uintptr_t)region,
		.region_handle = region_mh,
	};
	post_send(sizeof(struct hello));
	wait_send();

	for (uint32_t i = 0; i < count; i++) {
		VIP_DESCRIPTOR *d = wait_recv();
		unsigned slot = (unsigned)(d - desc);
		VIP_ULONG len = msg_size(i);
		uint32_t wrong;

		if (len <= SMALL_MAX) {
			if (d->CS.Length != len)
				die("message %u: %u bytes, %lu expected", i, d->CS.Length, len);
			wrong = pattern(recv_buf + (size_t)slot * SMALL_MAX, len, seed, i, 0);
		} else {
			/* an RDMA Write's immediate data completed this receive */
			if ((d->CS.Status & VIP_STATUS_OP_MASK) != VIP_STATUS_OP_REMOTE_RDMA_WRITE ||
			    !(d->CS.Status & VIP_STATUS_IMMEDIATE) || d->CS.ImmediateData != i)
				die("message %u: expected an RDMA Write with immediate data %u", i, i);
			wrong = pattern(region, len, seed, i, 0);
			by_rdma++;
		}
		if (wrong != 0) {
			fprintf(stderr, "vipl_legacy: message %u (%lu bytes): %u bytes wrong\n", i,
				len, wrong);
			bad++;
		}
		/* re-post before answering: the client's next message needs it */
		post_recv(slot);
		*(struct reply *)send_buf =
			(struct reply){ .magic = REPLY_MAGIC, .index = i, .bad_bytes = wrong };
		post_send(sizeof(struct reply));
		wait_send();
	}

	/*
	 * The server hangs up first.  It sent last, and its last send has
	 * completed, so nothing of ours is still in flight.  Had the client
	 * hung up as soon as it had the last reply, its disconnect could
	 * overtake the acknowledgement of that reply.
	 */
	atomic_store(&hanging_up, 1);
	CHECK(VipDisconnect(vi));
	drain_receives();
	printf("vipl_legacy server: %u messages (%u by send, %u by RDMA Write), %s, "
	       "%u bad, %.2f s\n", count, count - by_rdma, by_rdma, level_name, bad, now() - t0);
	free(local);
	free(remote);
	close_endpoint();
	return bad == 0 && atomic_load(&async_errors) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ the client */

static int
run_client(const char *nic_name, const char *host, uint32_t count, const char *disc)
{
	VIP_NET_ADDRESS *local, *remote;
	VIP_VI_ATTRIBUTES remote_attr;
	VIP_DESCRIPTOR *d;
	struct hello peer;
	uint32_t bad = 0, by_rdma = 0;
	char local_disc[64];
	unsigned slot;
	VIP_RETURN rc;
	double t0, deadline;

	open_endpoint(nic_name, VIP_FALSE);

	/* the server's address: its name, through the provider's name
	 * service (viad's hosts file), and the discriminator */
	remote = net_address(NULL, nic_attr.NicAddressLen, "");
	CHECK(VipNSInit(nic, NULL));
	rc = VipNSGetHostByName(nic, (VIP_CHAR *)host, remote, 0);
	if (rc == VIP_ERROR_NAMESERVICE)
		die("unknown host '%s' (not in viad's hosts file)", host);
	check("VipNSGetHostByName", rc);
	CHECK(VipNSShutdown(nic));
	remote->DiscriminatorLen = (VIP_UINT16)strlen(disc);
	memcpy(remote->HostAddress + remote->HostAddressLen, disc, strlen(disc));
	/* our own discriminator differs from the server's: both may be on one NIC */
	snprintf(local_disc, sizeof(local_disc), "%.40s.client", disc);
	local = net_address(nic_attr.LocalNicAddress, nic_attr.NicAddressLen, local_disc);

	/* VIP_NO_MATCH: the server does not wait yet; try again (§9.4.4) */
	deadline = now() + TIMEOUT_MS / 1000.0;
	while ((rc = VipConnectRequest(vi, local, remote, 1000, &remote_attr)) == VIP_NO_MATCH ||
	       rc == VIP_TIMEOUT)
		if (now() > deadline)
			die("no server '%s' on host %s", disc, host);
		else
			usleep(10000);
	check("VipConnectRequest", rc);
	t0 = now();

	/* the server's first message */
	d = wait_recv();
	slot = (unsigned)(d - desc);

	memcpy(&peer, recv_buf + (size_t)slot * SMALL_MAX, sizeof(peer));
	if (d->CS.Length != sizeof(peer) || peer.magic != HELLO_MAGIC)
		die("the server's first message is not a hello");
	if (peer.count != count)
		die("the server expects %u messages, we would send %u (use the same -n)",
		    peer.count, count);
	if (peer.region_len < max_msg)
		max_msg = peer.region_len; /* the smaller of the two decides */
	post_recv(slot);

	for (uint32_t i = 0; i < count; i++) {
		VIP_ULONG len = msg_size(i);
		const struct reply *r;

		pattern(send_buf, len, peer.seed, i, 1);
		/*
		 * The server hangs up once its reply to the last message has
		 * completed, which at Reliable Reception means placed here: its
		 * disconnect (VIP_ERROR_CONN_LOST, §4.2 lets a provider report
		 * it) may reach the handler before this thread returns from
		 * waiting for that reply. From the last send on, it is expected.
		 */
		if (i + 1 == count)
			atomic_store(&hanging_up, 1);
		if (len <= SMALL_MAX) {
			post_send(len);
		} else {
			post_rdma_write(len, &peer, i);
			by_rdma++;
		}
		/* send done, then the reply (the order of the two may vary) */
		wait_send();
		d = wait_recv();
		slot = (unsigned)(d - desc);
		r = (const struct reply *)(recv_buf + (size_t)slot * SMALL_MAX);
		if (d->CS.Length != sizeof(*r) || r->magic != REPLY_MAGIC || r->index != i)
			die("message %u: the reply is not one to it", i);
		if (r->bad_bytes != 0)
			bad++;
		post_recv(slot);
	}

	/* wait for the server to hang up (see run_server), then do the same */
	drain_receives();
	CHECK(VipDisconnect(vi));
	t0 = now() - t0;
	printf("vipl_legacy client: %u messages of %lu..%lu bytes (%u by send, %u by RDMA "
	       "Write), %s, %u ok, %u bad, %.2f s, %.1f us per round trip\n", count, msg_size(0),
	       fixed_size != 0 ? msg_size(0) : max_msg, count - by_rdma, by_rdma, level_name,
	       count - bad, bad, t0, t0 * 1e6 / count);
	free(local);
	free(remote);
	close_endpoint();
	return bad == 0 && atomic_load(&async_errors) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ main */

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr,
		"usage: vipl_legacy server [-d NIC] [-n COUNT] [-S SIZE] [-D DISC] [-s SEED]\n"
		"       vipl_legacy client -H HOST [-d NIC] [-n COUNT] [-S SIZE] [-D DISC]\n"
		"  -d NIC    VI NIC (default via0)\n"
		"  -H HOST   the server's host name, in viad's hosts file\n"
		"  -n COUNT  messages (default 200; the same at both ends)\n"
		"  -S SIZE   every message SIZE bytes (default: 1 B to 64 KiB in turn; the\n"
		"            same at both ends)\n"
		"  -D DISC   connection discriminator (default vipl-legacy)\n"
		"  -s SEED   seed of the payload pattern (default: from the clock)\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *nic_name = "via0", *host = NULL, *disc = "vipl-legacy";
	uint32_t count = 200, seed = (uint32_t)time(NULL) ^ (uint32_t)getpid();
	int server, opt;

	if (argc < 2 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0))
		usage();
	server = strcmp(argv[1], "server") == 0;
	optind = 2;
	while ((opt = getopt(argc, argv, "d:H:n:S:D:s:")) != -1) {
		switch (opt) {
		case 'd': nic_name = optarg; break;
		case 'S': fixed_size = strtoul(optarg, NULL, 0); break;
		case 'H': host = optarg; break;
		case 'n': count = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'D': disc = optarg; break;
		case 's': seed = (uint32_t)strtoul(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (optind != argc || count == 0 || (server ? host != NULL : host == NULL))
		usage();
	return server ? run_server(nic_name, count, disc, seed)
		      : run_client(nic_name, host, count, disc);
}
