/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_common: shared code of the VIPL test programs; see vipl_common.h.
 */
#include "vipl_common.h"

#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define VC_RECV_MEM (256ul << 20) /* cap on a receiver's buffer memory */
/* hello: magic, test, nsizes, check, credits, op, window, then the client's
 * RDMA target (address low, high, handle, slots, stride; 0 slots: none), then
 * the sizes, iterations and warm-ups */
#define VC_HELLO_FIXED 12
#define VC_HELLO_WORDS (VC_HELLO_FIXED + 3 * VC_MAX_SIZES)
/* reply: magic, test, credits (0: no flow control), the server's RDMA target */
#define VC_REPLY_WORDS 8
#define VC_TAG_WORDS 3    /* magic, tag, number */
#define VC_CREDIT_WORDS 3 /* magic, VC_CREDIT_TAG, re-post count */

static const char *prog = "vipl";
static atomic_ulong async_errors;          /* other than Receive Queue Empty */
static atomic_int async_last;

/* ------------------------------------------------------------------ errors */

void
vc_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (atomic_load(&async_errors) > 0)
		fprintf(stderr, "%s: %lu asynchronous error(s) were reported, the last %s\n", prog,
			atomic_load(&async_errors),
			VipDpdkErrorCodeString((VIP_ERROR_CODE)atomic_load(&async_last)));
	exit(1);
}

void
vc_ok(const char *call, VIP_RETURN rc)
{
	if (rc != VIP_SUCCESS)
		vc_die("%s: %s", call, VipDpdkReturnString(rc));
}

static const char *const mem_names[VC_MEM_KINDS] = {
	[VC_MEM_PROVIDER] = "provider", [VC_MEM_HEAP] = "heap", [VC_MEM_SHARED] = "shared",
};

static _Noreturn void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s -h'.\n", prog);
	exit(2);
}

/* ----------------------------------------------------------------- options */

static _Noreturn void
usage(const struct vc_app *app)
{
	printf("Usage: %s -s [OPTIONS]            server\n"
	       "       %s -c PEER [OPTIONS]       client\n"
	       "       %s --loopback [OPTIONS]    both ends in this process\n\n%s\n\n",
	       app->name, app->name, app->name, app->about);
	printf("Options:\n"
	       "  -d NIC           VI NIC (default via0; also /dev/via_lo, /dev/via_ethN)\n"
	       "  -s               server: wait for a client (VipConnectWait / VipConnectAccept)\n"
	       "  -c PEER          client: connect to PEER, a MAC (aa:bb:cc:dd:ee:ff) or a name\n"
	       "                   of viad's hosts file (VipNSGetHostByName)\n"
	       "  -l, --loopback   two VIs on the same NIC in one process; the client VI\n"
	       "                   connects to the NIC's own MAC\n"
	       "  -D DISC          connection discriminator (default %s)\n"
	       "  -r LEVEL         reliability: unreliable (default), rd (reliable delivery),\n"
	       "                   rr (reliable reception); both ends must use the same\n"
	       "  --size LIST      message sizes in bytes, comma separated, K/M suffixes\n"
	       "                   (default %s, capped at the NIC's MaxTransferSize)\n"
	       "  --sweep MIN:MAX  the powers of two from MIN to MAX (MIN 0 adds a 0-byte size)\n"
	       "  -n N             iterations per size (default %u; fewer for big sizes, to\n"
	       "                   send at most %.0f MB per size, but at least 100)\n"
	       "  -w N             warm-up iterations per size, not measured (default %u,\n"
	       "                   at most a tenth of the iterations)\n",
	       app->disc, app->id == VC_TEST_PINGPONG ? "0,64,1K,4K,16K,64K" : "64,1K,4K,16K,64K",
	       app->iters, app->scale_bytes / 1e6, app->warmup);
	if (app->id == VC_TEST_PINGPONG)
		printf("  --reg-each       the client sends each ping from a heap buffer of its own\n"
		       "                   that it registers for that message and deregisters once\n"
		       "                   sent, inside the timed round trip (a VIPL program that\n"
		       "                   registers every message; issue 29)\n");
	if (app->window)
		printf("  --window W       sends kept outstanding by the client (default 64); the\n"
		       "                   server posts R = 2*W receives\n"
		       "  --credits        credit-based flow control also on an Unreliable VI (always\n"
		       "                   on with rd and rr; on if either end asks): the client\n"
		       "                   sends only while fewer than R messages wait for their\n"
		       "                   receive to be re-posted; the server returns credits every\n"
		       "                   R/4 re-posts\n"
		       "  --one-thread     with --loopback: one thread drives both VIs (posts the\n"
		       "                   client's operations, reaps both sides, re-posts the\n"
		       "                   server's receives), so the message rate of one poll\n"
		       "                   lcore needs only two CPUs; nothing is lost: a message\n"
		       "                   goes only while a receive waits for it\n");
	printf("  --op OP          send: Send/Receive (default); write: RDMA Write; write-imm:\n"
	       "                   RDMA Write with immediate data (consumes a receive); read:\n"
	       "                   RDMA Read (rd or rr only: on an Unreliable VI a Read is a\n"
	       "                   format error).  The remote buffer is a region of the peer\n"
	       "                   registered with RDMA enabled; its address and memory handle\n"
	       "                   come with the hello exchange.\n"
	       "  --wait MODE      poll: spin on VipSendDone / VipRecvDone (default);\n"
	       "                   block: VipSendWait / VipRecvWait\n"
	       "  --cq             receive completions through a completion queue\n"
	       "                   (VipCQDone, or VipCQWait with --wait block, then VipRecvDone)\n"
	       "  --mem KIND       provider: buffers from VipDpdkAllocMem (default); heap:\n"
	       "                   malloc'ed buffers and descriptors registered with\n"
	       "                   VipRegisterMem (shared with viad in place, as a VIPL\n"
	       "                   program of the 1990s has them); shared: an anonymous\n"
	       "                   MAP_SHARED mapping, which viad cannot map and copies\n"
	       "                   through the program's /proc/self/mem; also the RDMA\n"
	       "                   target region\n"
	       "  -t MS            connection timeout, and the longest wait for any expected\n"
	       "                   message (default 10000; 'inf' waits for ever)\n"
	       "  --no-check       do not fill and verify the payload pattern\n"
	       "  --idle-vis N     also create N idle VIs on the NIC, kept to the end: the\n"
	       "                   cost of idle VIs to the active ones (issue 6)\n"
	       "  --inline N       VIs whose ring entries carry the descriptors and up to N\n"
	       "                   bytes of a Send's or RDMA Write's data (VipDpdkCreateVi,\n"
	       "                   0 to 256); default: 16-byte entries (VipCreateVi)\n"
	       "  --json           one JSON object per size instead of the table\n"
	       "  -h, --help       this text\n\n"
	       "The server takes sizes, iterations, warm-up, --op and --no-check from the\n"
	       "client.\n"
	       "viad is reached at $VIAD_SOCKET (default /run/viad/viad.sock).\n");
	exit(0);
}

static uint64_t
parse_num(const char *s, const char *what, uint64_t max, bool suffix)
{
	unsigned long long v;
	unsigned shift;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (suffix && (*end == 'k' || *end == 'K' || *end == 'm' || *end == 'M')) {
		shift = *end == 'k' || *end == 'K' ? 10 : 20;
		if (v > (ULLONG_MAX >> shift))
			errno = ERANGE;
		v <<= shift;
		end++;
	}
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v > max)
		usage_error("bad %s '%s' (0..%llu)", what, s, (unsigned long long)max);
	return v;
}

static void
add_size(struct vc_opts *o, uint64_t size)
{
	if (o->sched.nsizes == VC_MAX_SIZES)
		usage_error("more than %d sizes", VC_MAX_SIZES);
	o->sched.size[o->sched.nsizes++] = (uint32_t)size;
	o->sizes_set = true;
}

static void
parse_sizes(struct vc_opts *o, const char *list)
{
	char *copy = strdup(list), *save = NULL, *tok;

	if (copy == NULL)
		vc_die("out of memory");
	o->sched.nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save))
		add_size(o, parse_num(tok, "size", UINT32_MAX, true));
	free(copy);
	if (o->sched.nsizes == 0)
		usage_error("empty size list");
}

