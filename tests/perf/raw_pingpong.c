/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * raw_pingpong: the physical floor of a frame round trip over a DPDK port,
 * with no VIA in the way.  The client builds an Ethernet frame, sends it,
 * and busy-polls until the server has echoed it back (MACs swapped); every
 * round trip is timed with rte_rdtsc() and converted with rte_get_tsc_hz().
 *
 *   raw_pingpong EAL-ARGS -- --port memif --role server|client --socket PATH [OPTIONS]
 *       two processes joined by a net_memif port, each its own EAL instance
 *       (give each its own --file-prefix, or --in-memory, and its own lcore);
 *       start the server first.
 *   raw_pingpong EAL-ARGS -- --port ethdev --devargs DEVARGS --role server|client [OPTIONS]
 *       the same over any other ethdev (net_af_xdp, net_af_packet, ...).
 *   raw_pingpong EAL-ARGS -- --port ring [OPTIONS]
 *       one process, two lcores (client on the main lcore, server on the
 *       first worker), a pair of single-producer single-consumer rte_rings
 *       carrying mbuf pointers: the in-process floor of viad's loopback NIC.
 *
 * SIZE is the Ethernet payload: the frame is 14 + SIZE bytes (no CRC).
 * The client sends a STOP frame at the end; the server then exits.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#define RPP_ETHERTYPE	0x88b5	/* IEEE local experimental */
#define RPP_MAGIC	0x52505031u /* "RPP1" */
#define RPP_DATA	1u
#define RPP_STOP	2u
#define RPP_MAX_SIZES	32
#define RPP_MAX_EXCHANGES 8
#define RPP_MAX_PAYLOAD	9000u
#define RPP_MIN_PAYLOAD	16u	/* the rpp header below */
#define RPP_BURST	32
#define RPP_NB_MBUFS	2047
#define RPP_MBUF_ROOM	(RTE_PKTMBUF_HEADROOM + RTE_ETHER_HDR_LEN + RPP_MAX_PAYLOAD + 64)
#define RPP_RING_SIZE	1024
#define RPP_VDEV	"net_memif_rpp"

/* the first bytes of the Ethernet payload */
struct rpp_hdr {
	uint32_t magic;
	uint32_t kind;
	uint64_t seq;
} __rte_packed;

enum port_kind { PORT_NONE, PORT_MEMIF, PORT_ETHDEV, PORT_RING };
enum role { ROLE_NONE, ROLE_SERVER, ROLE_CLIENT };

struct opts {
	enum port_kind port;
	enum role role;
	const char *socket;
	const char *devargs;
	uint32_t size[RPP_MAX_SIZES];
	unsigned nsizes;
	uint32_t iters;
	uint32_t warmup;
	uint32_t exchanges;	/* round trips per timed sample */
	uint32_t timeout_ms;	/* one round trip; longer counts as lost */
	uint32_t link_timeout_s;
	uint32_t max_lost;
	bool json;
	bool quiet;
};

/* One end of the conversation: an ethdev queue pair or a ring pair. */
struct end {
	enum port_kind kind;
	uint16_t pid;
	struct rte_ring *tx, *rx;
	struct rte_ether_addr mac, peer;
	const char *driver;	/* "net_memif", ..., "rte_ring" */
	uint32_t max_payload;	/* largest SIZE this end can carry */
	const char *why_max;	/* what limits it */
};

static struct opts o = {
	.iters = 100000,
	.warmup = 1000,
	.exchanges = 1,
	.timeout_ms = 1000,
	.link_timeout_s = 30,
	.max_lost = 10,
};

static struct rte_mempool *pool;
static volatile sig_atomic_t quit;
static bool quit_tx; /* a port refused to send for a second */
static const char *prog = "raw_pingpong";

static const char *const port_names[] = {
	[PORT_NONE] = "none", [PORT_MEMIF] = "memif", [PORT_ETHDEV] = "ethdev",
	[PORT_RING] = "ring",
};

