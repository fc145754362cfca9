/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * via_connflood: a blind host on the same Ethernet that floods a viad with
 * forged connection requests (issue 25 part 5; docs/wire-format.md section
 * 7.2). Each CONN_REQ comes from a random source MAC (locally administered,
 * unicast), with a random requester VI, connection id and cookie (0, a first
 * contact, or a guess), and asks for the discriminator a real server waits
 * on, so that a viad which kept or offered forged requests would hand them
 * to that server. Every frame is well formed and sealed: only the cookie
 * stands between it and the server. The host is blind: it never reads what
 * the victim answers to the MACs it forges.
 *
 *   via_connflood IFACE VICTIM_MAC DISC [--rate F] [--seconds N]
 *                        F forged CONN_REQ per second (5000) for N s (20)
 *
 * Exit status 0 when it sent, 2 on usage or socket errors. It prints the
 * number of frames sent and of source MACs used.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"

#define SOURCES 4096        /* distinct forged source MACs, in turn */

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

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned m[6], i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++) {
		if (m[i] > 0xff)
			return -1;
		mac[i] = (uint8_t)m[i];
	}
	return 0;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One forged CONN_REQ from source @p n into @p f. @return its length */
static size_t
forge(const uint8_t victim[6], const char *disc, unsigned n, uint8_t *f)
{
	struct rte_ether_hdr *eth = (void *)f;
	struct via_wire_hdr *h = (void *)(eth + 1);
	struct via_wire_conn *w = (void *)(h + 1);
	size_t dlen = strlen(disc);

	memcpy(eth->dst_addr.addr_bytes, victim, 6);
	/* locally administered, unicast, one of SOURCES */
	eth->src_addr.addr_bytes[0] = 0x02;
	eth->src_addr.addr_bytes[1] = 0xf1;
	eth->src_addr.addr_bytes[2] = 0x00;
	eth->src_addr.addr_bytes[3] = (uint8_t)(n >> 16);
	eth->src_addr.addr_bytes[4] = (uint8_t)(n >> 8);
	eth->src_addr.addr_bytes[5] = (uint8_t)n;
	eth->ether_type = htons(VIA_ETHERTYPE);
	memset(h, 0, sizeof(*h));
	h->opcode = VIA_OP_CONN_REQ;
	via_wire_set_src_vi(h, rand32() | 1);
	via_wire_set_conn_id(h, rand32() | 1);
	/* half first contacts, half guessed cookies */
	via_wire_set_imm(h, (n & 1) ? rand32() : 0);
	memset(w, 0, sizeof(*w));
	w->reliability = rte_cpu_to_be_16(1);          /* VIP_SERVICE_UNRELIABLE */
	w->max_transfer = rte_cpu_to_be_32(65536);
	w->frame_payload = rte_cpu_to_be_16(1452);
	w->dst_disc_len = (uint8_t)dlen;
	memcpy(w->dst_disc, disc, dlen);
	w->src_disc_len = 5;
	memcpy(w->src_disc, "flood", 5);
	via_wire_seal(h, sizeof(*w), NULL, 0);
	return VIA_FRAME_HDR_LEN + sizeof(*w);
}

int
main(int argc, char **argv)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_halen = 6 };
	double seconds = 20, rate = 5000, t_end, t_next;
	unsigned long sent = 0;
	uint8_t victim[6], f[512];
	int fd, ai;

	if (argc < 4 || parse_mac(argv[2], victim) != 0 || strlen(argv[3]) > VIA_WIRE_DISC_MAX) {
		fprintf(stderr, "usage: via_connflood IFACE VICTIM_MAC DISC [--rate F] "
				"[--seconds N]\n");
		return 2;
	}
	for (ai = 4; ai < argc; ai++) {
		if (strcmp(argv[ai], "--seconds") == 0 && ai + 1 < argc)
			seconds = atof(argv[++ai]);
		else if (strcmp(argv[ai], "--rate") == 0 && ai + 1 < argc && atof(argv[ai + 1]) > 0)
			rate = atof(argv[++ai]);
		else {
			fprintf(stderr, "via_connflood: unknown argument '%s'\n", argv[ai]);
			return 2;
		}
	}
	sll.sll_protocol = htons(VIA_ETHERTYPE);
	sll.sll_ifindex = (int)if_nametoindex(argv[1]);
	if (sll.sll_ifindex == 0) {
		fprintf(stderr, "via_connflood: no interface %s\n", argv[1]);
		return 2;
	}
	/* send only: a socket of no protocol receives nothing */
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("via_connflood: packet socket");
		return 2;
	}
	memcpy(sll.sll_addr, victim, 6);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	t_next = now_s();
	t_end = t_next + seconds;
	/* paced: bursts of a millisecond's worth */
	while (!stop && now_s() < t_end) {
		unsigned burst = (unsigned)(rate / 1000) + 1, i;
		double wait;

		for (i = 0; i < burst; i++) {
			size_t len = forge(victim, argv[3], (unsigned)(sent % SOURCES), f);

			if (sendto(fd, f, len, 0, (struct sockaddr *)&sll, sizeof(sll)) ==
			    (ssize_t)len)
				sent++;
		}
		t_next += burst / rate;
		if ((wait = t_next - now_s()) > 0)
			usleep((useconds_t)(wait * 1e6));
	}
	printf("via_connflood: %lu forged CONN_REQ from %u source MACs in %.1f s\n", sent,
	       sent < SOURCES ? (unsigned)sent : SOURCES, seconds);
	return 0;
}