static void
parse_sweep(struct vc_opts *o, const char *arg)
{
	const char *colon = strchr(arg, ':');
	char lo[32];
	uint64_t min, max, s;

	if (colon == NULL || (size_t)(colon - arg) >= sizeof(lo))
		usage_error("bad sweep '%s' (MIN:MAX)", arg);
	memcpy(lo, arg, (size_t)(colon - arg));
	lo[colon - arg] = '\0';
	min = parse_num(lo, "sweep minimum", UINT32_MAX, true);
	max = parse_num(colon + 1, "sweep maximum", UINT32_MAX, true);
	if (min > max)
		usage_error("bad sweep '%s': MIN > MAX", arg);
	o->sched.nsizes = 0;
	if (min == 0)
		add_size(o, 0);
	for (s = 1; s <= max; s <<= 1)
		if (s >= min)
			add_size(o, s);
}

static const char *const op_names[] = { "send", "write", "write-imm", "read" };

const char *
vc_op_name(enum vc_op op)
{
	return (unsigned)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

static const char *const rel_names[] = { "unreliable", "rd", "rr" };

const char *
vc_rel_name(VIP_RELIABILITY_LEVEL rel)
{
	return rel == VIP_SERVICE_RELIABLE_DELIVERY	 ? rel_names[1]
	       : rel == VIP_SERVICE_RELIABLE_RECEPTION ? rel_names[2]
						       : rel_names[0];
}

enum { OPT_SIZE = 256, OPT_SWEEP, OPT_WAIT, OPT_JSON, OPT_CQ, OPT_MEM, OPT_NOCHECK, OPT_WINDOW,
       OPT_CREDITS, OPT_OP, OPT_IDLE_VIS, OPT_ONE_THREAD, OPT_INLINE, OPT_REG_EACH };

void
vc_parse(struct vc_opts *o, const struct vc_app *app, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "loopback", no_argument, NULL, 'l' },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "sweep", required_argument, NULL, OPT_SWEEP },
		{ "wait", required_argument, NULL, OPT_WAIT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "cq", no_argument, NULL, OPT_CQ },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "no-check", no_argument, NULL, OPT_NOCHECK },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "credits", no_argument, NULL, OPT_CREDITS },
		{ "op", required_argument, NULL, OPT_OP },
		{ "idle-vis", required_argument, NULL, OPT_IDLE_VIS },
		{ "one-thread", no_argument, NULL, OPT_ONE_THREAD },
		{ "inline", required_argument, NULL, OPT_INLINE },
		{ "reg-each", no_argument, NULL, OPT_REG_EACH },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned roles = 0, k;
	int c;

	prog = app->name;
	memset(o, 0, sizeof(*o));
	o->app = app;
	o->nic = "via0";
	o->disc = app->disc;
	o->rel = VIP_SERVICE_UNRELIABLE;
	o->timeout_ms = 10000;
	o->window = 64;
	o->inline_size = -1;
	o->sched.check = 1;
	while ((c = getopt_long(argc, argv, "d:sc:lD:r:n:w:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->nic = optarg; break;
		case 's': o->role = VC_SERVER; roles++; break;
		case 'c': o->role = VC_CLIENT; o->peer = optarg; roles++; break;
		case 'l': o->role = VC_LOOPBACK; roles++; break;
		case 'D':
			o->disc = optarg;
			if (*optarg == '\0')
				usage_error("empty discriminator");
			break;
		case 'r':
			if (strcmp(optarg, rel_names[0]) == 0)
				o->rel = VIP_SERVICE_UNRELIABLE;
			else if (strcmp(optarg, rel_names[1]) == 0)
				o->rel = VIP_SERVICE_RELIABLE_DELIVERY;
			else if (strcmp(optarg, rel_names[2]) == 0)
				o->rel = VIP_SERVICE_RELIABLE_RECEPTION;
			else
				usage_error("bad reliability '%s' (unreliable, rd, rr)", optarg);
			break;
		case 'n':
			o->iters = (uint32_t)parse_num(optarg, "iterations", 100000000, false);
			o->iters_set = true;
			if (o->iters == 0)
				usage_error("-n must be at least 1");
			break;
		case 'w':
			o->warmup = (uint32_t)parse_num(optarg, "warm-up", 100000000, false);
			o->warmup_set = true;
			break;
		case 't':
			o->timeout_ms = strcmp(optarg, "inf") == 0
						? VIP_INFINITE
						: (VIP_ULONG)parse_num(optarg, "timeout", 86400000, false);
			if (o->timeout_ms == 0)
				usage_error("-t must be at least 1 ms");
			break;
		case OPT_SIZE: parse_sizes(o, optarg); break;
		case OPT_SWEEP: parse_sweep(o, optarg); break;
		case OPT_WAIT:
			if (strcmp(optarg, "poll") != 0 && strcmp(optarg, "block") != 0)
				usage_error("bad wait mode '%s' (poll, block)", optarg);
			o->block = optarg[0] == 'b';
			break;
		case OPT_JSON: o->json = true; break;
		case OPT_CQ: o->cq = true; break;
		case OPT_MEM:
			for (o->mem = 0; o->mem < VC_MEM_KINDS; o->mem++)
				if (strcmp(optarg, mem_names[o->mem]) == 0)
					break;
			if (o->mem == VC_MEM_KINDS)
				usage_error("bad memory kind '%s' (provider, heap, shared)", optarg);
			break;
		case OPT_NOCHECK: o->sched.check = 0; break;
		case OPT_IDLE_VIS:
			o->idle_vis = (uint32_t)parse_num(optarg, "idle VIs", 1u << 20, false);
			break;
		case OPT_INLINE:
			o->inline_size = (int32_t)parse_num(optarg, "inline bytes", VIP_DPDK_MAX_INLINE,
							    false);
			break;
		case OPT_ONE_THREAD:
			if (!app->window)
				usage_error("--one-thread is an option of vipl_bw");
			o->one_thread = true;
			break;
		case OPT_REG_EACH:
			if (app->id != VC_TEST_PINGPONG)
				usage_error("--reg-each is an option of vipl_pingpong");
			o->reg_each = true;
			break;
		case OPT_WINDOW:
			if (!app->window)
				usage_error("--window is an option of vipl_bw");
			o->window = (uint32_t)parse_num(optarg, "window", 65536, false);
			if (o->window == 0)
				usage_error("--window must be at least 1");
			break;
		case OPT_CREDITS:
			if (!app->window)
				usage_error("--credits is an option of vipl_bw");
			o->credits = true;
			break;
		case OPT_OP:
			for (k = 0; k < sizeof(op_names) / sizeof(op_names[0]); k++)
				if (strcmp(optarg, op_names[k]) == 0)
					break;
			if (k == sizeof(op_names) / sizeof(op_names[0]))
				usage_error("bad operation '%s' (send, write, write-imm, read)", optarg);
			o->op = (enum vc_op)k;
			break;
		case 'h': usage(app);
		default: usage_error("bad option");
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (roles != 1)
		usage_error("give exactly one of -s, -c PEER and --loopback");
	if (o->one_thread && o->role != VC_LOOPBACK)
		usage_error("--one-thread needs --loopback (both VIs in this process)");
	if (o->reg_each && o->op != VC_OP_SEND)
		usage_error("--reg-each is for --op send");
	if (o->op == VC_OP_READ && o->rel == VIP_SERVICE_UNRELIABLE && o->role != VC_SERVER)
		usage_error("--op read needs a reliable level (-r rd or rr): an RDMA Read on an "
			    "Unreliable VI completes with a format error");
	/* VIA §2.5.2: a reliable VI breaks on a Send to an empty receive queue */
	if (app->window && o->rel != VIP_SERVICE_UNRELIABLE)
		o->credits = true;
	/* write-imm consumes receives like send; its data goes to one target slot
	 * per credit, checked before the credit returns: always flow controlled */
	if (app->window && o->op == VC_OP_WRITE_IMM)
		o->credits = true;
	o->sched.credits = o->credits;
	o->sched.op = o->op;
	o->sched.window = app->window ? o->window : 1;
}

/* ------------------------------------------------------------ NIC, memory */

static void
async_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *ed)
{
	struct vc_nic *n = ctx;

	if (ed->ErrorCode == VIP_ERROR_RECVQ_EMPTY) { /* Unreliable: expected under load */
		atomic_fetch_add_explicit(&n->rq_drops, 1, memory_order_relaxed);
		return;
	}
	/* reported if the run fails: VIP_ERROR_CONN_LOST is normal when the
	 * peer disconnects at the end */
	atomic_store(&async_last, (int)ed->ErrorCode);
	atomic_fetch_add(&async_errors, 1);
}

uint32_t
vc_max_size(const struct vc_sched *s)
{
	uint32_t i, m = 0;

	for (i = 0; i < s->nsizes; i++)
		m = s->size[i] > m ? s->size[i] : m;
	return m;
}

/* Default sizes capped at the NIC's MaxTransferSize; iterations per size. */
static void
schedule(struct vc_opts *o, uint32_t mts)
{
	const struct vc_app *app = o->app;
	struct vc_sched *s = &o->sched;
	uint32_t i, sz;
	double v;

	/* pingpong --op write polls the last byte of the buffer: no 0 bytes */
	bool no_zero = app->id == VC_TEST_PINGPONG && o->op == VC_OP_WRITE;

	if (!o->sizes_set)
		for (i = 0, s->nsizes = 0; i < app->nsizes; i++) {
			sz = app->sizes[i] < mts ? app->sizes[i] : mts;
			if (sz == 0 && no_zero)
				continue;
			if (s->nsizes == 0 || s->size[s->nsizes - 1] != sz)
				s->size[s->nsizes++] = sz;
		}
	for (i = 0; i < s->nsizes; i++) {
		if (s->size[i] > mts)
			usage_error("size %u exceeds the NIC's MaxTransferSize %u", s->size[i], mts);
		if (s->size[i] == 0 && no_zero)
			usage_error("--op write needs sizes of at least 1 byte: the receiver polls "
				    "the last byte of its buffer");
		v = app->scale_bytes / (s->size[i] ? s->size[i] : 1);
		s->iters[i] = o->iters_set ? o->iters
			      : v >= app->iters ? app->iters
			      : v < 100	  ? 100
						  : (uint32_t)v;
		s->warmup[i] = o->warmup_set ? o->warmup
			       : app->warmup < s->iters[i] / 10 ? app->warmup
								: s->iters[i] / 10;
	}
}

/* --idle-vis: VIs that are created and never used (idle, unconnected). */
static void
idle_vis_create(struct vc_nic *n)
{
	VIP_VI_ATTRIBUTES a = {
		.ReliabilityLevel = VIP_SERVICE_UNRELIABLE,
		.MaxTransferSize = 1024,
		.Ptag = n->ptag,
	};
	VIP_RETURN rc;

	if (n->o->idle_vis == 0)
		return;
	n->idle = calloc(n->o->idle_vis, sizeof(*n->idle));
	if (n->idle == NULL)
		vc_die("out of memory for %u idle VIs", n->o->idle_vis);
	for (n->nb_idle = 0; n->nb_idle < n->o->idle_vis; n->nb_idle++) {
		rc = VipCreateVi(n->h, &a, NULL, NULL, &n->idle[n->nb_idle]);
		if (rc != VIP_SUCCESS)
			vc_die("idle VI %u of %u: VipCreateVi: %s (viad's limits.max_vi, "
			       "limits.session_shm_bytes?)", n->nb_idle + 1, n->o->idle_vis,
			       VipDpdkReturnString(rc));
	}
}

void
vc_nic_open(struct vc_nic *n, struct vc_opts *o)
{
	VIP_RETURN rc;

	memset(n, 0, sizeof(*n));
	atomic_init(&n->rq_drops, 0);
	n->o = o;
	rc = VipOpenNic(o->nic, &n->h);
	if (rc != VIP_SUCCESS)
		vc_die("VipOpenNic(%s): %s%s", o->nic, VipDpdkReturnString(rc),
		       rc == VIP_ERROR_RESOURCE ? " (is viad running? $VIAD_SOCKET names its socket)"
						: "");
	VC_OK(VipQueryNic, n->h, &n->attr);
	if (n->attr.NicAddressLen != sizeof(n->mac))
		vc_die("%s: NicAddressLen is %u, not a 6-byte MAC", o->nic, n->attr.NicAddressLen);
	memcpy(n->mac, n->attr.LocalNicAddress, sizeof(n->mac));
	if (!(n->attr.ReliabilityLevelSupport & o->rel))
		vc_die("%s does not support reliability level %s", o->nic, vc_rel_name(o->rel));
	if (o->op == VC_OP_READ && !n->attr.RDMAReadSupport)
		vc_die("%s does not support RDMA Read (RDMAReadSupport is FALSE)", o->nic);
	if (strlen(o->disc) > n->attr.MaxDiscriminatorLen)
		vc_die("discriminator longer than the NIC's MaxDiscriminatorLen %u",
		       n->attr.MaxDiscriminatorLen);
	if (o->app->window && o->window > n->attr.MaxDescriptorsPerQueue)
		vc_die("window %u above the NIC's MaxDescriptorsPerQueue %lu", o->window,
		       n->attr.MaxDescriptorsPerQueue);
	if (o->role != VC_SERVER)
		schedule(o, (uint32_t)(n->attr.MaxTransferSize < UINT32_MAX ? n->attr.MaxTransferSize
									 : UINT32_MAX));
	VC_OK(VipErrorCallback, n->h, n, async_error);
	VC_OK(VipCreatePtag, n->h, &n->ptag);
	idle_vis_create(n);
}

void
vc_nic_close(struct vc_nic *n)
{
	uint32_t i;

	for (i = 0; i < n->nb_idle; i++)
		VC_OK(VipDestroyVi, n->idle[i]);
	free(n->idle);
	VC_OK(VipDestroyPtag, n->h, n->ptag);
	VC_OK(VipCloseNic, n->h);
}

static void
mac_str(const uint8_t *m, char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

void
vc_resolve(struct vc_nic *n, const char *peer, uint8_t mac[6])
{
	unsigned b[6];
	char name[256], extra;
	VIP_NET_ADDRESS *a;
	VIP_RETURN rc;
	int i;

	if (sscanf(peer, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &extra) == 6) {
		for (i = 0; i < 6; i++)
			mac[i] = (uint8_t)b[i];
		return;
	}
	if (strlen(peer) >= sizeof(name))
		vc_die("peer name too long");
	strcpy(name, peer);
	a = calloc(1, sizeof(*a) + n->attr.NicAddressLen);
	if (a == NULL)
		vc_die("out of memory");
	VC_OK(VipNSInit, n->h, NULL);
	rc = VipNSGetHostByName(n->h, name, a, 0);
	if (rc == VIP_ERROR_NAMESERVICE)
		vc_die("cannot resolve '%s': not a MAC and not in viad's hosts file", peer);
	vc_ok("VipNSGetHostByName", rc);
	if (a->HostAddressLen != 6)
		vc_die("'%s' resolved to a %u-byte address, not a MAC", peer, a->HostAddressLen);
	memcpy(mac, a->HostAddress, 6);
	VC_OK(VipNSShutdown, n->h);
	free(a);
}

/* Receive descriptors to post: want, within the queue and memory limits. */
uint32_t
vc_recv_depth(const struct vc_nic *n, uint32_t want, uint32_t slot)
{
	uint64_t mem_cap = VC_RECV_MEM / (slot ? slot : 1);

	if (want > n->attr.MaxDescriptorsPerQueue)
		want = (uint32_t)n->attr.MaxDescriptorsPerQueue;
	if (want > mem_cap)
		want = mem_cap < 2 ? 2 : (uint32_t)mem_cap;
	return want;
}

static size_t
round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* @p len bytes (page-aligned) of --mem's kind, registered by the caller. */
static void *
mem_alloc(const struct vc_nic *n, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = NULL;

	switch (n->o->mem) {
	case VC_MEM_HEAP:
		if (posix_memalign(&p, page, len) != 0)
			p = NULL;
		break;
	case VC_MEM_SHARED:
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			p = NULL;
		break;
	default:
		VC_OK(VipDpdkAllocMem, n->h, len, &p);
	}
	if (p == NULL)
		vc_die("out of memory (%zu bytes of %s memory)", len, mem_names[n->o->mem]);
	return p;
}

static void
mem_free(const struct vc_nic *n, void *p, size_t len)
{
	switch (n->o->mem) {
	case VC_MEM_HEAP:
		free(p);
		break;
	case VC_MEM_SHARED:
		munmap(p, len);
		break;
	default:
		VC_OK(VipDpdkFreeMem, n->h, p);
	}
}

/*
 * One allocation holding the descriptors (first, page aligned) and the
 * buffers (page aligned), registered as two regions; a VI whose receive
 * queue has a CQ with --cq; all receive descriptors pre-posted (allowed in
 * the Idle state, VIA §6.2).
 */
void
vc_ep_open(struct vc_ep *e, struct vc_nic *n, const char *role, uint32_t nsend, uint32_t sslot,
	   uint32_t nrecv, uint32_t rslot)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	VIP_MEM_ATTRIBUTES ma = { .Ptag = n->ptag };
	VIP_VI_ATTRIBUTES va = { 0 };
	uint32_t i;

	memset(e, 0, sizeof(*e));
	e->nic = n;
	e->o = n->o;
	e->role = role;
	e->nsend = nsend;
	e->nrecv = nrecv;
	e->sslot = (uint32_t)round_up(sslot ? sslot : 1, VIP_DESCRIPTOR_ALIGNMENT);
	e->rslot = (uint32_t)round_up(rslot ? rslot : 1, VIP_DESCRIPTOR_ALIGNMENT);
	e->desc_len = round_up((size_t)(nsend + nrecv) * sizeof(VIP_DESCRIPTOR), page);
	e->buf_len = round_up((size_t)nsend * e->sslot + (size_t)nrecv * e->rslot, page);
	e->mem = mem_alloc(n, e->desc_len + e->buf_len);
	memset(e->mem, 0, e->desc_len + e->buf_len);
	e->sd = e->mem;
	e->rd = e->sd + nsend;
	e->sbuf = (uint8_t *)e->mem + e->desc_len;
	e->rbuf = e->sbuf + (size_t)nsend * e->sslot;
	VC_OK(VipRegisterMem, n->h, e->mem, e->desc_len, &ma, &e->desc_mh);
	VC_OK(VipRegisterMem, n->h, e->sbuf, e->buf_len, &ma, &e->buf_mh);
	if (e->o->cq)
		VC_OK(VipCreateCQ, n->h, nrecv + 16, &e->cq);
	va.ReliabilityLevel = e->o->rel;
	va.MaxTransferSize = n->attr.MaxTransferSize;
	va.Ptag = n->ptag;
	/* the peer may RDMA into this side's target region (vc_target_open);
	 * a server learns the operation only with the hello */
	va.EnableRdmaWrite = VIP_TRUE;
	/* not on an Unreliable VI (VIA §2.5.1, Table 1: VIP_INVALID_RDMAREAD) */
	va.EnableRdmaRead = n->attr.RDMAReadSupport && e->o->rel != VIP_SERVICE_UNRELIABLE
				    ? VIP_TRUE : VIP_FALSE;
	if (e->o->inline_size >= 0) {
		VIP_DPDK_VI_ATTRIBUTES da = { .EntryDescriptors = VIP_TRUE,
					      .InlineSize = (VIP_ULONG)e->o->inline_size };

		VC_OK(VipDpdkCreateVi, n->h, &va, &da, NULL, e->cq, &e->vi);
	} else {
		VC_OK(VipCreateVi, n->h, &va, NULL, e->cq, &e->vi);
	}
	for (i = 0; i < nrecv; i++)
		vc_post_recv(e, &e->rd[i]);
}

/* Disconnect (flushes what is posted), drain both queues, free it all. */
void
vc_ep_close(struct vc_ep *e)
{
	uint64_t end = vc_now_ns() + 1000000000ull;
	VIP_BOOLEAN sq_empty, rq_empty, rq;
	VIP_VI_ATTRIBUTES attr;
	VIP_DESCRIPTOR *d;
	VIP_VI_HANDLE vi;
	VIP_VI_STATE st;
	VIP_RETURN rc;

	VC_OK(VipDisconnect, e->vi);
	for (;;) {
		while ((rc = VipSendDone(e->vi, &d)) == VIP_SUCCESS)
			;
		if (rc != VIP_NOT_DONE)
			vc_ok("VipSendDone", rc);
		while ((rc = VipRecvDone(e->vi, &d)) == VIP_SUCCESS)
			;
		if (rc != VIP_NOT_DONE)
			vc_ok("VipRecvDone", rc);
		while (e->cq != NULL && (rc = VipCQDone(e->cq, &vi, &rq)) == VIP_SUCCESS)
			;
		if (e->cq != NULL && rc != VIP_NOT_DONE)
			vc_ok("VipCQDone", rc);
		VC_OK(VipQueryVi, e->vi, &st, &attr, &sq_empty, &rq_empty);
		if (sq_empty && rq_empty)
			break;
		if (vc_now_ns() > end)
			vc_die("%s: work queues not empty 1 s after VipDisconnect", e->role);
		usleep(1000);
	}
	VC_OK(VipDestroyVi, e->vi);
	if (e->cq != NULL)
		VC_OK(VipDestroyCQ, e->cq);
	if (e->tmem != NULL) {
		VC_OK(VipDeregisterMem, e->nic->h, e->tmem, e->t_mh);
		mem_free(e->nic, e->tmem, e->tmem_len);
	}
	VC_OK(VipDeregisterMem, e->nic->h, e->sbuf, e->buf_mh);
	VC_OK(VipDeregisterMem, e->nic->h, e->mem, e->desc_mh);
	mem_free(e->nic, e->mem, e->desc_len + e->buf_len);
}

/*
 * The RDMA target region: slots of size bytes (stride rounded up to 64),
 * from --mem's allocator, registered with RDMA Write enabled and RDMA Read
 * where the NIC supports it (the region's and the VI's enables
 * both count); zeroed.
 */
void
vc_target_open(struct vc_ep *e, uint32_t slots, uint32_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	VIP_MEM_ATTRIBUTES ma = { .Ptag = e->nic->ptag };

	e->tslots = slots ? slots : 1;
	e->tstride = (uint32_t)round_up(size ? size : 1, VIP_DESCRIPTOR_ALIGNMENT);
	e->tmem_len = round_up((size_t)e->tslots * e->tstride, page);
	e->tmem = mem_alloc(e->nic, e->tmem_len);
	memset(e->tmem, 0, e->tmem_len);
	e->tbuf = e->tmem;
	ma.EnableRdmaWrite = VIP_TRUE;
	ma.EnableRdmaRead = e->nic->attr.RDMAReadSupport ? VIP_TRUE : VIP_FALSE;
	VC_OK(VipRegisterMem, e->nic->h, e->tmem, e->tmem_len, &ma, &e->t_mh);
}

uint8_t *
vc_tslot(const struct vc_ep *e, uint64_t i)
{
	return e->tbuf + (size_t)(i % e->tslots) * e->tstride;
}

/* --loopback: e's peer target is target's region (no hello in between). */
void
vc_peer_of(struct vc_ep *e, const struct vc_ep *target)
{
	e->peer.addr = (uint64_t)(uintptr_t)target->tbuf;
	e->peer.handle = target->t_mh;
	e->peer.slots = target->tbuf != NULL ? target->tslots : 0;
	e->peer.stride = target->tstride;
}

/* The peer announced a target region with slots of at least size bytes. */
void
vc_peer_check(const struct vc_ep *e, uint32_t size)
{
	if (e->peer.slots == 0)
		vc_die("%s: the peer announced no RDMA target buffer", e->role);
	if (e->peer.stride < size)
		vc_die("%s: the peer's RDMA target slots hold %u bytes, %u needed", e->role,
		       e->peer.stride, size);
}

/* -------------------------------------------------------------- connection */

static VIP_NET_ADDRESS *
net_addr(const uint8_t mac[6], const char *disc, size_t len)
{
	VIP_NET_ADDRESS *a = malloc(sizeof(*a) + 6 + len);

	if (a == NULL)
		vc_die("out of memory");
	a->HostAddressLen = 6;
	a->DiscriminatorLen = (VIP_UINT16)len;
	memcpy(a->HostAddress, mac, 6);
	memcpy(a->HostAddress + 6, disc, len);
	return a;
}

void
vc_accept(struct vc_ep *e)
{
	const VIP_NIC_ATTRIBUTES *na = &e->nic->attr;
	VIP_NET_ADDRESS *local = net_addr(e->nic->mac, e->o->disc, strlen(e->o->disc));
	VIP_NET_ADDRESS *remote = calloc(1, sizeof(*remote) + na->NicAddressLen + na->MaxDiscriminatorLen);
	VIP_CONN_HANDLE conn;
	VIP_RETURN rc, rc2;
	char mac[18];

	if (remote == NULL)
		vc_die("out of memory");
	rc = VipConnectWait(e->nic->h, local, e->o->timeout_ms, remote, &e->remote, &conn);
	if (rc == VIP_TIMEOUT)
		vc_die("%s: no connection request for discriminator '%s' within %lu ms", e->role,
		       e->o->disc, e->o->timeout_ms);
	vc_ok("VipConnectWait", rc);
	rc = VipConnectAccept(conn, e->vi);
	if (rc != VIP_SUCCESS) {
		rc2 = VipConnectReject(conn);
		vc_die("VipConnectAccept: %s (request from a %s VI; VipConnectReject: %s)",
		       VipDpdkReturnString(rc), vc_rel_name(e->remote.ReliabilityLevel),
		       VipDpdkReturnString(rc2));
	}
	if (e->o->role == VC_SERVER) {
		mac_str(remote->HostAddress, mac);
		fprintf(stderr, "%s: connection from %s\n", prog, mac);
	}
	free(local);
	free(remote);
}

/* VipConnectRequest, retried on VIP_NO_MATCH (no VipConnectWait yet) until -t. */
void
vc_connect(struct vc_ep *e, const uint8_t mac[6])
{
	const struct vc_opts *o = e->o;
	size_t len = strlen(o->disc), llen = len + 2 > e->nic->attr.MaxDiscriminatorLen
						     ? e->nic->attr.MaxDiscriminatorLen
						     : len + 2;
	char *ldisc = malloc(len + 3);
	uint64_t end = o->timeout_ms == VIP_INFINITE ? UINT64_MAX
						     : vc_now_ns() + o->timeout_ms * 1000000ull;
	VIP_NET_ADDRESS *local, *remote;
	VIP_ULONG left;
	VIP_RETURN rc;

	if (ldisc == NULL)
		vc_die("out of memory");
	snprintf(ldisc, len + 3, "%s.c", o->disc); /* distinct from the listener's */
	local = net_addr(e->nic->mac, ldisc, llen);
	remote = net_addr(mac, o->disc, len);
	for (;;) {
		uint64_t now = vc_now_ns();

		left = o->timeout_ms == VIP_INFINITE ? VIP_INFINITE
		       : now >= end		     ? 1
						     : (VIP_ULONG)((end - now + 999999) / 1000000);
		rc = VipConnectRequest(e->vi, local, remote, left, &e->remote);
		if (rc != VIP_NO_MATCH || vc_now_ns() >= end)
			break;
		usleep(10000);
	}
	if (rc == VIP_TIMEOUT || rc == VIP_NO_MATCH)
		vc_die("VipConnectRequest: %s: no server for discriminator '%s' within %lu ms",
		       VipDpdkReturnString(rc), o->disc, o->timeout_ms);
	vc_ok("VipConnectRequest", rc);
	if (e->remote.MaxTransferSize < vc_max_size(&o->sched))
		vc_die("the server's MaxTransferSize %lu is below the largest size %u",
		       e->remote.MaxTransferSize, vc_max_size(&o->sched));
	free(ldisc);
	free(local);
	free(remote);
}

static void *
accept_thread(void *arg)
{
	vc_accept(arg);
	return NULL;
}

/* --loopback: the server's VipConnectWait/Accept in a second thread. */
void
vc_connect_pair(struct vc_ep *server, struct vc_ep *client)
{
	pthread_t t;
	int rc;

	if ((rc = pthread_create(&t, NULL, accept_thread, server)) != 0)
		vc_die("pthread_create: %s", strerror(rc));
	vc_connect(client, client->nic->mac);
	pthread_join(t, NULL);
}

/* ----------------------------------------------------------- data transfer */

struct deadline {
	uint64_t end;
	unsigned spins;
};

static void
dl_start(struct deadline *dl, VIP_ULONG ms)
{
	dl->end = ms == VIP_INFINITE ? UINT64_MAX : vc_now_ns() + ms * 1000000ull;
	dl->spins = 0;
}

static bool
dl_expired(struct deadline *dl)
{
	return (++dl->spins & 63) == 0 && vc_now_ns() >= dl->end;
}

static void
check_status(const struct vc_ep *e, const VIP_DESCRIPTOR *d, const char *what)
{
	static const char *const bits[] = { "FORMAT", "PROTECTION", "LENGTH", "PARTIAL",
					    "DESC_FLUSHED", "TRANSPORT", "RDMA_PROT", "REMOTE_DESC" };
	uint32_t st = d->CS.Status;
	char names[200] = "";
	unsigned i;

	if ((st & VIP_STATUS_DONE) && !(st & VIP_STATUS_ERROR_MASK))
		return;
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (st & (VIP_STATUS_FORMAT_ERROR << i))
			snprintf(names + strlen(names), sizeof(names) - strlen(names),
				 " VIP_STATUS_%s_ERROR", bits[i]);
	vc_die("%s: %s descriptor completed with status 0x%08x:%s", e->role, what, st,
	       names[0] ? names : " not DONE");
}

uint8_t *
vc_sbuf(const struct vc_ep *e)
{
	return e->sbuf + (size_t)(e->sposted % e->nsend) * e->sslot;
}

void
vc_post_send(struct vc_ep *e, const void *buf, uint32_t len)
{
	VIP_DESCRIPTOR *d = &e->sd[e->sposted % e->nsend];

	if (e->sposted - e->sdone >= e->nsend)
		vc_die("%s: send queue overrun (internal error)", e->role);
	memset(d, 0, sizeof(*d));
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.SegCount = 1; /* also for 0 bytes: one 0-length data segment */
	d->CS.Length = len;
	d->DS[0].Local.Data.Address = (VIP_PVOID)buf;
	d->DS[0].Local.Handle = e->buf_mh;
	d->DS[0].Local.Length = len;
	VC_OK(VipPostSend, e->vi, d, e->desc_mh);
	e->sposted++;
}

/*
 * An RDMA descriptor (VIA §10.2-10.4): the address segment names slot
 * (modulo its slot count) of the peer's target region, then one data
 * segment of len bytes at buf (in the buffer region, or the target region).
 */
void
vc_post_rdma(struct vc_ep *e, uint16_t control, const void *buf, uint32_t len, uint64_t slot,
	     uint32_t imm)
{
	VIP_DESCRIPTOR *d = &e->sd[e->sposted % e->nsend];
	const uint8_t *p = buf;

	if (e->sposted - e->sdone >= e->nsend)
		vc_die("%s: send queue overrun (internal error)", e->role);
	memset(d, 0, sizeof(*d));
	d->CS.Control = control;
	d->CS.ImmediateData = (control & VIP_CONTROL_IMMEDIATE) ? imm : 0;
	d->CS.SegCount = 2;
	d->CS.Length = len;
	d->DS[0].Remote.Data.AddressBits =
		e->peer.addr + (uint64_t)(slot % e->peer.slots) * e->peer.stride;
	d->DS[0].Remote.Handle = e->peer.handle;
	d->DS[1].Local.Data.Address = (VIP_PVOID)buf;
	d->DS[1].Local.Handle =
		e->tbuf != NULL && p >= e->tbuf && p < e->tbuf + e->tmem_len ? e->t_mh : e->buf_mh;
	d->DS[1].Local.Length = len;
	VC_OK(VipPostSend, e->vi, d, e->desc_mh);
	e->sposted++;
}

/* The operation of --op: a Send of buf, or an RDMA one with the peer's slot. */
void
vc_post_op(struct vc_ep *e, const void *buf, uint32_t len, uint64_t slot, uint32_t imm)
{
	switch (e->o->op) {
	case VC_OP_SEND: vc_post_send(e, buf, len); break;
	case VC_OP_WRITE: vc_post_rdma(e, VIP_CONTROL_OP_RDMAWRITE, buf, len, slot, 0); break;
	case VC_OP_WRITE_IMM:
		vc_post_rdma(e, VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, buf, len, slot, imm);
		break;
	case VC_OP_READ: vc_post_rdma(e, VIP_CONTROL_OP_RDMAREAD, buf, len, slot, 0); break;
	}
}

/*
 * Dequeue the send queue's head: wait for it (poll, or VipSendWait with
 * --wait block) if wait, else only if it is complete.  Returns whether one
 * was dequeued.
 */
bool
vc_send_reap(struct vc_ep *e, bool wait)
{
	VIP_DESCRIPTOR *d;
	struct deadline dl;
	VIP_RETURN rc;

	if (e->sdone == e->sposted)
		return false;
	if (wait && e->o->block) {
		rc = VipSendWait(e->vi, e->o->timeout_ms, &d);
	} else {
		dl_start(&dl, e->o->timeout_ms);
		while ((rc = VipSendDone(e->vi, &d)) == VIP_NOT_DONE && wait)
			if (dl_expired(&dl)) {
				rc = VIP_TIMEOUT;
				break;
			}
		if (rc == VIP_NOT_DONE)
			return false;
	}
	if (rc == VIP_TIMEOUT)
		vc_die("%s: a send did not complete within %lu ms", e->role, e->o->timeout_ms);
	vc_ok(e->o->block && wait ? "VipSendWait" : "VipSendDone", rc);
	if (d != &e->sd[e->sdone % e->nsend])
		vc_die("%s: send descriptors completed out of order", e->role);
	check_status(e, d, "send");
	e->sdone++;
	return true;
}

void
vc_post_recv(struct vc_ep *e, VIP_DESCRIPTOR *d)
{
	size_t i = (size_t)(d - e->rd);

	memset(d, 0, sizeof(*d));
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.SegCount = 1;
	d->CS.Length = e->rslot;
	d->DS[0].Local.Data.Address = e->rbuf + i * e->rslot;
	d->DS[0].Local.Handle = e->buf_mh;
	d->DS[0].Local.Length = e->rslot;
	VC_OK(VipPostRecv, e->vi, d, e->desc_mh);
}

/* Next completed receive, its status checked; NULL after timeout_ms. */
VIP_DESCRIPTOR *
vc_recv(struct vc_ep *e, VIP_ULONG timeout_ms)
{
	return vc_recv_wait(e, timeout_ms, e->o->block);
}

/* vc_recv, blocking (VipRecvWait, VipCQWait) if block, else polling. */
VIP_DESCRIPTOR *
vc_recv_wait(struct vc_ep *e, VIP_ULONG timeout_ms, bool block)
{
	VIP_DESCRIPTOR *d = NULL;
	VIP_BOOLEAN is_recv;
	struct deadline dl;
	VIP_VI_HANDLE vi;
	VIP_RETURN rc;

	if (e->cq != NULL) {
		if (block) {
			rc = VipCQWait(e->cq, timeout_ms, &vi, &is_recv);
		} else {
			dl_start(&dl, timeout_ms);
			while ((rc = VipCQDone(e->cq, &vi, &is_recv)) == VIP_NOT_DONE)
				if (dl_expired(&dl))
					return NULL;
		}
		if (rc == VIP_TIMEOUT)
			return NULL;
		vc_ok(block ? "VipCQWait" : "VipCQDone", rc);
		if (vi != e->vi || !is_recv)
			vc_die("%s: completion queue entry for another queue", e->role);
		rc = VipRecvDone(e->vi, &d);
		if (rc == VIP_NOT_DONE)
			vc_die("%s: CQ entry but no completed receive descriptor", e->role);
		vc_ok("VipRecvDone", rc);
	} else if (block) {
		rc = VipRecvWait(e->vi, timeout_ms, &d);
		if (rc == VIP_TIMEOUT)
			return NULL;
		vc_ok("VipRecvWait", rc);
	} else {
		dl_start(&dl, timeout_ms);
		while ((rc = VipRecvDone(e->vi, &d)) == VIP_NOT_DONE)
			if (dl_expired(&dl))
				return NULL;
		vc_ok("VipRecvDone", rc);
	}
	if (d < e->rd || d >= e->rd + e->nrecv)
		vc_die("%s: receive completed a descriptor that was not posted", e->role);
	check_status(e, d, "receive");
	return d;
}

uint8_t *
vc_data(const VIP_DESCRIPTOR *d)
{
	return d->DS[0].Local.Data.Address;
}

void
vc_expect_len(const struct vc_ep *e, const VIP_DESCRIPTOR *d, uint32_t len)
{
	if (d->CS.Length != len)
		vc_die("%s: received %u bytes, expected %u", e->role, d->CS.Length, len);
}

/* A receive consumed by an RDMA Write with immediate data imm. */
void
vc_expect_imm(const struct vc_ep *e, const VIP_DESCRIPTOR *d, uint32_t imm)
{
	uint32_t st = d->CS.Status;

	if ((st & VIP_STATUS_OP_MASK) != VIP_STATUS_OP_REMOTE_RDMA_WRITE ||
	    !(st & VIP_STATUS_IMMEDIATE))
		vc_die("%s: a receive completed with status 0x%08x, not by an RDMA Write with "
		       "immediate data", e->role, st);
	if (d->CS.ImmediateData != imm)
		vc_die("%s: immediate data 0x%08x, expected 0x%08x", e->role, d->CS.ImmediateData,
		       imm);
	if (d->CS.Length != 0)
		vc_die("%s: an RDMA Write with immediate data completed a receive with Length %u",
		       e->role, d->CS.Length);
}

/* Spin until the byte at p (written by viad) is v; false after timeout_ms. */
bool
vc_wait_byte(const uint8_t *p, uint8_t v, VIP_ULONG timeout_ms)
{
	struct deadline dl;

	dl_start(&dl, timeout_ms);
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
		if (dl_expired(&dl))
			return false;
	return true;
}

/* -------------------------------------------------------- control messages */

/* Post a control message without waiting for it (but for a free descriptor). */
void
vc_post_ctl(struct vc_ep *e, const uint32_t *msg, uint32_t words)
{
	uint8_t *buf;
	uint32_t i, w;

	if (words * 4 > e->sslot)
		vc_die("%s: control message larger than a send slot (internal error)", e->role);
	while (vc_send_reap(e, false))
		;
	if (e->sposted - e->sdone == e->nsend)
		vc_send_reap(e, true);
	buf = vc_sbuf(e);
	for (i = 0; i < words; i++) {
		w = htole32(msg[i]);
		memcpy(buf + 4 * i, &w, 4);
	}
	vc_post_send(e, buf, words * 4);
}

/* Post a control message and wait until every send has completed. */
void
vc_send_ctl(struct vc_ep *e, const uint32_t *msg, uint32_t words)
{
	vc_post_ctl(e, msg, words);
	while (vc_send_reap(e, true))
		;
}

static void recv_ctl(struct vc_ep *e, uint32_t *msg, uint32_t words, VIP_ULONG timeout_ms,
		     const char *what, bool block);

static uint32_t
word(const VIP_DESCRIPTOR *d, uint32_t i)
{
	uint32_t w;

	memcpy(&w, vc_data(d) + 4 * i, 4);
	return le32toh(w);
}

/*
 * If flow control is on and d is a credit message: take its count, re-post
 * d and return true.
 */
static bool
credit_msg(struct vc_ep *e, VIP_DESCRIPTOR *d)
{
	struct vc_credit *c = &e->cr;
	uint32_t count;

	if (c->limit == 0 || d->CS.Length != VC_CREDIT_WORDS * 4 || word(d, 0) != VC_MAGIC ||
	    word(d, 1) != VC_CREDIT_TAG)
		return false;
	count = word(d, 2);
	vc_post_recv(e, d);
	if ((int32_t)(count - c->acked) <= 0)
		return true; /* stale (reordered, Unreliable) */
	c->acked = count;
	if ((int32_t)(c->sent - c->acked) < 0) {
		if (e->o->rel != VIP_SERVICE_UNRELIABLE)
			vc_die("%s: the peer returned credits for %u messages, %u were sent",
			       e->role, count, c->sent);
		c->sent = c->acked; /* after a write-off the lost ones came after all */
	}
	return true;
}

void
vc_recv_ctl(struct vc_ep *e, uint32_t *msg, uint32_t words, VIP_ULONG timeout_ms, const char *what)
{
	recv_ctl(e, msg, words, timeout_ms, what, e->o->block);
}

static void
recv_ctl(struct vc_ep *e, uint32_t *msg, uint32_t words, VIP_ULONG timeout_ms, const char *what,
	 bool block)
{
	VIP_DESCRIPTOR *d;
	uint32_t i;

	while ((d = vc_recv_wait(e, timeout_ms, block)) != NULL && credit_msg(e, d))
		;
	if (d == NULL)
		vc_die("%s: no %s within %lu ms (lost?)", e->role, what, timeout_ms);
	if (d->CS.Length != words * 4)
		vc_die("%s: %s of %u bytes, expected %u (is the peer %s?)", e->role, what,
		       d->CS.Length, words * 4, prog);
	for (i = 0; i < words; i++)
		msg[i] = word(d, i);
	vc_post_recv(e, d);
	if (msg[0] != VC_MAGIC)
		vc_die("%s: bad %s (is the peer %s?)", e->role, what, prog);
}

/* A 3-word control message (VC_MAGIC, tag, n), e.g. a phase's start or end. */
void
vc_send_tag(struct vc_ep *e, uint32_t tag, uint32_t n)
{
	uint32_t m[VC_TAG_WORDS] = { VC_MAGIC, tag, n };

	vc_send_ctl(e, m, VC_TAG_WORDS);
}

/*
 * Receive a tag message; idle: this side has nothing else to do until it
 * comes (the end of a phase of one-sided operations), so block in
 * VipRecvWait (or VipCQWait) whatever --wait says, leaving the CPU to the
 * peer and viad.
 */
void
vc_recv_tag(struct vc_ep *e, uint32_t tag, uint32_t n, VIP_ULONG timeout_ms, bool idle,
	    const char *what)
{
	uint32_t m[VC_TAG_WORDS];

	recv_ctl(e, m, VC_TAG_WORDS, timeout_ms, what, idle || e->o->block);
	if (m[1] != tag || m[2] != n)
		vc_die("%s: bad %s (0x%08x %u, expected 0x%08x %u)", e->role, what, m[1], m[2], tag,
		       n);
}

/* e's target region into 5 words: address (low, high), handle, slots, stride */
static void
target_words(const struct vc_ep *e, uint32_t *w)
{
	uint64_t a = (uint64_t)(uintptr_t)e->tbuf;

	w[0] = (uint32_t)a;
	w[1] = (uint32_t)(a >> 32);
	w[2] = e->tbuf != NULL ? (uint32_t)e->t_mh : 0;
	w[3] = e->tbuf != NULL ? e->tslots : 0;
	w[4] = e->tbuf != NULL ? e->tstride : 0;
}

static void
peer_words(struct vc_ep *e, const uint32_t *w)
{
	e->peer.addr = (uint64_t)w[0] | (uint64_t)w[1] << 32;
	e->peer.handle = (VIP_MEM_HANDLE)w[2];
	e->peer.slots = w[3];
	e->peer.stride = w[4];
}

/* Client: the schedule, and its own RDMA target region if it has one. */
void
vc_send_hello(struct vc_ep *e, const struct vc_sched *s)
{
	uint32_t m[VC_HELLO_WORDS] = { VC_MAGIC, e->o->app->id, s->nsizes, s->check, s->credits,
				       s->op, s->window };

	target_words(e, m + 7);
	memcpy(m + VC_HELLO_FIXED, s->size, sizeof(s->size));
	memcpy(m + VC_HELLO_FIXED + VC_MAX_SIZES, s->iters, sizeof(s->iters));
	memcpy(m + VC_HELLO_FIXED + 2 * VC_MAX_SIZES, s->warmup, sizeof(s->warmup));
	vc_send_ctl(e, m, VC_HELLO_WORDS);
}

void
vc_recv_hello(struct vc_ep *e, struct vc_sched *s)
{
	uint32_t m[VC_HELLO_WORDS], i;

	vc_recv_ctl(e, m, VC_HELLO_WORDS, e->o->timeout_ms, "test parameters from the client");
	if (m[1] != (uint32_t)e->o->app->id)
		vc_die("the client runs another test program (not %s)", prog);
	if (m[2] == 0 || m[2] > VC_MAX_SIZES)
		vc_die("bad size count %u from the client", m[2]);
	if (m[5] > VC_OP_READ)
		vc_die("bad operation %u from the client", m[5]);
	s->nsizes = m[2];
	s->check = m[3];
	s->credits = m[4];
	s->op = m[5];
	s->window = m[6] ? m[6] : 1;
	peer_words(e, m + 7);
	memcpy(s->size, m + VC_HELLO_FIXED, sizeof(s->size));
	memcpy(s->iters, m + VC_HELLO_FIXED + VC_MAX_SIZES, sizeof(s->iters));
	memcpy(s->warmup, m + VC_HELLO_FIXED + 2 * VC_MAX_SIZES, sizeof(s->warmup));
	/* from here on this side runs the client's operation (the options are
	 * the server's own, or in --loopback the client's with the same op) */
	if (e->o->op != (enum vc_op)s->op)
		((struct vc_opts *)e->o)->op = (enum vc_op)s->op;
	for (i = 0; i < s->nsizes; i++)
		if (s->size[i] > e->rslot)
			vc_die("the client's size %u exceeds this side's buffers (%u bytes)", s->size[i],
			       e->rslot);
}

/*
 * Server: answer the hello; credits: the receives it keeps posted, 0: no
 * flow control; with its RDMA target region (address and memory handle)
 * if it has one.
 */
void
vc_send_hello_reply(struct vc_ep *e, uint32_t credits)
{
	uint32_t m[VC_REPLY_WORDS] = { VC_MAGIC, e->o->app->id, credits };

	target_words(e, m + 3);
	vc_send_ctl(e, m, VC_REPLY_WORDS);
}

/* Client: the server's credits (0: no flow control); its target into e->peer. */
uint32_t
vc_recv_hello_reply(struct vc_ep *e)
{
	uint32_t m[VC_REPLY_WORDS];

	vc_recv_ctl(e, m, VC_REPLY_WORDS, e->o->timeout_ms, "reply to the test parameters");
	if (m[1] != (uint32_t)e->o->app->id)
		vc_die("the server runs another test program (not %s)", prog);
	if (m[2] > (1u << 24)) /* above any queue; keeps the counts well apart */
		vc_die("bad credit count %u from the server", m[2]);
	peer_words(e, m + 3);
	return m[2];
}

/* --------------------------------------------------- credit flow control */

/* Both ends, after the hello: limit = R, 0 turns flow control off. */
void
vc_credit_start(struct vc_ep *e, uint32_t limit)
{
	memset(&e->cr, 0, sizeof(e->cr));
	e->cr.limit = limit;
	e->cr.batch = (limit + 3) / 4;
}

/*
 * Sender, before each message: take a credit, first waiting for credit
 * messages while none is left.  On a reliable level none may be missing,
 * so a wait past -t is fatal; on an Unreliable VI messages (or credits) may
 * be lost and after VC_CREDIT_STALL_MS those outstanding are written off.
 */
void
vc_credit_take(struct vc_ep *e)
{
	struct vc_credit *c = &e->cr;
	bool reliable = e->o->rel != VIP_SERVICE_UNRELIABLE;
	VIP_ULONG ms = reliable ? e->o->timeout_ms : VC_CREDIT_STALL_MS;
	VIP_DESCRIPTOR *d;

	if (c->limit == 0)
		return;
	if (c->sent - c->acked >= c->limit)
		c->waits++;
	while (c->sent - c->acked >= c->limit) {
		d = vc_recv(e, ms);
		if (d == NULL) {
			if (reliable)
				vc_die("%s: no credit returned within %lu ms (%u messages outstanding)",
				       e->role, ms, c->sent - c->acked);
			c->sent = c->acked;
			c->writeoffs++;
		} else if (!credit_msg(e, d)) {
			vc_die("%s: unexpected %u-byte message while waiting for credits", e->role,
			       d->CS.Length);
		}
	}
	c->sent++;
}

/* Receiver, after re-posting the receive of a message: return credits per batch. */
void
vc_credit_return(struct vc_ep *e)
{
	struct vc_credit *c = &e->cr;
	uint32_t m[VC_CREDIT_WORDS] = { VC_MAGIC, VC_CREDIT_TAG };

	if (c->limit == 0)
		return;
	c->reposted++;
	if (c->reposted - c->returned < c->batch)
		return;
	m[2] = c->returned = c->reposted;
	vc_post_ctl(e, m, VC_CREDIT_WORDS);
}

/*
 * Sender, once the receiver has reported count re-posts with all its
 * receives posted again (the end of a phase, nothing sent since): all
 * credits are back; messages it never got are written off (Unreliable).
 */
void
vc_credit_sync(struct vc_ep *e, uint32_t count)
{
	struct vc_credit *c = &e->cr;

	if (c->limit == 0)
		return;
	if ((int32_t)(count - c->acked) > 0)
		c->acked = count;
	c->sent = c->acked;
}

/* ---------------------------------------------------------------- payload */

static inline uint64_t
pattern(uint64_t seq, uint32_t len, uint64_t k)
{
	return htole64(k == 0 ? seq
			      : (seq * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)len << 40) ^
					(k * 0xD6E8FEB86659FD93ull));
}

