/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connect/accept/give-up race of issue 26, between two viads joined by
 * net_memif through the faulty glue, which delays a part of the frames each
 * receives (docs/wire-format.md sections 7.6 and 7.11). A server thread on
 * viad A waits and accepts, each time after a random pause; the client on
 * viad B requests with a random Timeout of a few milliseconds, so that many
 * accepts meet a requester that is giving up or gave up (its Timeout, or the
 * short grace of CONN_NOMATCH: the legacy program's failure). A thousand
 * rounds (VIA_TEST_CMRACE_ROUNDS); in each one, the two ends must agree:
 *   - a VipConnectAccept that returns VIP_SUCCESS has a VipConnectRequest of
 *     the same round that returned VIP_SUCCESS (no half-open connection);
 *   - a VipConnectRequest that returns VIP_SUCCESS has its accept (nothing is
 *     lost here, only delayed);
 *   - and then a message crosses each way (Reliable Delivery).
 * Run with one poll lcore and with two (meson's _2lcores variant).
 *
 * Usage: it_cmrace PATH/TO/viad
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define GRACE_MS       20     /* viad.cm_nomatch_grace_ms: give-ups come fast */
#define UNREACHABLE_MS 600    /* viad.cm_unreachable_ms: an accept's bound */
#define MAX_TIMEOUT_MS 25     /* the client's Timeout: 1 .. this */
#define MAX_PAUSE_US   25000  /* the server's pause before it accepts */
#define MSG_LEN        64

/* One side of the test: a session of one viad, its VI and memory. */
struct side {
	const char *name;
	struct viad_proc v;
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_HANDLE vi;
	struct h_mem m;
	uint8_t mac[6];
};

/* What each end of one round got. */
struct round {
	VIP_RETURN request;     /* the client's VipConnectRequest */
	VIP_RETURN accept;      /* the server's VipConnectAccept; VIP_NOT_DONE: none */
	bool client_msg;        /* the client sent and received its message */
	bool server_msg;        /* the server received and answered it */
};

static struct side srv = { .name = "A" }, cli = { .name = "B" };
static struct round *rounds;
static unsigned nb_rounds;
static volatile bool stopping;
static uint64_t seed;

/* Start viad @p s: faulty glue around net_memif (A the memif server),
 * frames delayed at random on receipt. */
static bool
side_start(struct side *s, bool server, unsigned delay_us)
{
	char devargs[512], sock[256], msock[256], delay[64], fseed[64], grace[64], unr[64];
	const char *sets[] = { "port.via0.glue=faulty", "port.via0.inner=ethdev", devargs,
			       "port.via0.rx_delay=30%", "port.via0.rx_reorder=2%", delay, fseed,
			       grace, unr, NULL };

	snprintf(msock, sizeof(msock), "%s/memif.sock", h_tmpdir());
	snprintf(devargs, sizeof(devargs),
		 "port.via0.devargs=net_memif0,role=%s,socket=%s,socket-abstract=no,mac=%s",
		 server ? "server" : "client", msock,
		 server ? H_MEMIF_MAC_SERVER : H_MEMIF_MAC_CLIENT);
	snprintf(delay, sizeof(delay), "port.via0.delay_us=%u", delay_us);
	snprintf(fseed, sizeof(fseed), "port.via0.seed=%" PRIu64, seed + (server ? 1 : 2));
	snprintf(grace, sizeof(grace), "viad.cm_nomatch_grace_ms=%u", GRACE_MS);
	snprintf(unr, sizeof(unr), "viad.cm_unreachable_ms=%u", UNREACHABLE_MS);
	snprintf(sock, sizeof(sock), "%s/%s.sock", h_tmpdir(), s->name);
	return CHECK(viad_spawn(&s->v, s->name, sock, sets) == 0 &&
		     viad_wait_ready(&s->v, H_TIMEOUT_MS) == 0,
		     "viad %s: faulty glue around memif, %u us delays", s->name, delay_us);
}

static bool
side_open(struct side *s)
{
	VIP_NIC_ATTRIBUTES na;
	VIP_MEM_ATTRIBUTES ma;
	VIP_VI_ATTRIBUTES va;

	viad_use(&s->v);
	if (!CHECK(VipOpenNic("via0", &s->nic) == VIP_SUCCESS &&
		   VipQueryNic(s->nic, &na) == VIP_SUCCESS &&
		   VipCreatePtag(s->nic, &s->pt) == VIP_SUCCESS, "open via0 of viad %s", s->name))
		return false;
	memcpy(s->mac, na.LocalNicAddress, 6);
	VipErrorCallback(s->nic, NULL, h_err_handler);
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = s->pt;
	if (!h_mem_open(&s->m, s->nic, &ma, s->name, 1 << 20, !h_heap_mem()))
		return false;
	h_vi_attrs(&va, s->pt);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	return CHECK_RET(VipCreateVi(s->nic, &va, NULL, NULL, &s->vi), VIP_SUCCESS,
			 "a Reliable Delivery VI on %s", s->name);
}

static void
side_close(struct side *s)
{
	if (s->vi != NULL)
		h_vi_drop(s->vi);
	h_mem_close(&s->m, s->nic);
	if (s->nic != NULL)
		VipCloseNic(s->nic);
}

/* The server: wait, pause, accept; on success, take the client's message
 * and answer it. A receive is posted before the accept (§5.1). */
static void *
server_main(void *arg)
{
	uint64_t rng = seed ^ 0x5e4e4;
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	struct h_msg msg;
	VIP_DESCRIPTOR *d;
	char disc[17];
	unsigned i;

	(void)arg;
	h_addr(&l, srv.mac, "race-s");
	while (!stopping) {
		h_mem_reset(&srv.m);
		h_msg_prep(&srv.m, MSG_LEN, 0, &msg);
		VipPostRecv(srv.vi, msg.recv, srv.m.mh);
		if (VipConnectWait(srv.nic, &l.a, 100, &r.a, &ra, &conn) != VIP_SUCCESS) {
			h_vi_drain(srv.vi);
			continue;
		}
		/* the round: the client's discriminator is "race-c<round>" */
		memset(disc, 0, sizeof(disc));
		memcpy(disc, r.a.HostAddress + 6,
		       r.a.DiscriminatorLen < sizeof(disc) ? r.a.DiscriminatorLen : sizeof(disc) - 1);
		if (sscanf(disc, "race-c%u", &i) != 1 || i >= nb_rounds) {
			VipConnectReject(conn);
			h_vi_drain(srv.vi);
			continue;
		}
		usleep((useconds_t)(h_rand(&rng) % MAX_PAUSE_US));
		rounds[i].accept = VipConnectAccept(conn, srv.vi);
		if (rounds[i].accept == VIP_SUCCESS) {
			d = h_done_wait(srv.vi, true, 2000);
			if (d == msg.recv && (d->CS.Status & VIP_STATUS_DONE) &&
			    !(d->CS.Status & VIP_STATUS_ERROR_MASK) && d->CS.Length == MSG_LEN) {
				VipPostSend(srv.vi, msg.send, srv.m.mh);
				d = h_done_wait(srv.vi, false, 2000);
				rounds[i].server_msg = d == msg.send &&
						       !(d->CS.Status & VIP_STATUS_ERROR_MASK);
			}
			/* the client disconnects first: its DISC, then ours */
			h_state_wait(srv.vi, VIP_STATE_ERROR, 2000);
		}
		h_vi_drain(srv.vi);
	}
	return NULL;
}

/* The client's round @p i: a request of a random Timeout; connected, a
 * message to the server and its answer. */
static void
client_round(unsigned i, uint64_t *rng)
{
	char disc[16];
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	struct h_msg msg;
	VIP_DESCRIPTOR *d;

	snprintf(disc, sizeof(disc), "race-c%u", i);
	h_mem_reset(&cli.m);
	h_msg_prep(&cli.m, MSG_LEN, i, &msg);
	rounds[i].request = VipConnectRequest(cli.vi, h_addr(&l, cli.mac, disc),
					      h_addr(&r, srv.mac, "race-s"),
					      1 + h_rand(rng) % MAX_TIMEOUT_MS, &ra);
	if (rounds[i].request == VIP_SUCCESS) {
		VipPostRecv(cli.vi, msg.recv, cli.m.mh);
		VipPostSend(cli.vi, msg.send, cli.m.mh);
		d = h_done_wait(cli.vi, false, 2000);
		if (d == msg.send && !(d->CS.Status & VIP_STATUS_ERROR_MASK)) {
			d = h_done_wait(cli.vi, true, 2000);
			rounds[i].client_msg = d == msg.recv && !(d->CS.Status & VIP_STATUS_ERROR_MASK) &&
					       d->CS.Length == MSG_LEN;
		}
	}
	h_vi_drain(cli.vi);
}

int
main(int argc, char **argv)
{
	const char *env = getenv("VIA_TEST_CMRACE_ROUNDS");
	unsigned i, ok = 0, gave_up = 0, accept_refused = 0, half_open = 0, lost_accept = 0;
	unsigned no_msg = 0;
	uint64_t rng, t0;
	pthread_t st;

	h_init(argc, argv, 280);
	seed = h_seed();
	rng = seed;
	nb_rounds = env != NULL && atoi(env) > 0 ? (unsigned)atoi(env) : 1000;
	rounds = calloc(nb_rounds, sizeof(*rounds));
	if (!CHECK(rounds != NULL, "%u rounds", nb_rounds))
		return h_finish();
	for (i = 0; i < nb_rounds; i++)
		rounds[i].accept = VIP_NOT_DONE;
	if (!side_start(&srv, true, 1500) || !side_start(&cli, false, 2500) || !side_open(&srv) ||
	    !side_open(&cli) ||
	    !CHECK(h_link_wait(srv.nic, 10000) && h_link_wait(cli.nic, 10000), "the memif link is up"))
		goto out;
	if (!CHECK(pthread_create(&st, NULL, server_main, NULL) == 0, "start the server thread"))
		goto out;
	t0 = h_now_ms();
	for (i = 0; i < nb_rounds; i++)
		client_round(i, &rng);
	/* the server's last accept ends within cm_unreachable_ms */
	h_sleep_ms(UNREACHABLE_MS + 200);
	stopping = true;
	pthread_join(st, NULL);
	h_note("%u rounds in %llu ms", nb_rounds, (unsigned long long)(h_now_ms() - t0));

	for (i = 0; i < nb_rounds; i++) {
		const struct round *r = &rounds[i];

		if (r->request == VIP_SUCCESS)
			ok++;
		else
			gave_up++;
		if (r->accept == VIP_TIMEOUT)
			accept_refused++;
		if (r->accept == VIP_SUCCESS && r->request != VIP_SUCCESS) {
			if (half_open++ == 0)
				h_note("round %u: accepted while the request returned %s", i,
				       VipDpdkReturnString(r->request));
		}
		if (r->request == VIP_SUCCESS && r->accept != VIP_SUCCESS) {
			if (lost_accept++ == 0)
				h_note("round %u: connected while the accept returned %s", i,
				       VipDpdkReturnString(r->accept));
		}
		if (r->request == VIP_SUCCESS && r->accept == VIP_SUCCESS &&
		    !(r->client_msg && r->server_msg)) {
			if (no_msg++ == 0)
				h_note("round %u: connected, but the messages did not cross "
				       "(client %d, server %d)", i, r->client_msg, r->server_msg);
		}
	}
	h_note("%u connected, %u gave up (Timeout or grace); %u accepts met a requester that "
	       "had given up", ok, gave_up, accept_refused);
	CHECK(half_open == 0, "no accept succeeded for a requester that gave up (%u of %u rounds)",
	      half_open, nb_rounds);
	CHECK(lost_accept == 0, "every connected requester's accept succeeded (%u of %u rounds)",
	      lost_accept, nb_rounds);
	CHECK(no_msg == 0, "a message crossed each way on every connection (%u failed)", no_msg);
	/* the race must have been run, or this test proves nothing */
	CHECK(ok > 0 && accept_refused > 0,
	      "both outcomes of the race occurred: connections, and accepts refused");
out:
	stopping = true;
	side_close(&cli);
	side_close(&srv);
	if (cli.v.pid > 0)
		viad_stop(&cli.v);
	if (srv.v.pid > 0)
		viad_stop(&srv.v);
	free(rounds);
	return h_finish();
}
