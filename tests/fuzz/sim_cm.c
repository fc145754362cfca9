/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sim_cm: a deterministic simulation of the connection manager (issue 26,
 * docs/fuzzing.md section 6). Two viads' worth of daemon/cm.c state (the
 * file is included whole, as fuzz_ring includes dp.c) talk through a
 * simulated Ethernet that drops, duplicates, delays and so reorders CM
 * frames, while simulated applications call VipConnectRequest, Wait,
 * Accept, Reject, Disconnect and the peer calls with random timeouts, give
 * up, and are killed. One seed is one schedule: a seeded PRNG decides every
 * choice, the clock is the simulation's (via_now_ms), and cm.c's
 * connection identifiers come from the same PRNG, so a seed replays
 * exactly (FoundationDB's simulation testing is the model).
 *
 * Checked after every step: every call returns at most once, to a live
 * session, with a code of its call's list, and within its bound (its
 * Timeout; VipConnectAccept within cm_unreachable_ms; an unreachable
 * peer's VipConnectRequest within cm_unreachable_ms too). Checked once the
 * schedule settled (no frame in flight, no call out, every timer run):
 *   - no VI is left in Pending Connect;
 *   - accept and give-up exclude each other: a VipConnectAccept (or the
 *     accepting end of a peer connection) that returned success has a
 *     requester whose call returned success for the same connection;
 *     where no frame of it was lost and neither end disconnected it, the
 *     other way round too;
 *   - a reject is seen as a reject: a rejected connection never succeeds
 *     at the requester, and VIP_REJECT comes only from a reject;
 *   - where no frame was lost, every Connected VI's peer is Connected to
 *     it (both ends Connected or neither);
 *   - after every Connected VI sent one data frame (what the data path
 *     does at the next transfer: RESET from a peer that has no such
 *     connection), the same holds whatever was lost.
 *
 *   sim_cm [--seed S] [--count N] [--also S,S...] [--trace] [--quiet]
 *
 * Runs the seeds of --also, then N schedules from seed S (default: 1, 1000),
 * and stops at the first violation, printing its seed and its schedule
 * (the trace of that seed, run again). --trace prints the trace of every
 * schedule. Exit status 0 when every schedule held.
 *
 * The frames go through what a poll lcore does with them first
 * (via_cm_admit for a CONN_REQ from another MAC, via_cm_wants_frame for
 * data of a VI in a handshake), then cm.c's cm_input; data frames are what
 * rx_data does (taken by a Connected VI of the connection, or RESET). The
 * applications send a data frame at once after half of their connects, and
 * every Connected VI one at the end.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

/* cm.c draws connection ids with getrandom(): here they come from the
 * schedule's PRNG, so that a seed replays (declared before the include,
 * whose own <sys/random.h> is then a no-op) */
static ssize_t sim_getrandom(void *buf, size_t len, unsigned int flags);
#define getrandom sim_getrandom
#include "../../daemon/cm.c"
#undef getrandom

#define SIM_VIADS        2
#define SIM_SESSIONS     2               /* per viad */
#define SIM_VIS          2               /* per session: one per actor */
#define SIM_ACTORS       (SIM_VIADS * SIM_SESSIONS * SIM_VIS)
#define SIM_FRAMES       4096            /* in flight at once */
#define SIM_CALLS        4096            /* calls of one schedule */
#define SIM_CONNS        4096            /* connection attempts of one schedule */
#define SIM_TRACE_LINES  1500
#define SIM_UNREACHABLE  2               /* "viad" index of the MAC nobody has */
#define SIM_START_MS     100000          /* the clock at the start of a schedule */
#define SIM_SETTLE_MS    200000          /* a schedule must settle within this */
#define SIM_STEPS        1000000         /* ... and take at most this many steps */

/* ---- the schedule's randomness ------------------------------------------ */

static uint64_t rng;

static uint64_t
rand64(void)
{
	/* splitmix64: every seed a good stream */
	uint64_t x = (rng += UINT64_C(0x9e3779b97f4a7c15));

	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* Uniform in [0, n). */
static uint64_t
draw(uint64_t n)
{
	return n == 0 ? 0 : rand64() % n;
}

/* True with probability @p permille / 1000. */
static bool
chance(unsigned permille)
{
	return draw(1000) < permille;
}

static ssize_t
sim_getrandom(void *buf, size_t len, unsigned int flags)
{
	uint8_t *p = buf;
	size_t i;

	(void)flags;
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)rand64();
	return (ssize_t)len;
}

/* ---- the clock, the log and the trace ------------------------------------ */

static uint64_t now_ms;
static bool tracing;
static char trace_buf[SIM_TRACE_LINES][160];
static unsigned trace_n;

uint64_t
via_now_ms(void)
{
	return now_ms;
}

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
trace(const char *fmt, ...)
{
	va_list ap;
	char *line;

	if (!tracing)
		return;
	line = trace_buf[trace_n++ % SIM_TRACE_LINES];
	snprintf(line, 16, "%7" PRIu64 " ", now_ms - SIM_START_MS);
	va_start(ap, fmt);
	vsnprintf(line + strlen(line), sizeof(trace_buf[0]) - strlen(line), fmt, ap);
	va_end(ap);
}

void
via_log(enum via_log_level level, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	if (!tracing || level == VIA_LOG_DEBUG)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	trace("    log: %s", msg);
}

static void
trace_print(void)
{
	unsigned i = trace_n > SIM_TRACE_LINES ? trace_n - SIM_TRACE_LINES : 0;

	for (; i < trace_n; i++)
		printf("  %s\n", trace_buf[i % SIM_TRACE_LINES]);
}

/* ---- the world ------------------------------------------------------------ */

/* A frame on the simulated Ethernet. */
struct sim_frame {
	uint64_t at;                 /* when it arrives */
	uint8_t src[6], dst[6];
	struct via_wire_hdr h;
	struct via_wire_conn payload;
};

/* One viad: its daemon context and what the sessions and VIs need. */
struct sim_viad {
	struct viad d;
	struct via_session s[SIM_SESSIONS];
	bool alive[SIM_SESSIONS];
	uint64_t bells[SIM_SESSIONS][2];
	struct via_ring_shared rings[SIM_SESSIONS][SIM_VIS];
	uint64_t timer_at;           /* run via_cm_timers then; UINT64_MAX: no */
};

enum call_kind {
	CALL_REQUEST, CALL_WAIT, CALL_ACCEPT, CALL_REJECT, CALL_DISCONNECT,
	CALL_PEER_REQUEST, CALL_PEER_WAIT, CALL_PEER_DONE, CALL_KINDS,
};
static const char *const call_names[CALL_KINDS] = {
	"ConnectRequest", "ConnectWait", "ConnectAccept", "ConnectReject", "Disconnect",
	"ConnectPeerRequest", "ConnectPeerWait", "ConnectPeerDone",
};

/* An application's call into viad; the deferred ones wait for via_ctl_reply. */
struct sim_call {
	enum call_kind kind;
	int x, s, actor;
	uint32_t seq;
	uint64_t start, bound;       /* must be answered by bound (UINT64_MAX: no bound) */
	bool out;                    /* deferred, not answered yet */
	bool answered;
	int rc;
	struct via_ctl_conn_wait_rep wait_rep;
};

/* What one connection attempt (conn_id) came to. */
struct sim_conn {
	uint32_t id;
	bool req_ok, req_failed;     /* the requester's call (or its peer end's) */
	int req_rc;
	bool acc_ok;                 /* an accepting end returned success */
	bool rejected;               /* VipConnectReject returned success */
	bool lost;                   /* a frame of it was dropped */
	bool disconnected;           /* an end called VipDisconnect on it */
	bool killed;                 /* a session of it ended */
};

enum actor_kind { ACT_CLIENT, ACT_SERVER, ACT_PEER };
enum actor_state {
	AS_IDLE,         /* next move at wake */
	AS_CALL,         /* a deferred call is out */
	AS_HANDLE,       /* server: holds a ConnHandle, answers it at wake */
	AS_PEER,         /* peer: request out, polls VipConnectPeerDone at wake */
	AS_CONNECTED,    /* holds the connection until wake */
	AS_DONE,
};

struct actor {
	enum actor_kind kind;
	enum actor_state st;
	int x, s;
	struct via_vi *vi;
	uint64_t wake;               /* UINT64_MAX: nothing to do by itself */
	int call;                    /* the call out (AS_CALL) */
	uint64_t cancel_at;          /* client: VipDisconnect while requesting */
	uint32_t handle;             /* server: the ConnHandle */
	uint32_t handle_conn;
	int target;                  /* client: the viad it connects to */
	int partner;                 /* peer: the other end's actor */
	unsigned disc;               /* peer: the pair's number */
	bool stays;                  /* keeps its connection when the schedule ends */
	bool must_reject;            /* server: its accept met a conflict (§9.4.2) */
	uint64_t peer_bound;         /* peer: its calls must end by then */
	uint32_t attempt;            /* peer: the conn_id of its own attempt */
};

static struct sim_viad viads[SIM_VIADS];
static struct sim_frame frames[SIM_FRAMES]; /* in flight: the first nb_frames */
static unsigned nb_frames;
static struct sim_call calls[SIM_CALLS];
static unsigned nb_calls;
static struct sim_conn conns[SIM_CONNS];
static unsigned nb_conns;
static struct actor actors[SIM_ACTORS];
static unsigned nb_actors;
static uint32_t next_seq;
static const uint8_t unreachable_mac[6] = { 0x02, 0, 0, 0, 0x0c, 0x01 };

/* The schedule's parameters. */
static struct {
	uint64_t act_end;            /* no new calls after */
	uint64_t chaos_end;          /* frames lost and duplicated before */
	unsigned drop_permille, dup_permille;
	unsigned max_delay_ms;
	uint64_t kill_at;            /* a session ends then (UINT64_MAX: none) */
	int kill_x, kill_s;
	uint32_t unreachable_ms;     /* the bound of an unanswered request */
} p;

static const char *violation;
static char violation_buf[400];
static uint64_t frames_sent, frames_lost;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void check_rc(const struct sim_call *c);

static void
fail(const char *fmt, ...)
{
	va_list ap;

	if (violation != NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(violation_buf, sizeof(violation_buf), fmt, ap);
	va_end(ap);
	violation = violation_buf;
	trace("VIOLATION: %s", violation);
}

static int
viad_of_mac(const uint8_t *mac)
{
	int x;

	for (x = 0; x < SIM_VIADS; x++) {
		if (memcmp(viads[x].d.nics[0].info.mac, mac, 6) == 0)
			return x;
	}
	return -1;
}

static int
viad_of(const struct viad *d)
{
	return (int)((const struct sim_viad *)(const void *)d - viads);
}

static const char *
op_name(uint8_t op)
{
	return op < VIA_OP_COUNT && via_wire_ops[op].name != NULL ? via_wire_ops[op].name : "op?";
}

static struct sim_conn *
conn_of(uint32_t id)
{
	unsigned i;

	if (id == 0)
		return NULL;
	for (i = 0; i < nb_conns; i++) {
		if (conns[i].id == id)
			return &conns[i];
	}
	if (nb_conns == SIM_CONNS)
		return NULL;
	memset(&conns[nb_conns], 0, sizeof(conns[0]));
	conns[nb_conns].id = id;
	return &conns[nb_conns++];
}

/* ---- what cm.c calls: the frame I/O, replies, errors ---------------------- */

static void
net_send(struct via_nic *nic, const uint8_t mac[6], const struct via_wire_hdr *h,
	 const void *payload, uint16_t len)
{
	int from = viad_of(nic->d), copies = 1, c, k;
	uint64_t at;

	frames_sent++;
	trace("  viad %c sends %s conn %#x dst_vi %u src_vi %u imm %#x%s to %s", 'A' + from,
	      op_name(h->opcode), via_wire_conn_id(h), via_wire_dst_vi(h), via_wire_src_vi(h),
	      via_wire_imm(h), via_wire_flags(h) & VIA_WF_PEER ? " PEER" : "",
	      viad_of_mac(mac) < 0 ? "nobody" : viad_of_mac(mac) == 0 ? "A" : "B");
	if (now_ms < p.chaos_end && chance(p.drop_permille)) {
		struct sim_conn *sc = conn_of(via_wire_conn_id(h));

		frames_lost++;
		if (sc != NULL)
			sc->lost = true;
		trace("    (lost)");
		return;
	}
	if (now_ms < p.chaos_end && chance(p.dup_permille))
		copies = 2;
	for (c = 0; c < copies; c++) {
		if (nb_frames == SIM_FRAMES) {
			fail("more than %d frames in flight", SIM_FRAMES);
			return;
		}
		k = (int)nb_frames++;
		at = now_ms + draw(p.max_delay_ms + 1);
		frames[k].at = at;
		memcpy(frames[k].src, nic->info.mac, 6);
		memcpy(frames[k].dst, mac, 6);
		frames[k].h = *h;
		via_wire_set_payload_len(&frames[k].h, len);
		memset(&frames[k].payload, 0, sizeof(frames[k].payload));
		if (len > 0)
			memcpy(&frames[k].payload, payload, len);
	}
}

void
via_dp_send_frame(struct via_nic *nic, const uint8_t mac[6], const struct via_wire_hdr *tmpl,
		  const void *payload, uint16_t len)
{
	struct via_wire_hdr h = *tmpl;

	h.version = VIA_WIRE_VERSION;
	net_send(nic, mac, &h, payload, len);
}

uint32_t
via_dp_frame_payload(const struct via_nic *nic)
{
	(void)nic;
	return 1500 - 48;
}

static struct via_poll_stats stats;

struct via_poll_stats *
via_poll_stats_here(void)
{
	return &stats;
}

const struct via_poll_stats *
via_poll_stats_of(unsigned lcore)
{
	(void)lcore;
	return &stats;
}

/* cm.c hands a frame to the data path (via_dp_cm_input, not called here) */
void
via_resp_input(struct viad *d, struct via_nic *nic, struct rte_mbuf *m,
	       struct via_poll_stats *st)
{
	(void)d;
	(void)nic;
	(void)m;
	(void)st;
	abort();
}

/* the memory of a VI's connection: the data path's, not simulated */
int
via_dp_vi_provision(struct via_vi *vi)
{
	(void)vi;
	return 0;
}

/* viad's answer to a deferred call of session @p s. */
void
via_ctl_reply(struct viad *d, struct via_session *s, unsigned op, uint32_t seq, int status,
	      const void *body)
{
	int x = viad_of(d), si = (int)(s - viads[x].s);
	unsigned i;

	(void)op;
	for (i = 0; i < nb_calls; i++) {
		struct sim_call *c = &calls[i];

		if (c->seq != seq || c->x != x || c->s != si)
			continue;
		if (!viads[x].alive[si])
			fail("%s answered after its session ended", call_names[c->kind]);
		if (c->answered)
			fail("%s (seq %u) answered twice", call_names[c->kind], seq);
		c->answered = true;
		c->out = false;
		c->rc = status;
		check_rc(c);
		if (c->kind == CALL_WAIT && status == 0 && body != NULL)
			c->wait_rep = *(const struct via_ctl_conn_wait_rep *)body;
		trace("  viad %c answers %s of actor %d: %s", 'A' + x, call_names[c->kind], c->actor,
		      status == 0 ? "success" : strerror(-status));
		return;
	}
	fail("viad %c answered seq %u, which no call has", 'A' + x, seq);
}

void
via_session_async_error(struct via_session *s, uint32_t code, uint32_t vi_cookie,
			uint32_t resource, uint32_t op, uint64_t desc_va)
{
	(void)s;
	(void)vi_cookie;
	(void)resource;
	(void)op;
	(void)desc_va;
	trace("    async error %u", code);
}

/* vi.c's other neighbours: the VIs here are made by hand (vi_new) */
struct via_ptag *
via_ptag_get(struct viad *d, struct via_session *s, uint32_t id)
{
	(void)d;
	(void)s;
	(void)id;
	return NULL;
}

struct via_cq *
via_cq_get(struct viad *d, struct via_session *s, uint32_t id)
{
	(void)d;
	(void)s;
	(void)id;
	return NULL;
}

int
via_user_charge(struct viad *d, struct via_session *s, enum via_user_res res, uint64_t n)
{
	(void)d;
	(void)s;
	(void)res;
	(void)n;
	return 0;
}

void
via_user_uncharge(struct viad *d, struct via_session *s, enum via_user_res res, uint64_t n)
{
	(void)d;
	(void)s;
	(void)res;
	(void)n;
}

int
via_arena_alloc(struct via_arena *a, uint64_t len, uint64_t *off)
{
	(void)a;
	(void)len;
	(void)off;
	return -ENOMEM;
}

void
via_arena_free(struct via_arena *a, uint64_t off, uint64_t len)
{
	(void)a;
	(void)off;
	(void)len;
}

/* the data path's events: nothing to flush here */
static void
ev_conn_ended(struct viad *d, struct via_vi *vi)
{
	(void)d;
	(void)vi;
}

static void
ev_conn_reset(struct via_vi *vi)
{
	(void)vi;
}

/* ---- setting a schedule up ------------------------------------------------ */

static struct via_vi *
vi_new(struct sim_viad *sv, int s, int k, uint16_t reliability)
{
	struct via_vi *vi = calloc(1, sizeof(*vi));

	if (vi == NULL || via_idtab_alloc(&sv->d.vis, vi, &vi->id) != 0)
		abort();
	vi->owner = &sv->s[s];
	vi->state = VIP_STATE_IDLE;
	vi->attr.reliability = reliability;
	vi->attr.max_transfer = 65536;
	vi->shard = &sv->d.shards[0];
	vi->bell = (uint32_t)k;
	vi->wq[VIA_WQ_RECV].sh = &sv->rings[s][k];
	TAILQ_INSERT_TAIL(&sv->s[s].vis, vi, link);
	return vi;
}

static void
viad_setup(int x)
{
	struct sim_viad *sv = &viads[x];
	struct viad *d = &sv->d;
	struct via_nic *nic = &d->nics[0];
	int s;

	memset(sv, 0, sizeof(*sv));
	via_conf_defaults(&d->conf);
	/* the grace: from "fails at the first answer" to the default */
	d->conf.cm_nomatch_grace_ms = (uint32_t[]){ 0, 30, 200, 500 }[draw(4)];
	d->conf.cm_unreachable_ms = p.unreachable_ms;
	TAILQ_INIT(&d->session_list);
	d->nb_shards = 1;
	TAILQ_INIT(&d->shards[0].rel_vis);
	nic->d = d;
	nic->index = 0;
	memcpy(nic->info.mac, (uint8_t[]){ 0x02, 0, 0, 0, (uint8_t)(0x0a + x), 0x01 }, 6);
	nic->info.max_discriminator_len = 64;
	d->nb_nics = 1;
	if (via_idtab_init(&d->vis, 64) != 0 || via_cm_init(d) != 0)
		abort();
	d->ev.conn_ended = ev_conn_ended;
	d->ev.conn_reset = ev_conn_reset;
	for (s = 0; s < SIM_SESSIONS; s++) {
		struct via_session *ss = &sv->s[s];

		ss->id = (uint32_t)s + 1;
		ss->nic = nic;
		ss->opened = true;
		ss->bells = sv->bells[s];
		ss->bell_summary = &sv->bells[s][1];
		ss->bell_words = 1;
		TAILQ_INIT(&ss->vis);
		TAILQ_INSERT_TAIL(&d->session_list, ss, link);
		sv->alive[s] = true;
	}
	sv->timer_at = now_ms;
}

static void
viad_teardown(int x)
{
	struct sim_viad *sv = &viads[x];
	struct via_vi *vi;
	int s;

	via_cm_fini(&sv->d);
	for (s = 0; s < SIM_SESSIONS; s++) {
		while ((vi = TAILQ_FIRST(&sv->s[s].vis)) != NULL) {
			TAILQ_REMOVE(&sv->s[s].vis, vi, link);
			free(vi);
		}
	}
	via_idtab_fini(&sv->d.vis);
}

static void
disc_set(struct via_ctl_addr *a, const uint8_t *mac, const char *fmt, unsigned n)
{
	memset(a, 0, sizeof(*a));
	if (mac != NULL)
		memcpy(a->mac, mac, 6);
	a->disc_len = (uint8_t)snprintf((char *)a->disc, sizeof(a->disc), fmt, n);
}

/* The actors: per session, one per VI: clients, servers, peer pairs. */
static void
actors_setup(void)
{
	int x, s, k;
	unsigned pairs = 0;

	nb_actors = 0;
	for (x = 0; x < SIM_VIADS; x++) {
		for (s = 0; s < SIM_SESSIONS; s++) {
			for (k = 0; k < SIM_VIS; k++) {
				struct actor *a = &actors[nb_actors++];
				/* an attribute conflict now and then (§9.4.2) */
				uint16_t rel = chance(50) ? VIP_SERVICE_RELIABLE_DELIVERY
							  : VIP_SERVICE_UNRELIABLE;

				memset(a, 0, sizeof(*a));
				a->x = x;
				a->s = s;
				a->vi = vi_new(&viads[x], s, k, rel);
				a->kind = (enum actor_kind)draw(3);
				a->st = AS_IDLE;
				a->wake = now_ms + draw(200);
				a->call = -1;
				a->partner = -1;
				/* mostly the other viad; sometimes its own NIC or a
				 * MAC nobody has */
				a->target = chance(100) ? SIM_UNREACHABLE : chance(150) ? x : 1 - x;
				a->stays = chance(300);
			}
		}
	}
	/* peers pair up across the two viads, in order; one left alone
	 * requests a peer that never asks */
	for (k = 0; k < (int)nb_actors; k++) {
		struct actor *a = &actors[k];
		int j;

		if (a->kind != ACT_PEER || a->partner >= 0 || a->x != 0)
			continue;
		for (j = 0; j < (int)nb_actors; j++) {
			if (actors[j].kind == ACT_PEER && actors[j].x == 1 && actors[j].partner < 0) {
				a->partner = j;
				actors[j].partner = k;
				a->disc = actors[j].disc = pairs++;
				break;
			}
		}
	}
}

static void
schedule_setup(void)
{
	int x;

	now_ms = SIM_START_MS + draw(1000);
	nb_calls = 0;
	nb_conns = 0;
	next_seq = 1;
	violation = NULL;
	frames_sent = frames_lost = 0;
	nb_frames = 0;
	p.unreachable_ms = (uint32_t[]){ 400, 1000, 3000 }[draw(3)];
	p.act_end = now_ms + 50 + draw(1500);
	/* half of the schedules lose nothing: there, every check is exact */
	p.drop_permille = chance(500) ? 0 : (unsigned[]){ 20, 100, 300, 700 }[draw(4)];
	p.dup_permille = chance(700) ? 0 : 100;
	/* shorter than the unreachable bound: past it, a handshake's
	 * retransmissions get through */
	p.chaos_end = now_ms + draw(p.unreachable_ms / 2);
	p.max_delay_ms = (unsigned[]){ 0, 1, 3, 20, 120 }[draw(5)];
	p.kill_at = chance(150) ? now_ms + draw(1500) : UINT64_MAX;
	p.kill_x = (int)draw(SIM_VIADS);
	p.kill_s = (int)draw(SIM_SESSIONS);
	for (x = 0; x < SIM_VIADS; x++)
		viad_setup(x);
	actors_setup();
	trace("schedule: act_end +%" PRIu64 ", chaos_end +%" PRIu64
	      " (drop %u‰, dup %u‰), delay ≤ %u ms, kill %s, unreachable %u ms, grace %u/%u",
	      p.act_end - now_ms, p.chaos_end - now_ms, p.drop_permille, p.dup_permille,
	      p.max_delay_ms, p.kill_at == UINT64_MAX ? "none" : "one", p.unreachable_ms,
	      viads[0].d.conf.cm_nomatch_grace_ms, viads[1].d.conf.cm_nomatch_grace_ms);
}

/* ---- the applications' calls ---------------------------------------------- */

static struct sim_call *
call_new(struct actor *a, enum call_kind kind, uint64_t bound)
{
	struct sim_call *c;

	if (nb_calls == SIM_CALLS) {
		fail("more than %d calls", SIM_CALLS);
		return &calls[0];
	}
	c = &calls[nb_calls++];
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->x = a->x;
	c->s = a->s;
	c->actor = (int)(a - actors);
	c->seq = next_seq++;
	c->start = now_ms;
	c->bound = bound;
	return c;
}

static void call_done(struct actor *a);

/* One data frame of @p vi's connection, as a Send's first frame. */
static void
data_send(const struct via_vi *vi)
{
	struct via_wire_hdr h;

	via_wire_hdr_init(&h, VIA_OP_SEND, 0, vi->conn.remote_vi, vi->id, vi->conn.id);
	trace("VI %u sends a data frame", vi->id);
	net_send(vi->owner->nic, vi->conn.remote_mac, &h, NULL, 0);
}

/* The call returned @p rc now, or deferred its answer; the calls whose
 * answer decides the actor's next move go on in call_done(). */
static void
call_returned(struct actor *a, struct sim_call *c, int rc)
{
	if (rc == VIA_CTL_DEFERRED) {
		c->out = true;
		a->call = (int)(c - calls);
		a->st = AS_CALL;
		trace("  actor %d: %s deferred", c->actor, call_names[c->kind]);
		return;
	}
	c->answered = true;
	c->rc = rc;
	check_rc(c);
	trace("  actor %d: %s returns %s", c->actor, call_names[c->kind],
	      rc == 0 ? "success" : strerror(-rc));
	if (c->kind == CALL_REQUEST || c->kind == CALL_WAIT || c->kind == CALL_ACCEPT ||
	    c->kind == CALL_PEER_WAIT) {
		a->call = (int)(c - calls);
		call_done(a);
	}
}

static uint32_t
timeout_pick(void)
{
	return chance(150) ? VIA_CTL_INFINITE : (uint32_t)(1 + draw(400));
}

/* The most a call may take (its Timeout; accepts and unanswered requests
 * are bounded by the unreachable bound, plus a retransmission and a trip). */
static uint64_t
bound_of(uint32_t timeout_ms, bool unreachable)
{
	uint64_t b = timeout_ms == VIA_CTL_INFINITE ? UINT64_MAX : now_ms + timeout_ms;
	uint64_t u = now_ms + p.unreachable_ms + CM_RETRY_MS + 2 * p.max_delay_ms;

	return unreachable && u < b ? u : b;
}

static void
client_request(struct actor *a)
{
	struct sim_viad *sv = &viads[a->x];
	struct via_ctl_conn_request_req q;
	const uint8_t *mac = a->target == SIM_UNREACHABLE ? unreachable_mac
							  : viads[a->target].d.nics[0].info.mac;
	struct sim_call *c;
	int rc;

	memset(&q, 0, sizeof(q));
	q.vi = a->vi->id;
	q.timeout_ms = timeout_pick();
	disc_set(&q.local, sv->d.nics[0].info.mac, "client%u", (unsigned)(a - actors));
	disc_set(&q.remote, mac, "srv", 0);
	c = call_new(a, CALL_REQUEST, bound_of(q.timeout_ms, a->target == SIM_UNREACHABLE));
	trace("actor %d (viad %c): ConnectRequest(vi %u, %s, timeout %d)", c->actor, 'A' + a->x,
	      a->vi->id, a->target == SIM_UNREACHABLE ? "nobody" : a->target ? "B" : "A",
	      q.timeout_ms == VIA_CTL_INFINITE ? -1 : (int)q.timeout_ms);
	rc = via_cm_request(&sv->d, &sv->s[a->s], &q, c->seq);
	a->attempt = 0;
	if (rc == VIA_CTL_DEFERRED) {
		struct sim_conn *sc = conn_of(a->vi->conn.id);

		if (sc == NULL)
			fail("a request got no connection id");
		a->attempt = a->vi->conn.id;
		/* another thread of the program gives up on it now and then */
		a->cancel_at = chance(100) ? now_ms + draw(300) : UINT64_MAX;
	}
	call_returned(a, c, rc);
}

static void
server_wait(struct actor *a)
{
	struct sim_viad *sv = &viads[a->x];
	struct via_ctl_conn_wait_req q;
	struct sim_call *c;
	int rc;

	memset(&q, 0, sizeof(q));
	q.timeout_ms = (uint32_t[]){ 0, 20, 100, 400 }[draw(4)];
	disc_set(&q.local, NULL, "srv", 0);
	c = call_new(a, CALL_WAIT, now_ms + q.timeout_ms);
	trace("actor %d (viad %c): ConnectWait(timeout %u)", c->actor, 'A' + a->x, q.timeout_ms);
	rc = via_cm_wait(&sv->d, &sv->s[a->s], &q, c->seq, &c->wait_rep);
	call_returned(a, c, rc);
}

/* The connection id behind a ConnHandle (cm.c's table), 0 if none. */
static uint32_t
handle_conn(struct sim_viad *sv, uint32_t handle)
{
	struct via_cm_req *r = via_idtab_lookup(&sv->d.cm->reqs, handle);

	return r != NULL ? r->conn_id : 0;
}

static void
server_answer(struct actor *a)
{
	struct sim_viad *sv = &viads[a->x];
	struct sim_call *c;
	struct sim_conn *sc = conn_of(a->handle_conn);
	int rc;

	if (a->must_reject || chance(250)) {
		c = call_new(a, CALL_REJECT, now_ms);
		trace("actor %d (viad %c): ConnectReject(conn %#x)", c->actor, 'A' + a->x,
		      a->handle_conn);
		rc = via_cm_reject(&sv->d, &sv->s[a->s], a->handle);
		if (rc == 0 && sc != NULL)
			sc->rejected = true;
		call_returned(a, c, rc);
		a->must_reject = false;
		a->st = AS_IDLE;
		a->wake = now_ms + draw(50);
		return;
	}
	c = call_new(a, CALL_ACCEPT, now_ms + p.unreachable_ms + CM_RETRY_MS + 2 * p.max_delay_ms);
	trace("actor %d (viad %c): ConnectAccept(conn %#x, vi %u)", c->actor, 'A' + a->x,
	      a->handle_conn, a->vi->id);
	rc = via_cm_accept(&sv->d, &sv->s[a->s], a->handle, a->vi->id, c->seq);
	call_returned(a, c, rc);
}

static void
peer_request(struct actor *a)
{
	struct sim_viad *sv = &viads[a->x];
	struct actor *b = a->partner >= 0 ? &actors[a->partner] : NULL;
	struct via_ctl_conn_request_req q;
	const uint8_t *mac = b != NULL ? viads[b->x].d.nics[0].info.mac
				       : viads[1 - a->x].d.nics[0].info.mac;
	struct sim_call *c;
	int rc;

	memset(&q, 0, sizeof(q));
	q.vi = a->vi->id;
	q.timeout_ms = (uint32_t)(1 + draw(600));
	disc_set(&q.local, sv->d.nics[0].info.mac, a->x == 0 ? "peer%ua" : "peer%ub", a->disc);
	disc_set(&q.remote, mac, a->x == 0 ? "peer%ub" : "peer%ua", a->disc);
	c = call_new(a, CALL_PEER_REQUEST, now_ms);
	trace("actor %d (viad %c): ConnectPeerRequest(vi %u, timeout %u)", c->actor, 'A' + a->x,
	      a->vi->id, q.timeout_ms);
	rc = via_cm_peer_request(&sv->d, &sv->s[a->s], &q);
	call_returned(a, c, rc);
	if (rc != 0) {
		a->st = AS_IDLE;
		a->wake = now_ms + 1 + draw(100);
		return;
	}
	a->attempt = a->vi->conn.id;
	/* the peer calls end at the Timeout, or once a handshake begun
	 * before it ends (bounded as an accept) */
	a->peer_bound = now_ms + q.timeout_ms + p.unreachable_ms + CM_RETRY_MS +
			2 * p.max_delay_ms;
	if (chance(500)) {
		c = call_new(a, CALL_PEER_WAIT, a->peer_bound);
		trace("actor %d: ConnectPeerWait", c->actor);
		rc = via_cm_peer_done(&sv->d, &sv->s[a->s], a->vi->id, c->seq,
				      &(struct via_ctl_vi_attr){ 0 });
		call_returned(a, c, rc);
		return;
	}
	a->st = AS_PEER;
	a->wake = now_ms + draw(30);
}

/* A peer call returned @p rc (from PeerDone, or a PeerWait's answer). */
static void
peer_result(struct actor *a, int rc)
{
	struct sim_conn *sc;

	if (rc == -EAGAIN) {
		if (now_ms > a->peer_bound)
			fail("actor %d: the peer request still runs past its bound",
			     (int)(a - actors));
		a->st = AS_PEER;
		a->wake = now_ms + 1 + draw(30);
		return;
	}
	if (rc == 0) {
		sc = conn_of(a->vi->conn.id);
		if (sc != NULL) {
			/* the end whose (MAC, VI) is larger accepted (cm.c) */
			int cmp = memcmp(viads[a->x].d.nics[0].info.mac, a->vi->conn.remote_mac, 6);

			if (cmp > 0 || (cmp == 0 && a->vi->id > a->vi->conn.remote_vi))
				sc->acc_ok = true;
			else
				sc->req_ok = true;
		}
		if (chance(500))
			data_send(a->vi);
		a->st = AS_CONNECTED;
		a->wake = now_ms + draw(300);
		return;
	}
	sc = conn_of(a->attempt);
	if (sc != NULL) {
		sc->req_failed = true;
		sc->req_rc = rc;
	}
	a->st = AS_IDLE;
	a->wake = now_ms + 1 + draw(100);
}

static void
disconnect(struct actor *a)
{
	struct sim_viad *sv = &viads[a->x];
	struct sim_call *c = call_new(a, CALL_DISCONNECT, now_ms);
	int rc;

	trace("actor %d (viad %c): Disconnect(vi %u, %s)", c->actor, 'A' + a->x, a->vi->id,
	      via_vi_state_name(a->vi->state));
	if (a->vi->conn.id != 0 && conn_of(a->vi->conn.id) != NULL)
		conn_of(a->vi->conn.id)->disconnected = true;
	rc = via_cm_disconnect(&sv->d, &sv->s[a->s], a->vi->id);
	call_returned(a, c, rc);
	if (rc != 0)
		fail("Disconnect returned %d", rc);
}

/* The deferred call of @p a was answered: what the actor does next. */
static void
call_done(struct actor *a)
{
	struct sim_call *c = &calls[a->call];
	struct sim_conn *sc;

	a->call = -1;
	switch (c->kind) {
	case CALL_REQUEST:
		sc = conn_of(a->attempt);
		if (sc != NULL) {
			sc->req_rc = c->rc;
			if (c->rc == 0)
				sc->req_ok = true;
			else
				sc->req_failed = true;
		}
		if (c->rc == 0) {
			/* programs often send at once: the data may overtake
			 * the CONN_ACK (or stand in for a lost one) */
			if (chance(500))
				data_send(a->vi);
			a->st = AS_CONNECTED;
			a->wake = now_ms + draw(300);
		} else {
			a->st = AS_IDLE;
			a->wake = now_ms + 1 + draw(100);
		}
		break;
	case CALL_WAIT:
		if (c->rc == 0) {
			a->handle = c->wait_rep.conn;
			a->handle_conn = handle_conn(&viads[a->x], a->handle);
			a->st = AS_HANDLE;
			/* answered at once, or after a while: maybe after the
			 * requester gave up */
			a->wake = now_ms + (chance(300) ? 0 : draw(250));
		} else {
			a->st = AS_IDLE;
			a->wake = now_ms + draw(20);
		}
		break;
	case CALL_ACCEPT:
		if (c->rc == 0) {
			sc = conn_of(a->vi->conn.id);
			if (sc != NULL)
				sc->acc_ok = true;
			a->st = AS_CONNECTED;
			a->wake = now_ms + draw(300);
		} else if (c->rc == -EPROTONOSUPPORT || c->rc == -EMSGSIZE || c->rc == -EDOM) {
			/* a conflict: the handle stays valid; the consumer rejects it */
			a->must_reject = true;
			a->st = AS_HANDLE;
			a->wake = now_ms;
		} else {
			a->st = AS_IDLE;
			a->wake = now_ms + draw(50);
		}
		break;
	case CALL_PEER_WAIT:
		peer_result(a, c->rc);
		break;
	default:
		fail("%s deferred", call_names[c->kind]);
	}
}

/* The actor's own move at its wake time. */
static void
actor_move(struct actor *a)
{
	bool active = now_ms < p.act_end;
	struct sim_call *c;
	int rc;

	a->wake = UINT64_MAX;
	switch (a->st) {
	case AS_IDLE:
		if (!active) {
			a->st = AS_DONE;
			return;
		}
		if (a->kind == ACT_CLIENT)
			client_request(a);
		else if (a->kind == ACT_SERVER)
			server_wait(a);
		else
			peer_request(a);
		if (a->st == AS_IDLE && a->wake == UINT64_MAX)
			a->wake = now_ms + 1 + draw(50);
		break;
	case AS_HANDLE:
		server_answer(a);
		break;
	case AS_PEER: {
		struct via_ctl_vi_attr attr;

		c = call_new(a, CALL_PEER_DONE, now_ms);
		rc = via_cm_peer_done(&viads[a->x].d, &viads[a->x].s[a->s], a->vi->id, 0, &attr);
		call_returned(a, c, rc);
		peer_result(a, rc);
		break;
	}
	case AS_CONNECTED:
		if (!active && a->stays)
			return;         /* keeps its connection: checked at the end */
		disconnect(a);
		a->st = AS_IDLE;
		a->wake = now_ms + draw(100);
		break;
	default:
		break;
	}
}

/* Another thread of the client's program calls VipDisconnect on the VI
 * whose request is out. */
static void
actor_cancel(struct actor *a)
{
	a->cancel_at = UINT64_MAX;
	disconnect(a);
}

/* The session of @p a's kind ends (the program is killed). */
static void
session_kill(int x, int s)
{
	struct sim_viad *sv = &viads[x];
	struct via_session *ss = &sv->s[s];
	struct via_vi *vi;
	unsigned i;

	trace("session %d of viad %c is killed", s, 'A' + x);
	sv->alive[s] = false;          /* no answer may come to it from now on */
	via_cm_session_closed(&sv->d, ss);
	for (i = 0; i < nb_actors; i++) {
		struct actor *a = &actors[i];

		if (a->x != x || a->s != s)
			continue;
		if (a->vi->conn.id != 0 && conn_of(a->vi->conn.id) != NULL)
			conn_of(a->vi->conn.id)->killed = true;
		if (a->attempt != 0 && conn_of(a->attempt) != NULL)
			conn_of(a->attempt)->killed = true;
		if (a->handle_conn != 0 && conn_of(a->handle_conn) != NULL)
			conn_of(a->handle_conn)->killed = true;
		if (a->call >= 0)
			calls[a->call].out = false;   /* nobody waits for it */
		a->st = AS_DONE;
		a->wake = UINT64_MAX;
		a->cancel_at = UINT64_MAX;
		a->vi = NULL;
	}
	/* its VIs go, as via_session_close frees them (via_vi_free: out of
	 * the shard's list of reliable VIs too) */
	while ((vi = TAILQ_FIRST(&ss->vis)) != NULL) {
		TAILQ_REMOVE(&ss->vis, vi, link);
		if (vi->rel_listed)
			TAILQ_REMOVE(&vi->shard->rel_vis, vi, rel_link);
		via_idtab_free(&sv->d.vis, vi->id);
		free(vi);
	}
	TAILQ_REMOVE(&sv->d.session_list, ss, link);
}

/* ---- the network ---------------------------------------------------------- */

/* What viad's data path does with a data frame: dp.c rx_deliver (a VI in a
 * handshake: the connection manager first), then dp_resp.c rx_data. */
static void
data_input(struct sim_viad *sv, const struct sim_frame *f)
{
	struct viad *d = &sv->d;
	struct via_vi *vi;
	struct via_wire_hdr h;

	if (via_cm_wants_frame(d, &f->h)) {
		if (cm_input(d, &d->nics[0], f->src, &f->h))
			trace("    data taken, after the connection manager");
		else
			trace("    data dropped by the connection manager");
		return;
	}
	vi = via_vi_of_frame(d, &d->nics[0], f->src, via_wire_dst_vi(&f->h),
			     via_wire_src_vi(&f->h), via_wire_conn_id(&f->h), via_poll_stats_here());
	if (vi != NULL) {
		trace("    data taken by VI %u", vi->id);
		return;
	}
	via_wire_hdr_init(&h, VIA_OP_RESET, 0, via_wire_src_vi(&f->h), via_wire_dst_vi(&f->h),
		 via_wire_conn_id(&f->h));
	net_send(&d->nics[0], f->src, &h, NULL, 0);
}

/* A poll lcore's look at a CONN_REQ from the port (via_cm_admit): frames
 * from the NIC's own MAC stay in viad and are not looked at. */
static bool
admitted(struct sim_viad *sv, const struct sim_frame *f)
{
	uint8_t fr[RTE_ETHER_HDR_LEN + sizeof(struct via_wire_hdr)];
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)fr;
	struct rte_mbuf m;

	if (memcmp(f->src, f->dst, 6) == 0)
		return true;
	memset(&m, 0, sizeof(m));
	memcpy(eth->src_addr.addr_bytes, f->src, 6);
	memcpy(eth->dst_addr.addr_bytes, f->dst, 6);
	memcpy(fr + RTE_ETHER_HDR_LEN, &f->h, sizeof(f->h));
	m.buf_addr = fr;
	return via_cm_admit(&sv->d, &sv->d.nics[0], &m, via_poll_stats_here());
}

static void
frame_deliver(unsigned i)
{
	/* out of the network first: the answers sent now take slots */
	const struct sim_frame copy = frames[i], *f = &copy;
	int x = viad_of_mac(f->dst);
	struct sim_viad *sv;

	frames[i] = frames[--nb_frames];
	if (x < 0)
		return;        /* nobody has that MAC */
	sv = &viads[x];
	trace("viad %c receives %s conn %#x dst_vi %u src_vi %u", 'A' + x, op_name(f->h.opcode),
	      via_wire_conn_id(&f->h), via_wire_dst_vi(&f->h), via_wire_src_vi(&f->h));
	if (!admitted(sv, f)) {
		trace("    not admitted");
	} else if (via_wire_ops[f->h.opcode].flags & VIA_OPF_CM) {
		/* the header and its payload, as cm_input reads them */
		struct {
			struct via_wire_hdr h;
			struct via_wire_conn w;
		} __rte_packed fr = { f->h, f->payload };

		cm_input(&sv->d, &sv->d.nics[0], f->src, &fr.h);
	} else {
		data_input(sv, f);
	}
	sv->timer_at = now_ms;
}

/* ---- the checks ----------------------------------------------------------- */

/* Answers each call may give (-errno); 0 and DEFERRED always. */
static bool
rc_allowed(enum call_kind k, int rc)
{
	switch (k) {
	case CALL_REQUEST:
		return rc == -ETIMEDOUT || rc == -ENXIO || rc == -ECONNREFUSED ||
		       rc == -ECONNABORTED || rc == -EPROTONOSUPPORT || rc == -EMSGSIZE ||
		       rc == -EDOM;
	case CALL_WAIT:
		return rc == -ETIMEDOUT;
	case CALL_ACCEPT:
		return rc == -ETIMEDOUT || rc == -EPROTONOSUPPORT || rc == -EMSGSIZE ||
		       rc == -EDOM || rc == -ECONNABORTED || rc == -ENOENT;
	case CALL_REJECT:
		return rc == -ENOENT;
	case CALL_PEER_REQUEST:
		return false;
	case CALL_PEER_WAIT:
	case CALL_PEER_DONE:
		return rc == -ETIMEDOUT || rc == -EAGAIN || rc == -ECONNREFUSED ||
		       rc == -EPROTONOSUPPORT || rc == -EMSGSIZE || rc == -EDOM ||
		       rc == -ECONNABORTED;
	default:
		return false;
	}
}

/* An answer is one of its call's codes. */
static void
check_rc(const struct sim_call *c)
{
	if (c->rc != 0 && !rc_allowed(c->kind, c->rc))
		fail("%s of actor %d returned %s, not one of its codes", call_names[c->kind],
		     c->actor, strerror(-c->rc));
}

/* After every step: no call out past its bound (an actor has one at most). */
static void
check_step(void)
{
	unsigned i;

	for (i = 0; i < nb_actors && violation == NULL; i++) {
		const struct sim_call *c;

		if (actors[i].st != AS_CALL)
			continue;
		c = &calls[actors[i].call];
		if (c->out && now_ms > c->bound)
			fail("%s of actor %d (started at %" PRIu64 ") not answered within %" PRIu64
			     " ms", call_names[c->kind], c->actor, c->start - SIM_START_MS,
			     c->bound - c->start);
	}
}

/* The VI at the other end of @p vi's connection, if it is Connected to it. */
static bool
peer_connected(const struct via_vi *vi)
{
	int y = viad_of_mac(vi->conn.remote_mac);
	const struct via_vi *w;

	if (y < 0)
		return false;
	w = via_idtab_lookup(&viads[y].d.vis, vi->conn.remote_vi);
	return w != NULL && w->state == VIP_STATE_CONNECTED && w->conn.id == vi->conn.id &&
	       w->conn.remote_vi == vi->id &&
	       memcmp(w->conn.remote_mac, vi->owner->nic->info.mac, 6) == 0;
}

/* Every Connected VI's peer Connected to it; @p what names the moment. */
static void
check_pairs(const char *what, bool exact)
{
	unsigned i;

	for (i = 0; i < nb_actors && violation == NULL; i++) {
		const struct via_vi *vi = actors[i].vi;
		const struct sim_conn *sc;

		if (vi == NULL || vi->state != VIP_STATE_CONNECTED || peer_connected(vi))
			continue;
		sc = conn_of(vi->conn.id);
		if (!exact && sc != NULL && (sc->lost || sc->killed))
			continue;
		fail("%s: VI %u of viad %c (actor %u) is Connected (conn %#x) and its peer is not",
		     what, vi->id, 'A' + actors[i].x, i, vi->conn.id);
	}
}

/* Once the schedule settled. */
static void
check_settled(void)
{
	unsigned i;

	for (i = 0; i < nb_calls && violation == NULL; i++) {
		if (calls[i].out)
			fail("%s of actor %d never answered", call_names[calls[i].kind],
			     calls[i].actor);
	}
	for (i = 0; i < nb_actors && violation == NULL; i++) {
		const struct via_vi *vi = actors[i].vi;

		if (vi != NULL && vi->state == VIP_STATE_CONNECT_PENDING)
			fail("VI %u of viad %c (actor %u) left in Pending Connect", vi->id,
			     'A' + actors[i].x, i);
	}
	for (i = 0; i < nb_conns && violation == NULL; i++) {
		const struct sim_conn *sc = &conns[i];

		if (sc->killed)
			continue;
		if (sc->acc_ok && !sc->req_ok)
			fail("conn %#x: accepted (VipConnectAccept returned success) while its "
			     "requester %s", sc->id,
			     sc->req_failed ? strerror(-sc->req_rc) : "never succeeded");
		else if (sc->req_ok && !sc->acc_ok && !sc->lost && !sc->disconnected)
			fail("conn %#x: the requester connected and stayed, its acceptor did not, "
			     "no frame lost", sc->id);
		else if (sc->rejected && sc->req_ok)
			fail("conn %#x: rejected, and the requester connected", sc->id);
		else if (sc->req_rc == -ECONNREFUSED && !sc->rejected)
			fail("conn %#x: the requester saw a reject nobody made", sc->id);
	}
	check_pairs("settled", p.drop_permille == 0);
}

/* ---- the loop ------------------------------------------------------------- */

enum ev_kind { EV_FRAME, EV_TIMER, EV_ACTOR, EV_CANCEL, EV_KILL };

struct ev {
	enum ev_kind kind;
	int i;
};

/* The events due now, and the time of the next one. @return how many */
static unsigned
events_due(struct ev *due, unsigned max, uint64_t *next)
{
	unsigned n = 0, i;
	int x;

	*next = UINT64_MAX;
#define CONSIDER(at_, kind_, i_)                                                \
	do {                                                                     \
		uint64_t at__ = (at_);                                           \
		if (at__ <= now_ms && n < max)                                   \
			due[n++] = (struct ev){ (kind_), (int)(i_) };            \
		else if (at__ < *next)                                           \
			*next = at__;                                            \
	} while (0)
	for (i = 0; i < nb_frames; i++)
		CONSIDER(frames[i].at, EV_FRAME, i);
	for (x = 0; x < SIM_VIADS; x++)
		CONSIDER(viads[x].timer_at, EV_TIMER, x);
	for (i = 0; i < nb_actors; i++) {
		const struct actor *a = &actors[i];

		if (a->st == AS_DONE)
			continue;
		if (a->st != AS_CALL)
			CONSIDER(a->wake, EV_ACTOR, i);
		else if (a->kind == ACT_CLIENT)
			CONSIDER(a->cancel_at, EV_CANCEL, i);
	}
	CONSIDER(p.kill_at, EV_KILL, 0);
#undef CONSIDER
	return n;
}

static void
event_run(const struct ev *e)
{
	struct actor *a;

	switch (e->kind) {
	case EV_FRAME:
		frame_deliver((unsigned)e->i);
		break;
	case EV_TIMER: {
		struct sim_viad *sv = &viads[e->i];
		int due = via_cm_timers(&sv->d, now_ms);

		sv->timer_at = due < 0 ? UINT64_MAX : now_ms + (uint64_t)due;
		break;
	}
	case EV_ACTOR:
		actor_move(&actors[e->i]);
		viads[actors[e->i].x].timer_at = now_ms;
		break;
	case EV_CANCEL:
		a = &actors[e->i];
		if (calls[a->call].out) {
			trace("actor %d: another thread gives up", e->i);
			actor_cancel(a);
		}
		a->cancel_at = UINT64_MAX;
		viads[a->x].timer_at = now_ms;
		break;
	case EV_KILL:
		p.kill_at = UINT64_MAX;
		if (viads[p.kill_x].alive[p.kill_s])
			session_kill(p.kill_x, p.kill_s);
		viads[p.kill_x].timer_at = now_ms;
		break;
	}
	/* answers that came in this step */
	for (unsigned i = 0; i < nb_actors; i++) {
		a = &actors[i];
		if (a->st == AS_CALL && a->call >= 0 && !calls[a->call].out)
			call_done(a);
	}
}

/* What is left but housekeeping: frames, moves, calls, handshakes, waits
 * (a request held in a table only expires). NULL: nothing. */
static const char *
busy(void)
{
	unsigned i;
	int x;

	if (nb_frames > 0)
		return "a frame in flight";
	for (i = 0; i < nb_actors; i++) {
		if (actors[i].st != AS_DONE && (actors[i].wake != UINT64_MAX ||
						actors[i].st == AS_CALL)) {
			static char what[80];

			snprintf(what, sizeof(what), "actor %u %s", i,
				 actors[i].st == AS_CALL ? "waits for an answer" : "has a move");
			return what;
		}
	}
	for (x = 0; x < SIM_VIADS; x++) {
		if (!TAILQ_EMPTY(&viads[x].d.cm->handshakes))
			return "a VI in a handshake";
		if (!TAILQ_EMPTY(&viads[x].d.cm->listeners))
			return "a VipConnectWait";
	}
	return p.kill_at != UINT64_MAX ? "a session to kill" : NULL;
}

/* Run until nothing is left to happen (or a violation). */
static void
run_until_quiet(uint64_t limit)
{
	struct ev due[SIM_FRAMES + SIM_VIADS + SIM_ACTORS + 1];
	uint64_t next, steps = 0;
	unsigned n;

	while (violation == NULL) {
		if (++steps > SIM_STEPS) {
			fail("more than %d steps: a livelock", SIM_STEPS);
			return;
		}
		n = events_due(due, sizeof(due) / sizeof(due[0]), &next);
		if (n == 0) {
			if (next == UINT64_MAX || busy() == NULL)
				return;
			if (next > limit) {
				fail("still busy at +%" PRIu64 " ms: %s", limit - SIM_START_MS,
				     busy());
				return;
			}
			now_ms = next;
			continue;
		}
		event_run(&due[draw(n)]);
		check_step();
	}
}

/* Every Connected VI sends one data frame, as the data path does at the
 * next transfer: a peer with no such connection answers RESET (§4.2). */
static void
probe_connections(void)
{
	unsigned i;

	for (i = 0; i < nb_actors; i++) {
		const struct via_vi *vi = actors[i].vi;

		if (vi != NULL && vi->state == VIP_STATE_CONNECTED)
			data_send(vi);
	}
}

/* One schedule. @return whether every check held */
static bool
schedule_run(uint64_t seed)
{
	int x;
	unsigned i;

	rng = seed;
	trace_n = 0;
	schedule_setup();
	run_until_quiet(now_ms + SIM_SETTLE_MS);
	if (violation == NULL)
		check_settled();
	if (violation == NULL) {
		p.chaos_end = 0;
		probe_connections();
		run_until_quiet(now_ms + SIM_SETTLE_MS);
		if (violation == NULL)
			check_pairs("after a data frame each", true);
	}
	for (x = 0; x < SIM_VIADS; x++)
		viad_teardown(x);
	for (i = 0; i < nb_actors; i++)
		actors[i].vi = NULL;
	return violation == NULL;
}

static void
usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--seed S] [--count N] [--also S,S...] [--trace] [--quiet]\n",
		argv0);
	exit(2);
}