static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void __rte_noreturn
usage(int rc)
{
	FILE *f = rc == 0 ? stdout : stderr;

	fprintf(f,
		"usage: %s EAL-ARGS -- --port memif --role server|client --socket PATH [OPTIONS]\n"
		"       %s EAL-ARGS -- --port ethdev --devargs DEVARGS --role server|client [OPTIONS]\n"
		"       %s EAL-ARGS -- --port ring [OPTIONS]     (needs two lcores)\n"
		"Options (client, or ring):\n"
		"  --size LIST     Ethernet payload sizes, comma separated, K suffix allowed\n"
		"                  (default 64,256,1024,1500,4096,9000; %u..%u; sizes the port\n"
		"                  cannot carry are reported as skipped)\n"
		"  -n N            timed round trips per size (default 100000)\n"
		"  -w N            warm-up round trips per size, not timed (default 1000)\n"
		"  --exchanges N   round trips per timed sample, back to back (default 1, at\n"
		"                  most %u): 2 is the in-process floor of a VIA loopback round\n"
		"                  trip, whose ping and whose pong each go to the poll lcore and\n"
		"                  back (vipl_pingpong --loopback)\n"
		"  -t MS           a round trip longer than this counts as lost (default 1000)\n"
		"  --max-lost N    give up after N lost frames (default 10)\n"
		"  --link-timeout S  wait at most S seconds for the link (default 30)\n"
		"  --json          one JSON object per size instead of the table\n"
		"  -q              no progress messages on stderr\n"
		"The server echoes every frame (MACs swapped) until the client's STOP frame,\n"
		"SIGINT/SIGTERM, or the link going down.\n",
		prog, prog, prog, RPP_MIN_PAYLOAD, RPP_MAX_PAYLOAD, RPP_MAX_EXCHANGES);
	exit(rc);
}

static void __rte_noreturn __rte_format_printf(1, 2)
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint32_t
parse_u32(const char *s, const char *what, bool suffix)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (suffix && (*end == 'k' || *end == 'K')) {
		v *= 1024;
		end++;
	}
	if (errno != 0 || end == s || *end != '\0' || v > UINT32_MAX || s[0] == '-') {
		fprintf(stderr, "%s: bad %s '%s'\n", prog, what, s);
		usage(2);
	}
	return (uint32_t)v;
}

static void
parse_sizes(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;

	if (copy == NULL)
		die("out of memory");
	o.nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		uint32_t v = parse_u32(tok, "size", true);

		if (o.nsizes == RPP_MAX_SIZES)
			die("more than %d sizes", RPP_MAX_SIZES);
		if (v < RPP_MIN_PAYLOAD || v > RPP_MAX_PAYLOAD)
			die("size %u out of range %u..%u", v, RPP_MIN_PAYLOAD, RPP_MAX_PAYLOAD);
		o.size[o.nsizes++] = v;
	}
	free(copy);
	if (o.nsizes == 0)
		die("empty size list");
}

