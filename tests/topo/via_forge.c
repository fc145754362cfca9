/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * via_forge: a hostile host on the same Ethernet (issue 14 part 5,
 * docs/design.md section 10, "Threat model"). It sniffs VIA frames on an
 * interface with a packet socket, learns a live connection from them (the
 * two MACs, the VI pair, the connection id, the sequence numbers and, from
 * an RDMA Write, a valid memory handle), and then forges frames for the
 * victim's VI that are right in every field but one: the source MAC, the
 * connection id or the VI pair. Each is well formed and sealed with correct
 * CRCs, so that nothing but those three checks stands between it and the
 * connection.
 *
 *   via_forge IFACE VICTIM_MAC [--seconds N] [--rate F]
 *                                   forge F frames/s (2000) until N s or SIGTERM
 *   via_forge IFACE VICTIM_MAC --exact         one DISC right in every field
 *   via_forge IFACE VICTIM_MAC --conn-flood DISC [--seconds N] [--rate F]
 *                                   forged connection requests, below
 *
 * VICTIM_MAC is the MAC of the viad attacked; frames from it teach the
 * connection as well as frames to it (the interface sees both directions).
 * --exact is the control: a frame that matches the connection in every
 * field is taken (VIA has no authentication, VIA §1.2's "trusted SAN"),
 * which proves that the forged frames are refused for their flaw alone.
 *
 * --conn-flood is a blind host of the same Ethernet that floods the victim
 * with forged connection requests (issue 25 part 5; wire-format.md section
 * 7.2): each CONN_REQ from one of 4096 source MACs (locally administered,
 * unicast), with a random requester VI, connection id and cookie (0, a
 * first contact, or a guess), for the discriminator DISC a real server
 * waits on, so that a viad which kept or offered forged requests would
 * hand them to that server. It learns nothing and reads nothing: only the
 * cookie stands between its frames and the server.
 *
 * Exit status 0 when it forged (or, --exact, sent its DISC), 1 when it
 * never saw a connection to learn, 2 on usage or socket errors. It prints
 * one line per opcode and flaw with the number of frames sent (with
 * --conn-flood, the number of requests and of source MACs).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <vipl.h>

#include "wire.h"

/* What the attacker learned of one connection, oriented as the victim sees
 * it: frames from the peer to the victim. */
struct learned {
	bool valid;
	bool have_rdma;                 /* an RDMA Write to the victim was seen */
	uint8_t victim_mac[6], peer_mac[6];
	uint32_t victim_vi, peer_vi, conn_id;
	uint32_t seq, msg_id;           /* the latest of the peer's frames */
	uint32_t victim_seq;            /* the latest of the victim's */
	unsigned long seen_to, seen_from; /* frames to and from the victim */
	struct via_wire_rdma rdma;      /* its RDMA extension (a valid handle) */
};

enum flaw { FLAW_MAC, FLAW_CONN, FLAW_VI, FLAW_NONE, FLAW_COUNT };
static const char *const flaw_name[FLAW_COUNT] = {
	[FLAW_MAC] = "source MAC", [FLAW_CONN] = "connection id",
	[FLAW_VI] = "VI pair", [FLAW_NONE] = "none (exact)",
};
static const uint8_t forged_ops[] = {
	VIA_OP_SEND, VIA_OP_RDMA_WRITE, VIA_OP_ACK, VIA_OP_NAK, VIA_OP_DISC,
};
#define N_OPS (sizeof(forged_ops) / sizeof(forged_ops[0]))
#define FLOOD_SOURCES 4096   /* --conn-flood: distinct source MACs, in turn */

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint32_t
rand32(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)random();
	return v;
}