void
vc_fill(void *buf, uint32_t len, uint64_t seq)
{
	uint8_t *p = buf;
	uint32_t k, n = len / 8;
	uint64_t w;

	for (k = 0; k < n; k++) {
		w = pattern(seq, len, k);
		memcpy(p + 8 * k, &w, 8);
	}
	if (len % 8) {
		w = pattern(seq, len, n);
		memcpy(p + 8 * n, &w, len % 8);
	}
}

/* The first byte that differs from the pattern, or len; *want: its expected value. */
static uint32_t
mismatch(const void *buf, uint32_t len, uint64_t seq, uint8_t *want)
{
	const uint8_t *p = buf, *q;
	uint32_t k, m, i;
	uint64_t w;

	for (k = 0; 8 * k < len; k++) {
		w = pattern(seq, len, k);
		m = len - 8 * k < 8 ? len - 8 * k : 8;
		if (memcmp(p + 8 * k, &w, m) == 0)
			continue;
		for (i = 0, q = (const uint8_t *)&w; p[8 * k + i] == q[i]; i++)
			;
		*want = q[i];
		return 8 * k + i;
	}
	return len;
}

static _Noreturn void
mismatch_die(const struct vc_ep *e, const uint8_t *p, uint32_t len, uint64_t seq, uint32_t at,
	     uint8_t want)
{
	vc_die("%s: payload mismatch in message %llu of %u bytes at byte %u: 0x%02x, "
	       "expected 0x%02x",
	       e->role, (unsigned long long)seq, len, at, p[at], want);
}