static void
parse_opts(int argc, char **argv)
{
	enum { OPT_PORT = 256, OPT_ROLE, OPT_SOCKET, OPT_DEVARGS, OPT_SIZE, OPT_JSON,
	       OPT_MAXLOST, OPT_LINKTO, OPT_EXCHANGES };
	static const struct option lo[] = {
		{ "port", required_argument, NULL, OPT_PORT },
		{ "role", required_argument, NULL, OPT_ROLE },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "devargs", required_argument, NULL, OPT_DEVARGS },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "max-lost", required_argument, NULL, OPT_MAXLOST },
		{ "link-timeout", required_argument, NULL, OPT_LINKTO },
		{ "exchanges", required_argument, NULL, OPT_EXCHANGES },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	parse_sizes("64,256,1024,1500,4096,9000");
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:w:t:qh", lo, NULL)) != -1) {
		switch (c) {
		case OPT_PORT:
			if (strcmp(optarg, "memif") == 0)
				o.port = PORT_MEMIF;
			else if (strcmp(optarg, "ethdev") == 0)
				o.port = PORT_ETHDEV;
			else if (strcmp(optarg, "ring") == 0)
				o.port = PORT_RING;
			else
				die("bad --port '%s' (memif, ethdev, ring)", optarg);
			break;
		case OPT_ROLE:
			if (strcmp(optarg, "server") == 0)
				o.role = ROLE_SERVER;
			else if (strcmp(optarg, "client") == 0)
				o.role = ROLE_CLIENT;
			else
				die("bad --role '%s' (server, client)", optarg);
			break;
		case OPT_SOCKET: o.socket = optarg; break;
		case OPT_DEVARGS: o.devargs = optarg; break;
		case OPT_SIZE: parse_sizes(optarg); break;
		case OPT_JSON: o.json = true; break;
		case OPT_MAXLOST: o.max_lost = parse_u32(optarg, "--max-lost", false); break;
		case OPT_LINKTO: o.link_timeout_s = parse_u32(optarg, "--link-timeout", false); break;
		case OPT_EXCHANGES: o.exchanges = parse_u32(optarg, "--exchanges", false); break;
		case 'n': o.iters = parse_u32(optarg, "-n", false); break;
		case 'w': o.warmup = parse_u32(optarg, "-w", false); break;
		case 't': o.timeout_ms = parse_u32(optarg, "-t", false); break;
		case 'q': o.quiet = true; break;
		case 'h': usage(0);
		default: usage(2);
		}
	}
	if (optind != argc)
		die("unexpected argument '%s'", argv[optind]);
	if (o.port == PORT_NONE)
		die("--port is required (memif, ethdev, ring)");
	if (o.port == PORT_RING && o.role != ROLE_NONE)
		die("--port ring runs both ends in this process: no --role");
	if (o.port != PORT_RING && o.role == ROLE_NONE)
		die("--port %s needs --role server|client", port_names[o.port]);
	if (o.port == PORT_MEMIF && o.socket == NULL)
		die("--port memif needs --socket PATH");
	if (o.port == PORT_ETHDEV && o.devargs == NULL)
		die("--port ethdev needs --devargs DEVARGS");
	if (o.iters == 0)
		die("-n must be at least 1");
	if (o.exchanges == 0 || o.exchanges > RPP_MAX_EXCHANGES)
		die("--exchanges must be 1..%u", RPP_MAX_EXCHANGES);
	if (o.timeout_ms == 0)
		die("-t must be at least 1");
}

static void
note(const char *fmt, ...) __rte_format_printf(1, 2);