/* Schedule @p seed, its trace printed if it fails. @return whether it held */
static bool
schedule_check(uint64_t seed, bool trace_all)
{
	tracing = trace_all;
	if (schedule_run(seed)) {
		if (trace_all)
			trace_print();
		return true;
	}
	printf("sim_cm: seed %" PRIu64 ": %s\n", seed, violation);
	/* the same seed again, traced: the schedule that failed */
	tracing = true;
	schedule_run(seed);
	printf("sim_cm: the schedule of seed %" PRIu64 " (last %u events):\n", seed,
	       SIM_TRACE_LINES);
	trace_print();
	return false;
}

int
main(int argc, char **argv)
{
	uint64_t seed = 1, count = 1000, i, settled_lost = 0;
	bool quiet = false, trace_all = false;
	const char *also = "";
	char *end;
	int k;

	for (k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--seed") == 0 && k + 1 < argc)
			seed = strtoull(argv[++k], NULL, 0);
		else if (strcmp(argv[k], "--count") == 0 && k + 1 < argc)
			count = strtoull(argv[++k], NULL, 0);
		else if (strcmp(argv[k], "--also") == 0 && k + 1 < argc)
			also = argv[++k];
		else if (strcmp(argv[k], "--trace") == 0)
			trace_all = true;
		else if (strcmp(argv[k], "--quiet") == 0)
			quiet = true;
		else
			usage(argv[0]);
	}
	/* --also: single seeds first, the ones that found faults */
	for (; *also != '\0'; also = *end == ',' ? end + 1 : end) {
		uint64_t s = strtoull(also, &end, 0);

		if (end == also)
			usage(argv[0]);
		if (!schedule_check(s, trace_all)) {
			printf("sim_cm: FAILED at seed %" PRIu64 "\n", s);
			return 1;
		}
	}
	for (i = 0; i < count; i++) {
		if (!schedule_check(seed + i, trace_all)) {
			printf("sim_cm: FAILED at seed %" PRIu64 " after %" PRIu64 " schedules\n",
			       seed + i, i);
			return 1;
		}
		if (frames_lost > 0)
			settled_lost++;
		if (!quiet && (i + 1) % 100000 == 0)
			printf("sim_cm: %" PRIu64 " schedules, seeds %" PRIu64 "-%" PRIu64 " held\n",
			       i + 1, seed, seed + i);
	}
	printf("sim_cm: %" PRIu64 " schedules (seeds %" PRIu64 "-%" PRIu64 ", %" PRIu64
	       " of them losing frames) held every check\n",
	       count, seed, seed + count - 1, settled_lost);
	return 0;
}