/* Whether buf holds the pattern of message seq (vc_verify without dying). */
bool
vc_matches(const void *buf, uint32_t len, uint64_t seq)
{
	uint8_t want;

	return mismatch(buf, len, seq, &want) == len;
}

void
vc_verify(const struct vc_ep *e, const void *buf, uint32_t len, uint64_t seq)
{
	uint32_t at;
	uint8_t want;

	if ((at = mismatch(buf, len, seq, &want)) < len)
		mismatch_die(e, buf, len, seq, at, want);
}

/*
 * vc_verify of a buffer that viad may still be writing: an RDMA Write
 * without immediate data is seen by its last byte, and viad's copy of a
 * frame may store that byte before others (memcpy gives no order); so the
 * check is repeated until it passes or timeout_ms has passed.
 */
void
vc_verify_wait(const struct vc_ep *e, const void *buf, uint32_t len, uint64_t seq,
	       VIP_ULONG timeout_ms)
{
	struct deadline dl;
	uint32_t at;
	uint8_t want;

	dl_start(&dl, timeout_ms);
	while ((at = mismatch(buf, len, seq, &want)) < len) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (dl_expired(&dl))
			mismatch_die(e, buf, len, seq, at, want);
	}
}

/* --op write: pattern (if wanted) over len - 1 bytes, vc_tag(seq) in the last. */
void
vc_fill_tagged(void *buf, uint32_t len, uint64_t seq, bool pat)
{
	if (len == 0)
		return;
	if (pat)
		vc_fill(buf, len - 1, seq);
	((uint8_t *)buf)[len - 1] = vc_tag(seq);
}