static void
note(const char *fmt, ...)
{
	va_list ap;

	if (o.quiet)
		return;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------- the ports */

static inline uint16_t
end_tx(struct end *e, struct rte_mbuf **m, uint16_t n)
{
	if (e->kind == PORT_RING)
		return (uint16_t)rte_ring_sp_enqueue_burst(e->tx, (void **)m, n, NULL);
	return rte_eth_tx_burst(e->pid, 0, m, n);
}

static inline uint16_t
end_rx(struct end *e, struct rte_mbuf **m, uint16_t n)
{
	if (e->kind == PORT_RING)
		return (uint16_t)rte_ring_sc_dequeue_burst(e->rx, (void **)m, n, NULL);
	return rte_eth_rx_burst(e->pid, 0, m, n);
}

/*
 * Send all n, spinning while the port is full.  False, with the unsent
 * frames freed, when told to quit or when the port took nothing for a
 * second (a memif whose peer went away drops nothing: it refuses).
 */
static bool
end_tx_all(struct end *e, struct rte_mbuf **m, uint16_t n)
{
	uint64_t start = 0;
	uint16_t done = 0, k;

	while (done < n) {
		k = end_tx(e, m + done, (uint16_t)(n - done));
		done = (uint16_t)(done + k);
		if (k == 0 && done < n) {
			uint64_t now = rte_get_tsc_cycles();

			if (start == 0)
				start = now;
			else if (now - start > rte_get_tsc_hz())
				quit_tx = true;
		} else {
			start = 0;
		}
		if (quit || quit_tx) {
			rte_pktmbuf_free_bulk(m + done, n - done);
			return false;
		}
	}
	return true;
}

static bool
link_up(uint16_t pid)
{
	struct rte_eth_link l;

	memset(&l, 0, sizeof(l));
	return rte_eth_link_get_nowait(pid, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
}

static void
ethdev_open(struct end *e)
{
	static const struct rte_ether_addr mac_server = {{ 0x02, 0, 0, 0, 0x0b, 0x01 }};
	static const struct rte_ether_addr mac_client = {{ 0x02, 0, 0, 0, 0x0b, 0x02 }};
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	char devargs[1024], name[RTE_ETH_NAME_MAX_LEN];
	uint64_t deadline;
	uint16_t pid, rxd = RPP_RING_SIZE, txd = RPP_RING_SIZE;
	bool server = o.role == ROLE_SERVER;
	int rc;

	if (o.port == PORT_MEMIF) {
		const struct rte_ether_addr *m = server ? &mac_server : &mac_client;

		snprintf(devargs, sizeof(devargs),
			 RPP_VDEV ",role=%s,socket=%s,socket-abstract=no,"
			 "mac=%02x:%02x:%02x:%02x:%02x:%02x",
			 server ? "server" : "client", o.socket, m->addr_bytes[0],
			 m->addr_bytes[1], m->addr_bytes[2], m->addr_bytes[3],
			 m->addr_bytes[4], m->addr_bytes[5]);
	} else {
		snprintf(devargs, sizeof(devargs), "%s", o.devargs);
	}
	rc = rte_dev_probe(devargs);
	if (rc < 0)
		die("rte_dev_probe(%s): %s", devargs, rte_strerror(-rc));
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(devargs, ","), devargs);
	if (rte_eth_dev_get_port_by_name(name, &pid) != 0)
		die("no ethdev port named %s after probing it", name);
	e->kind = o.port;
	e->pid = pid;

	rc = rte_eth_dev_info_get(pid, &info);
	if (rc != 0)
		die("rte_eth_dev_info_get: %s", rte_strerror(-rc));
	e->driver = info.driver_name;
	memset(&conf, 0, sizeof(conf));
	conf.txmode.offloads = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	rc = rte_eth_dev_configure(pid, 1, 1, &conf);
	if (rc != 0)
		die("rte_eth_dev_configure: %s", rte_strerror(-rc));
	/*
	 * What the port carries.  net_memif enforces no MTU (it has no mtu_set
	 * and reports the 1518-byte default): its copy path chains 2 KiB ring
	 * buffers and mbufs, so any frame our mbufs hold goes through.  Other
	 * ports get the largest MTU they accept.
	 */
	if (strcmp(info.driver_name, "net_memif") == 0) {
		e->max_payload = RPP_MAX_PAYLOAD;
		e->why_max = "mbuf size";
	} else {
		uint16_t mtu = (uint16_t)RTE_MIN(info.max_mtu, RPP_MAX_PAYLOAD);

		while (mtu > RTE_ETHER_MTU && rte_eth_dev_set_mtu(pid, mtu) != 0)
			mtu = (uint16_t)(mtu > 4096 ? 4096 : RTE_ETHER_MTU);
		if (rte_eth_dev_get_mtu(pid, &mtu) != 0)
			mtu = RTE_ETHER_MTU;
		e->max_payload = mtu;
		e->why_max = "port MTU";
	}
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
	if (rc != 0)
		die("rte_eth_dev_adjust_nb_rx_tx_desc: %s", rte_strerror(-rc));
	rc = rte_eth_rx_queue_setup(pid, 0, rxd, (unsigned)rte_eth_dev_socket_id(pid), NULL, pool);
	if (rc != 0)
		die("rx queue setup: %s", rte_strerror(-rc));
	rc = rte_eth_tx_queue_setup(pid, 0, txd, (unsigned)rte_eth_dev_socket_id(pid), NULL);
	if (rc != 0)
		die("tx queue setup: %s", rte_strerror(-rc));
	rte_eth_promiscuous_enable(pid); /* not every PMD has it */
	rte_eth_macaddr_get(pid, &e->mac);
	e->peer = server ? mac_client : mac_server;
	if (o.port != PORT_MEMIF)
		memset(&e->peer, 0xff, sizeof(e->peer)); /* broadcast: works on any L2 */

	/* a memif client whose server is not listening yet fails to start: retry */
	deadline = rte_get_tsc_cycles() + (uint64_t)o.link_timeout_s * rte_get_tsc_hz();
	while ((rc = rte_eth_dev_start(pid)) != 0) {
		if (quit || rte_get_tsc_cycles() > deadline)
			die("rte_eth_dev_start(%s): %s", name, rte_strerror(-rc));
		usleep(100 * 1000);
	}
	note("%s: %s %s, waiting for the link", name, port_names[o.port],
	     server ? "server" : "client");
	while (!link_up(pid)) {
		if (quit || rte_get_tsc_cycles() > deadline)
			die("%s: link still down after %u s", name, o.link_timeout_s);
		usleep(10 * 1000);
	}
	note("%s: link up", name);
}

static void
ethdev_close(struct end *e)
{
	struct rte_eth_dev_info info;
	char name[RTE_ETH_NAME_MAX_LEN];
	struct rte_device *dev = NULL;

	if (rte_eth_dev_info_get(e->pid, &info) == 0)
		dev = info.device;
	rte_eth_dev_get_name_by_port(e->pid, name);
	rte_eth_dev_stop(e->pid);
	rte_eth_dev_close(e->pid);
	if (dev != NULL)
		rte_dev_remove(dev);
}

/* ------------------------------------------------------------ the server */

/* Echo until STOP, a signal or the link going down; returns frames echoed. */
static uint64_t
serve(struct end *e, bool watch_link)
{
	struct rte_mbuf *m[RPP_BURST];
	struct rte_ether_addr tmp;
	const uint64_t second = rte_get_tsc_hz();
	uint64_t next_check = rte_get_tsc_cycles() + second, echoed = 0;
	bool stop = false;
	uint16_t n, i, k;

	while (!quit && !stop) {
		n = end_rx(e, m, RPP_BURST);
		if (n == 0) {
			if (watch_link && rte_get_tsc_cycles() > next_check) {
				if (!link_up(e->pid)) {
					note("link went down: client gone");
					break;
				}
				next_check = rte_get_tsc_cycles() + second;
			}
			continue;
		}
		for (i = 0, k = 0; i < n; i++) {
			struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m[i], struct rte_ether_hdr *);
			const struct rpp_hdr *h = (const struct rpp_hdr *)(eh + 1);

			if (m[i]->data_len < sizeof(*eh) + sizeof(*h) ||
			    eh->ether_type != rte_cpu_to_be_16(RPP_ETHERTYPE) ||
			    h->magic != RPP_MAGIC) {
				rte_pktmbuf_free(m[i]); /* not ours (e.g. IPv6 ND on veth) */
				continue;
			}
			if (h->kind == RPP_STOP)
				stop = true;
			rte_ether_addr_copy(&eh->dst_addr, &tmp);
			rte_ether_addr_copy(&eh->src_addr, &eh->dst_addr);
			rte_ether_addr_copy(&tmp, &eh->src_addr);
			m[k++] = m[i];
		}
		if (!end_tx_all(e, m, k))
			break;
		echoed += k;
	}
	return echoed;
}