/* A value that is not @p real. */
static uint32_t
other_than(uint32_t real)
{
	uint32_t v;

	do
		v = rand32();
	while (v == real || v == 0);
	return v;
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

/* Learn from one sniffed frame of @p len bytes. */
static void
learn(struct learned *l, const uint8_t *f, size_t len)
{
	const struct rte_ether_hdr *eth = (const void *)f;
	const struct via_wire_hdr *h = (const void *)(eth + 1);
	bool to_victim, from_victim;

	if (len < VIA_FRAME_HDR_LEN || eth->ether_type != htons(VIA_ETHERTYPE) ||
	    h->version != VIA_WIRE_VERSION ||
	    h->opcode >= VIA_OP_COUNT || (via_wire_ops[h->opcode].flags & VIA_OPF_CM) ||
	    via_wire_conn_id(h) == 0 || via_wire_dst_vi(h) == 0)
		return;
	to_victim = memcmp(eth->dst_addr.addr_bytes, l->victim_mac, 6) == 0;
	from_victim = memcmp(eth->src_addr.addr_bytes, l->victim_mac, 6) == 0;
	if (to_victim == from_victim)
		return;
	if (to_victim) {
		l->seen_to++;
		memcpy(l->peer_mac, eth->src_addr.addr_bytes, 6);
		l->victim_vi = via_wire_dst_vi(h);
		l->peer_vi = via_wire_src_vi(h);
		l->seq = via_wire_seq(h);
		l->msg_id = via_wire_msg_id(h);
		if (h->opcode == VIA_OP_RDMA_WRITE &&
		    len >= VIA_FRAME_HDR_LEN + sizeof(struct via_wire_rdma)) {
			memcpy(&l->rdma, h + 1, sizeof(l->rdma));
			l->have_rdma = true;
		}
	} else {
		l->seen_from++;
		memcpy(l->peer_mac, eth->dst_addr.addr_bytes, 6);
		l->victim_vi = via_wire_src_vi(h);
		l->peer_vi = via_wire_dst_vi(h);
		l->victim_seq = via_wire_seq(h);
	}
	l->conn_id = via_wire_conn_id(h);
	l->valid = true;
}

/*
 * Frame @p op for the victim as if from its peer, wrong in @p flaw only,
 * into @p f. @return its length.
 */
static size_t
forge(const struct learned *l, uint8_t op, enum flaw flaw, uint8_t *f)
{
	struct rte_ether_hdr *eth = (void *)f;
	struct via_wire_hdr *h = (void *)(eth + 1);
	uint8_t *payload = (uint8_t *)(h + 1);
	uint16_t head = 0, data = 0;
	uint32_t v;

	memcpy(eth->dst_addr.addr_bytes, l->victim_mac, 6);
	memcpy(eth->src_addr.addr_bytes, l->peer_mac, 6);
	eth->ether_type = htons(VIA_ETHERTYPE);
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	via_wire_set_dst_vi(h, l->victim_vi);
	via_wire_set_src_vi(h, l->peer_vi);
	via_wire_set_conn_id(h, l->conn_id);
	switch (flaw) {
	case FLAW_MAC:
		v = rand32();
		memcpy(&eth->src_addr.addr_bytes[2], &v, 4);
		eth->src_addr.addr_bytes[0] = 0x02;  /* locally administered, unicast */
		if (memcmp(eth->src_addr.addr_bytes, l->peer_mac, 6) == 0)
			eth->src_addr.addr_bytes[5] ^= 1;
		break;
	case FLAW_CONN:
		via_wire_set_conn_id(h, other_than(l->conn_id));
		break;
	case FLAW_VI:
		via_wire_set_src_vi(h, other_than(l->peer_vi));
		break;
	default:
		break;
	}
	switch (op) {
	case VIA_OP_SEND:
	case VIA_OP_RDMA_WRITE:
		/* the next message, in sequence: what a receiver would take */
		via_wire_set_seq(h, l->seq + 1);
		via_wire_set_msg_id(h, l->msg_id + 1);
		data = 64;
		if (op == VIA_OP_RDMA_WRITE) {
			memcpy(payload, &l->rdma, sizeof(l->rdma));
			head = sizeof(l->rdma);
		}
		memset(payload + head, 0xEE, data);
		via_wire_set_msg_len(h, data);
		break;
	case VIA_OP_ACK:
		/* acknowledges frames the victim never sent */
		via_wire_set_seq(h, l->victim_seq + 64);
		break;
	case VIA_OP_NAK:
		/* fails the victim's last frame: on a reliable level that breaks
		 * the connection (wire-format.md 11.6) */
		via_wire_set_seq(h, l->victim_seq);
		via_wire_set_imm(h, VIP_STATUS_TRANSPORT_ERROR);
		break;
	default:
		break;
	}
	via_wire_seal(h, head, payload + head, data);
	return VIA_FRAME_HDR_LEN + head + data;
}

/* A forged CONN_REQ from source @p n for @p disc at @p victim into @p f
 * (--conn-flood). @return its length */
static size_t
forge_request(const uint8_t victim[6], const char *disc, unsigned n, uint8_t *f)
{
	struct rte_ether_hdr *eth = (void *)f;
	struct via_wire_hdr *h = (void *)(eth + 1);
	struct via_wire_conn *w = (void *)(h + 1);
	const uint8_t src[6] = { 0x02, 0xf1, 0x00, (uint8_t)(n >> 16), (uint8_t)(n >> 8),
				 (uint8_t)n };
	size_t dlen = strlen(disc);

	memcpy(eth->dst_addr.addr_bytes, victim, 6);
	memcpy(eth->src_addr.addr_bytes, src, 6);
	eth->ether_type = htons(VIA_ETHERTYPE);
	via_wire_hdr_init(h, VIA_OP_CONN_REQ, 0, 0, rand32() | 1, rand32() | 1);
	/* half first contacts, half guessed cookies */
	via_wire_set_imm(h, (n & 1) ? rand32() : 0);
	memset(w, 0, sizeof(*w));
	w->reliability = rte_cpu_to_be_16(VIP_SERVICE_UNRELIABLE);
	w->max_transfer = rte_cpu_to_be_32(65536);
	w->frame_payload = rte_cpu_to_be_16(1452);
	w->dst_disc_len = (uint8_t)dlen;
	memcpy(w->dst_disc, disc, dlen);
	w->src_disc_len = 5;
	memcpy(w->src_disc, "flood", 5);
	via_wire_seal(h, sizeof(*w), NULL, 0);
	return VIA_FRAME_HDR_LEN + sizeof(*w);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --conn-flood: forged requests at @p rate a second until @p t_end. @return 0 */
static int
flood_requests(int fd, struct sockaddr_ll *sll, const uint8_t victim[6], const char *disc,
	       double rate, double t_end)
{
	unsigned long sent = 0;
	double t_next = now_s();
	uint8_t f[512];

	memcpy(sll->sll_addr, victim, 6);
	/* paced: bursts of a millisecond's worth */
	while (!stop && now_s() < t_end) {
		unsigned burst = (unsigned)(rate / 1000) + 1, i;
		double wait;

		for (i = 0; i < burst; i++) {
			size_t len = forge_request(victim, disc, (unsigned)(sent % FLOOD_SOURCES), f);

			if (sendto(fd, f, len, 0, (struct sockaddr *)sll, sizeof(*sll)) ==
			    (ssize_t)len)
				sent++;
		}
		t_next += burst / rate;
		if ((wait = t_next - now_s()) > 0)
			usleep((useconds_t)(wait * 1e6));
	}
	printf("via_forge: %lu forged CONN_REQ from %lu source MACs\n", sent,
	       sent < FLOOD_SOURCES ? sent : FLOOD_SOURCES);
	return 0;
}

/* Read every frame waiting on @p fd into @p l; wait up to @p ms for the first. */
static void
sniff(int fd, struct learned *l, int ms)
{
	uint8_t f[16384];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return;
	while ((n = recv(fd, f, sizeof(f), MSG_DONTWAIT)) > 0)
		learn(l, f, (size_t)n);
}

int
main(int argc, char **argv)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_halen = 6 };
	unsigned long sent[N_OPS][FLAW_COUNT] = { { 0 } };
	struct learned l = { 0 };
	const char *flood_disc = NULL;
	bool exact = false;
	double seconds = 30, rate = 2000, t_end, t_round;
	uint8_t f[2048];
	unsigned i, k;
	int fd, ai;

	if (argc < 3 || parse_mac(argv[2], l.victim_mac) != 0) {
		fprintf(stderr, "usage: via_forge IFACE VICTIM_MAC [--seconds N] [--rate F | --exact | "
				"--conn-flood DISC]\n");
		return 2;
	}
	for (ai = 3; ai < argc; ai++) {
		if (strcmp(argv[ai], "--exact") == 0)
			exact = true;
		else if (strcmp(argv[ai], "--conn-flood") == 0 && ai + 1 < argc &&
			 strlen(argv[ai + 1]) <= VIA_WIRE_DISC_MAX)
			flood_disc = argv[++ai];
		else if (strcmp(argv[ai], "--seconds") == 0 && ai + 1 < argc)
			seconds = atof(argv[++ai]);
		else if (strcmp(argv[ai], "--rate") == 0 && ai + 1 < argc && atof(argv[ai + 1]) > 0)
			rate = atof(argv[++ai]);
		else {
			fprintf(stderr, "via_forge: unknown argument '%s'\n", argv[ai]);
			return 2;
		}
	}
	/*
	 * ETH_P_ALL: only such sockets see the frames this host sends (the
	 * peer's, here); one socket to sniff and send, since the kernel does
	 * not loop a socket's own frames back to it - it must not learn from
	 * its forgeries.
	 */
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(argv[1]);
	if (sll.sll_ifindex == 0) {
		fprintf(stderr, "via_forge: no interface %s\n", argv[1]);
		return 2;
	}
	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		perror("via_forge: packet socket");
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	t_end = now_s() + seconds;
	if (flood_disc != NULL)
		return flood_requests(fd, &sll, l.victim_mac, flood_disc, rate, t_end);

	/* learn a connection; an RDMA handle may come later, between rounds */
	while (!stop && now_s() < t_end && !l.valid)
		sniff(fd, &l, 100);
	if (!l.valid) {
		fprintf(stderr, "via_forge: no connection to %s seen on %s\n", argv[2], argv[1]);
		return 1;
	}
	printf("via_forge: learned conn_id %#x, victim VI %u, peer VI %u%s\n", l.conn_id,
	       l.victim_vi, l.peer_vi, l.have_rdma ? ", an RDMA handle" : "");
	if (exact) {
		size_t len = forge(&l, VIA_OP_DISC, FLAW_NONE, f);

		memcpy(sll.sll_addr, l.victim_mac, 6);
		if (sendto(fd, f, len, 0, (struct sockaddr *)&sll, sizeof(sll)) != (ssize_t)len) {
			perror("via_forge: sendto");
			return 2;
		}
		printf("via_forge: disc/%s: 1\n", flaw_name[FLAW_NONE]);
		return 0;
	}

	/*
	 * Forge, relearning between rounds (new connections, later seqs), at
	 * a paced rate: the test is of each frame's checks, and a flood that
	 * makes the kernel drop real frames would fail an Unreliable Delivery
	 * check for a reason VIA allows (§2.5.1).
	 */
	memcpy(sll.sll_addr, l.victim_mac, 6);
	t_round = now_s();
	while (!stop && now_s() < t_end) {
		double wait;

		for (i = 0; i < N_OPS; i++) {
			if (forged_ops[i] == VIA_OP_RDMA_WRITE && !l.have_rdma)
				continue;
			for (k = 0; k < FLAW_NONE; k++) {
				size_t len = forge(&l, forged_ops[i], (enum flaw)k, f);

				if (sendto(fd, f, len, 0, (struct sockaddr *)&sll, sizeof(sll)) ==
				    (ssize_t)len)
					sent[i][k]++;
			}
		}
		t_round += N_OPS * FLAW_NONE / rate;
		while (!stop && (wait = t_round - now_s()) > 0)
			sniff(fd, &l, (int)(wait * 1000) + 1);
	}
	printf("via_forge: saw %lu frames to the victim, %lu from it\n", l.seen_to, l.seen_from);
	for (i = 0; i < N_OPS; i++)
		for (k = 0; k < FLAW_NONE; k++)
			printf("via_forge: %s/%s: %lu\n", via_wire_ops[forged_ops[i]].name,
			       flaw_name[k], sent[i][k]);
	return 0;
}