uint64_t
vc_seq_of(const void *buf, uint32_t len)
{
	uint64_t w = 0;

	memcpy(&w, buf, len < 8 ? len : 8);
	return le64toh(w);
}

/* ------------------------------------------------------ time, statistics */

uint64_t
vc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile (per mille) of sorted samples, in microseconds. */
static double
pct(const uint64_t *s, size_t n, unsigned per_mille)
{
	size_t r = (n * per_mille + 999) / 1000;

	return (double)s[r < 1 ? 0 : r - 1] / 1e3;
}

void
vc_lat_stats(uint64_t *ns, size_t n, struct vc_lat *l)
{
	double sum = 0;
	size_t i;

	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)ns[i];
	l->min = (double)ns[0] / 1e3;
	l->p50 = pct(ns, n, 500);
	l->p90 = pct(ns, n, 900);
	l->p99 = pct(ns, n, 990);
	l->p999 = pct(ns, n, 999);
	l->max = (double)ns[n - 1] / 1e3;
	l->mean = sum / (double)n / 1e3;
}

/* The run's settings, then the column header (table mode only). */
void
vc_banner(const struct vc_ep *e, const char *columns)
{
	const struct vc_nic *n = e->nic;
	const struct vc_opts *o = n->o;
	char mac[18];

	if (o->json)
		return;
	mac_str(n->mac, mac);
	printf("# %s: %s %s, %s%s, op %s, %s, %s, %s, %s memory, check %s", prog, o->nic, mac,
	       o->role == VC_LOOPBACK ? "loopback" : "client of ",
	       o->role == VC_LOOPBACK ? "" : o->peer, vc_op_name(o->op), vc_rel_name(o->rel),
	       o->block ? "block" : "poll", o->cq ? "CQ" : "work queue",
	       mem_names[o->mem], o->sched.check ? "on" : "off");
	if (o->inline_size >= 0)
		printf(", line entries, inline %d", o->inline_size);
	if (o->app->window)
		printf(", window %u", o->window);
	if (e->cr.limit)
		printf(", credits %u", e->cr.limit);
	else if (o->app->window)
		printf(", no flow control");
	printf("\n%s\n", columns);
}