/* ------------------------------------------------------------ the client */

struct lat {
	double min, p50, p90, p99, p999, max, mean;
};

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank, like vipl_pingpong */
static double
pct_us(const uint64_t *s, size_t n, unsigned per_mille, double us_per_cycle)
{
	size_t r = (n * per_mille + 999) / 1000;

	return (double)s[r < 1 ? 0 : r - 1] * us_per_cycle;
}

static void
lat_stats(uint64_t *c, size_t n, struct lat *l)
{
	const double k = 1e6 / (double)rte_get_tsc_hz();
	double sum = 0;
	size_t i;

	qsort(c, n, sizeof(*c), cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)c[i];
	l->min = (double)c[0] * k;
	l->p50 = pct_us(c, n, 500, k);
	l->p90 = pct_us(c, n, 900, k);
	l->p99 = pct_us(c, n, 990, k);
	l->p999 = pct_us(c, n, 999, k);
	l->max = (double)c[n - 1] * k;
	l->mean = sum / (double)n * k;
}

static struct rte_mbuf *
build(struct end *e, uint32_t size, uint32_t kind, uint64_t seq)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ether_hdr *eh;
	struct rpp_hdr *h;
	uint32_t len = RTE_ETHER_HDR_LEN + size;

	if (m == NULL)
		die("mbuf pool empty");
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)len);
	if (eh == NULL)
		die("frame of %u bytes does not fit an mbuf", len);
	rte_ether_addr_copy(&e->peer, &eh->dst_addr);
	rte_ether_addr_copy(&e->mac, &eh->src_addr);
	eh->ether_type = rte_cpu_to_be_16(RPP_ETHERTYPE);
	h = (struct rpp_hdr *)(eh + 1);
	h->magic = RPP_MAGIC;
	h->kind = kind;
	h->seq = seq;
	return m;
}

/* the echo of seq, or NULL after timeout cycles; frees everything else */
static struct rte_mbuf *
await(struct end *e, uint64_t seq, uint32_t len, uint64_t t0, uint64_t timeout)
{
	struct rte_mbuf *m[RPP_BURST], *got = NULL;
	uint16_t n, i;

	for (;;) {
		n = end_rx(e, m, RPP_BURST);
		for (i = 0; i < n; i++) {
			const struct rte_ether_hdr *eh =
				rte_pktmbuf_mtod(m[i], const struct rte_ether_hdr *);
			const struct rpp_hdr *h = (const struct rpp_hdr *)(eh + 1);

			if (got == NULL && m[i]->pkt_len == len && m[i]->data_len >= sizeof(*eh) + sizeof(*h) &&
			    eh->ether_type == rte_cpu_to_be_16(RPP_ETHERTYPE) &&
			    h->magic == RPP_MAGIC && h->seq == seq)
				got = m[i];
			else
				rte_pktmbuf_free(m[i]); /* a late echo, or not ours */
		}
		if (got != NULL || quit || rte_rdtsc() - t0 > timeout)
			return got;
	}
}

static void
print_header(void)
{
	if (o.json)
		return;
	printf("# raw_pingpong: port %s, %s, RTT in us (tsc %.3f MHz)%s\n", port_names[o.port],
	       o.port == PORT_RING ? "client and server lcores in one process" : "client",
	       rte_get_tsc_hz() / 1e6,
	       o.exchanges > 1 ? ", each sample several round trips (--exchanges)" : "");
	printf("%8s %9s %6s %9s %9s %9s %9s %9s %9s %9s\n", "size", "iters", "lost", "min",
	       "p50", "p90", "p99", "p99.9", "max", "mean");
}

static void
print_skip(uint32_t size, const struct end *e)
{
	if (o.json)
		printf("{\"test\":\"raw_pingpong\",\"port\":\"%s\",\"size\":%u,\"skipped\":"
		       "\"exceeds the port's limit of %u bytes (%s)\"}\n",
		       port_names[o.port], size, e->max_payload, e->why_max);
	else
		printf("%8u skipped: exceeds the port's limit of %u bytes (%s)\n", size,
		       e->max_payload, e->why_max);
	fflush(stdout);
}