/* the run's clock: it starts with the program */
static uint64_t run_start_ns;

static void __attribute__((constructor))
run_clock_start(void)
{
	run_start_ns = vc_now_ns();
}

void
vc_progress(const struct vc_opts *o, uint32_t size, const char *fmt, ...)
{
	const struct vc_sched *s = &o->sched;
	uint32_t i = 0;
	va_list ap;

	if (isatty(STDOUT_FILENO))
		return;
	while (i + 1 < s->nsizes && s->size[i] != size)
		i++;
	fprintf(stderr, "%s: size %u done (%u of %u) after %.1f s: ", prog, size, i + 1,
		s->nsizes, (double)(vc_now_ns() - run_start_ns) / 1e9);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
vc_lat_row(const struct vc_opts *o, uint32_t size, uint32_t iters, const struct vc_lat *l)
{
	vc_progress(o, size, "%u round trips, p50 %.2f us, p99 %.2f us", iters, l->p50, l->p99);
	if (!o->json) {
		printf("%8u %9u %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", size, iters, l->min,
		       l->p50, l->p90, l->p99, l->p999, l->max, l->mean);
		fflush(stdout);
		return;
	}
	printf("{\"test\":\"%s\",\"size\":%u,\"iters\":%u,\"rtt_us\":{\"min\":%.3f,\"p50\":%.3f,"
	       "\"p90\":%.3f,\"p99\":%.3f,\"p99.9\":%.3f,\"max\":%.3f,\"mean\":%.3f},"
	       "\"oneway_p50_us\":%.3f,",
	       o->app->test, size, iters, l->min, l->p50, l->p90, l->p99, l->p999, l->max, l->mean,
	       l->p50 / 2);
	vc_json_common(o);
}

/* The settings every JSON object ends with; closes the object. */
void
vc_json_common(const struct vc_opts *o)
{
	const char *s;

	printf("\"nic\":\"");
	for (s = o->nic; *s; s++)
		printf((unsigned char)*s < 0x20 || *s == '"' || *s == '\\' ? "\\u%04x" : "%c",
		       (unsigned char)*s);
	printf("\",\"op\":\"%s\",\"mode\":\"%s\",\"wait\":\"%s\",\"reliability\":\"%s\","
	       "\"cq\":%s,\"mem\":\"%s\",\"check\":%s,\"inline\":%d,\"reg_each\":%s}\n",
	       vc_op_name(o->op), o->role == VC_LOOPBACK ? "loopback" : "client",
	       o->block ? "block" : "poll",
	       vc_rel_name(o->rel), o->cq ? "true" : "false", mem_names[o->mem],
	       o->sched.check ? "true" : "false", o->inline_size, o->reg_each ? "true" : "false");
	fflush(stdout);
}