static void
print_row(const struct end *e, uint32_t size, uint32_t n, uint32_t lost, const struct lat *l)
{
	if (!o.json) {
		printf("%8u %9u %6u %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", size, n, lost,
		       l->min, l->p50, l->p90, l->p99, l->p999, l->max, l->mean);
	} else {
		printf("{\"test\":\"raw_pingpong\",\"port\":\"%s\",\"driver\":\"%s\",\"size\":%u,"
		       "\"frame_len\":%u,"
		       "\"iters\":%u,\"lost\":%u,\"rtt_us\":{\"min\":%.3f,\"p50\":%.3f,"
		       "\"p90\":%.3f,\"p99\":%.3f,\"p99.9\":%.3f,\"max\":%.3f,\"mean\":%.3f},"
		       "\"oneway_p50_us\":%.3f,\"exchanges\":%u,\"tsc_hz\":%" PRIu64 ",\"lcore\":%u}\n",
		       port_names[o.port], e->driver, size, size + RTE_ETHER_HDR_LEN, n, lost, l->min, l->p50,
		       l->p90, l->p99, l->p999, l->max, l->mean, l->p50 / 2 / o.exchanges, o.exchanges,
		       rte_get_tsc_hz(),
		       rte_lcore_id());
	}
	fflush(stdout);
}

/* Returns 0, or 1 when a size had to be abandoned. */
static int
client(struct end *e)
{
	const uint64_t timeout = (uint64_t)o.timeout_ms * rte_get_tsc_hz() / 1000;
	uint64_t seq = 1, t0, t1, *cyc;
	struct rte_mbuf *m, *echo, *out[RPP_MAX_EXCHANGES];
	uint32_t i, j, k, size, lost, n;
	bool refused;
	struct lat l;
	int rc = 0;

	cyc = malloc(sizeof(*cyc) * o.iters);
	if (cyc == NULL)
		die("out of memory");
	print_header();
	for (i = 0; i < o.nsizes && !quit && !quit_tx; i++) {
		size = o.size[i];
		if (size > e->max_payload) {
			print_skip(size, e);
			continue;
		}
		lost = 0;
		n = 0;
		for (j = 0; j < o.warmup + o.iters && !quit; j++) {
			/* built before the clock starts, as the one frame of a
			 * single exchange always was */
			for (k = 0; k < o.exchanges; k++)
				out[k] = build(e, size, RPP_DATA, seq + k);
			echo = NULL;
			refused = false;
			t0 = rte_rdtsc();
			for (k = 0; k < o.exchanges; k++) {
				refused = !end_tx_all(e, &out[k], 1); /* frees it if refused */
				if (refused)
					break;
				echo = await(e, seq + k, RTE_ETHER_HDR_LEN + size, t0, timeout);
				if (echo == NULL || k + 1 == o.exchanges)
					break;
				rte_pktmbuf_free(echo);
			}
			t1 = rte_rdtsc();
			seq += o.exchanges;
			if (k + 1 < o.exchanges)
				rte_pktmbuf_free_bulk(&out[k + 1], o.exchanges - k - 1);
			if (refused) {
				if (!quit)
					fprintf(stderr, "%s: size %u: the port refuses to send "
						"(link down?)\n", prog, size);
				rc = 1;
				break;
			}
			if (echo == NULL) {
				if (quit)
					break;
				if (++lost >= o.max_lost) {
					fprintf(stderr, "%s: size %u: %u frames lost, giving up\n",
						prog, size, lost);
					rc = 1;
					break;
				}
				continue;
			}
			rte_pktmbuf_free(echo);
			if (j >= o.warmup)
				cyc[n++] = t1 - t0;
		}
		if (n == 0) {
			rc = 1;
			continue;
		}
		lat_stats(cyc, n, &l);
		print_row(e, size, n, lost, &l);
	}
	free(cyc);
	/*
	 * Tell the server to go.  Its echo is the acknowledgement, but a
	 * memif server may close before we read it: then the link is down
	 * and the next try cannot be sent, which ends the loop.
	 */
	for (i = 0; i < 3 && !quit_tx; i++) {
		if (e->kind != PORT_RING && !link_up(e->pid))
			break; /* the server is gone */
		m = build(e, RPP_MIN_PAYLOAD, RPP_STOP, 0);
		t0 = rte_rdtsc();
		if (!end_tx_all(e, &m, 1))
			break;
		echo = await(e, 0, RTE_ETHER_HDR_LEN + RPP_MIN_PAYLOAD, t0,
			     rte_get_tsc_hz() / 10);
		if (echo != NULL) {
			rte_pktmbuf_free(echo);
			break;
		}
	}
	return quit ? 1 : rc;
}

/* ------------------------------------------------------------ ring mode */

static int
ring_server_main(void *arg)
{
	uint64_t n = serve(arg, false);

	note("ring server on lcore %u echoed %" PRIu64 " frames", rte_lcore_id(), n);
	return 0;
}

static int
run_ring(void)
{
	static struct end cli, srv;
	struct rte_ring *c2s, *s2c;
	unsigned worker;
	int rc;

	worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	if (worker >= RTE_MAX_LCORE)
		die("--port ring needs two lcores (e.g. EAL --lcores=0@0,1@1)");
	c2s = rte_ring_create("rpp_c2s", RPP_RING_SIZE, (int)rte_socket_id(),
			      RING_F_SP_ENQ | RING_F_SC_DEQ);
	s2c = rte_ring_create("rpp_s2c", RPP_RING_SIZE, (int)rte_socket_id(),
			      RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (c2s == NULL || s2c == NULL)
		die("rte_ring_create: %s", rte_strerror(rte_errno));
	cli.kind = srv.kind = PORT_RING;
	cli.tx = srv.rx = c2s;
	cli.rx = srv.tx = s2c;
	cli.max_payload = srv.max_payload = RPP_MAX_PAYLOAD;
	cli.why_max = srv.why_max = "mbuf size";
	cli.driver = srv.driver = "rte_ring";
	cli.mac = (struct rte_ether_addr){{ 0x02, 0, 0, 0, 0x0c, 0x02 }};
	cli.peer = srv.mac = (struct rte_ether_addr){{ 0x02, 0, 0, 0, 0x0c, 0x01 }};
	srv.peer = cli.mac;
	note("ring: client on lcore %u (cpu %d), server on lcore %u (cpu %d)", rte_lcore_id(),
	     rte_lcore_to_cpu_id((int)rte_lcore_id()), worker, rte_lcore_to_cpu_id((int)worker));
	rc = rte_eal_remote_launch(ring_server_main, &srv, worker);
	if (rc != 0)
		die("rte_eal_remote_launch: %s", rte_strerror(-rc));
	rc = client(&cli);
	quit = 1; /* in case the STOP frame did not get through */
	rte_eal_wait_lcore(worker);
	rte_ring_free(c2s);
	rte_ring_free(s2c);
	return rc;
}

/*
 * EAL leaves its runtime directory behind, holding (with --in-memory) only
 * the telemetry sockets, which it unlinks at exit: remove them all now.
 */
static void
remove_rundir(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "dpdk_telemetry", 14) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir); /* fails, harmlessly, if anything else is left */
}

int
main(int argc, char **argv)
{
	char rundir[PATH_MAX];
	struct end e;
	int n, rc;

	memset(&e, 0, sizeof(e));
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
		usage(0);
	n = rte_eal_init(argc, argv);
	if (n < 0)
		die("EAL init failed: %s", rte_strerror(rte_errno));
	argc -= n;
	argv += n;
	parse_opts(argc, argv);

	pool = rte_pktmbuf_pool_create("rpp_pool", RPP_NB_MBUFS, 256, 0, RPP_MBUF_ROOM,
				       (int)rte_socket_id());
	if (pool == NULL)
		die("mbuf pool: %s", rte_strerror(rte_errno));

	if (o.port == PORT_RING) {
		rc = run_ring();
	} else {
		ethdev_open(&e);
		if (o.role == ROLE_SERVER) {
			uint64_t echoed = serve(&e, true);

			note("server echoed %" PRIu64 " frames", echoed);
			rc = 0;
		} else {
			rc = client(&e);
		}
		ethdev_close(&e);
	}
	rte_mempool_free(pool);
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	remove_rundir(rundir);
	return rc;
}
