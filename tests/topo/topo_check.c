/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_check: end-to-end data check of one VIA-DPDK topology.
 *
 *   topo_check --server [-D DISC] [options]       wait for one connection, echo
 *   topo_check --client MAC [-D DISC] [options]   connect to MAC/DISC, check echoes
 *   topo_check --loopback [options]               both ends in this process
 *
 * Two checks: send/receive (the default) and, with --rdma on both ends,
 * RDMA Write and RDMA Read.
 *
 * Send/receive: Unreliable Delivery VIs. The client first sends a hello
 * carrying the seed, the largest message size and the frame payload size,
 * then N rounds of W messages (--window, default 1): each of a size
 * (0 .. MaxTransferSize, edge sizes favoured) and content derived from
 * (seed, sequence number), gathered from 1..8 segments of random lengths
 * at random offsets. The server
 * scatters it into 1..8 segments, checks status, length, immediate data,
 * content and that nothing outside the descriptor's segments was written,
 * and echoes the bytes it received; the client checks the echo the same
 * way. The sequence number travels in the immediate data. A message whose
 * echo does not come within the retry interval (200 ms) is resent with a
 * new sequence number; stale messages and echoes are checked and ignored.
 * Exit status 0 only if every message checked matched and every round
 * completed. Buffers: VipDpdkAllocMem provider memory, or malloc'd memory
 * with --heap; both registered with VipRegisterMem.
 *
 * --rdma: Reliable Delivery VIs with EnableRdmaWrite and EnableRdmaRead
 * (VIA §9.10.5; RDMA Read needs a reliable level, §2.5.1). The server also
 * registers a target region (the same kind of memory as its buffers,
 * MaxTransferSize + 4 pages, RDMA Write and Read enabled, §9.10.6) and
 * answers the hello with the region's address, length and memory handle.
 * Round r (of N) writes `size` bytes at `offset` of that region, both
 * derived from (seed, r): sizes 1 .. MaxTransferSize with the edges
 * favoured (1, pages, frame payloads of RDMA Write and Read Response
 * frames, the maximum), offsets crossing a page boundary where the size
 * allows, or at either end of the region or of a page. The client
 * RDMA-Writes content derived from (seed, r) gathered from 1..16 local
 * segments at random offsets (VIA §9.8.2, address segment first, §10.3),
 * then RDMA-Reads the range back into another 1..16-segment scatter list
 * (§9.8.3), half the time posted right behind the write ("RDMA Reads do
 * not pass RDMA Writes", §6.3.1.1), some of those with the queue fence.
 * It checks both completions (Status, Length, FIFO dequeue: §9.8.4,
 * §9.8.5), every byte read, and that no byte outside the scatter segments
 * changed. Every K rounds (--verify-every, and after the last) it sends
 * the server a check request naming the round: the server replays the
 * writes of rounds 0..r on a copy of its region's initial content and
 * compares the whole region (the writes landed there, in place, and
 * nothing else moved), then answers with what it found. Exit status 0 only
 * if every round and every check matched.
 */
#include "topo_check.h"

struct topo_opt opt = {
	.nic = "via0",
	.disc = "topo",
	.rounds = 300,
	.retry_ms = 200,
	.max_retries = 50,
	.connect_ms = 10000,
	.wait_ms = 30000,
	.idle_ms = 10000,
	.link_ms = 10000,
	.window = 1,
	.verify_every = 8,
	.zero_copy = -1,
};

/* ---- modes --------------------------------------------------------------- */

struct server_arg {
	struct ep e;
	int rc;
};

static void *
server_thread(void *p)
{
	struct server_arg *a = p;

	a->rc = opt.rdma ? run_rdma_server(&a->e) : run_server(&a->e);
	return NULL;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: topo_check --server [-D DISC] [options]\n"
		"       topo_check --client MAC [-D DISC] [options]\n"
		"       topo_check --loopback [options]\n"
		"options:\n"
		"  -D, --disc DISC      server discriminator (default \"topo\")\n"
		"  -n, --rounds N       rounds (default 300)\n"
		"  -w, --window W       client: messages in flight per round, 1..8 (default 1)\n"
		"  -s, --seed SEED      seed of sizes and contents (default: random; printed)\n"
		"      --nic NAME       NIC to open (default via0)\n"
		"      --heap           buffers in malloc'd registered memory (default:\n"
		"                       VipDpdkAllocMem provider memory)\n"
		"      --max-size N     largest message (default MaxTransferSize)\n"
		"      --strict-tail    fail if receive buffer bytes beyond the message were\n"
		"                       written (normal after a lost message)\n"
		"      --rdma           RDMA Write and Read check on Reliable Delivery VIs\n"
		"                       (both ends; --window does not apply)\n"
		"      --verify-every K --rdma: the server checks its whole target region\n"
		"                       every K rounds and after the last (default 8)\n"
		"      --zero-copy yes|no  fail unless viad sent zero-copy frames during the\n"
		"                       check (yes; not asked of an --rdma server, which\n"
		"                       only answers Reads), or unless it sent none (no)\n"
		"      --retry-ms MS    resend a round after MS without echo (default 200)\n"
		"      --max-retries N  resends of one round before failing (default 50)\n"
		"      --connect-ms MS  client: keep trying to connect this long (default 10000)\n"
		"      --wait-ms MS     server: VipConnectWait timeout (default 30000)\n"
		"      --idle-ms MS     server: stop after MS without a message (default 10000)\n"
		"      --link-ms MS     wait this long for the port's link (default 10000)\n"
		"  -v, --verbose        more output (twice: every round)\n"
		"VIAD_SOCKET selects the viad. Exit status 0: every round completed and matched.\n");
}

static int
parse_args(int argc, char **argv)
{
	enum { O_NIC = 256, O_HEAP, O_STRICT, O_MAX, O_RETRY, O_MAXRETRY, O_CONNECT, O_WAIT, O_IDLE, O_LINK,
	       O_RDMA, O_VERIFY, O_ZC };
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "client", required_argument, NULL, 'C' },
		{ "loopback", no_argument, NULL, 'L' },
		{ "disc", required_argument, NULL, 'D' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "window", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "nic", required_argument, NULL, O_NIC },
		{ "heap", no_argument, NULL, O_HEAP },
		{ "strict-tail", no_argument, NULL, O_STRICT },
		{ "max-size", required_argument, NULL, O_MAX },
		{ "retry-ms", required_argument, NULL, O_RETRY },
		{ "max-retries", required_argument, NULL, O_MAXRETRY },
		{ "connect-ms", required_argument, NULL, O_CONNECT },
		{ "wait-ms", required_argument, NULL, O_WAIT },
		{ "idle-ms", required_argument, NULL, O_IDLE },
		{ "link-ms", required_argument, NULL, O_LINK },
		{ "rdma", no_argument, NULL, O_RDMA },
		{ "verify-every", required_argument, NULL, O_VERIFY },
		{ "zero-copy", required_argument, NULL, O_ZC },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "D:n:s:w:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			opt.mode = M_SERVER;
			break;
		case 'C':
			opt.mode = M_CLIENT;
			if (parse_mac(optarg, opt.peer_mac) != 0) {
				fprintf(stderr, "topo_check: bad MAC '%s'\n", optarg);
				return -1;
			}
			break;
		case 'L':
			opt.mode = M_LOOPBACK;
			break;
		case 'D':
			opt.disc = optarg;
			break;
		case 'n':
			opt.rounds = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			opt.window = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			opt.seed = strtoull(optarg, NULL, 0);
			opt.seed_set = true;
			break;
		case 'v':
			opt.verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case O_NIC:
			opt.nic = optarg;
			break;
		case O_HEAP:
			opt.heap = true;
			break;
		case O_ZC:
			if (strcmp(optarg, "yes") != 0 && strcmp(optarg, "no") != 0) {
				fprintf(stderr, "topo_check: --zero-copy takes yes or no\n");
				return -1;
			}
			opt.zero_copy = strcmp(optarg, "yes") == 0;
			break;
		case O_STRICT:
			opt.strict_tail = true;
			break;
		case O_MAX:
			opt.max_size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case O_RETRY:
			opt.retry_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_MAXRETRY:
			opt.max_retries = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_CONNECT:
			opt.connect_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_WAIT:
			opt.wait_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_IDLE:
			opt.idle_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_LINK:
			opt.link_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_RDMA:
			opt.rdma = true;
			break;
		case O_VERIFY:
			opt.verify_every = (unsigned)strtoul(optarg, NULL, 0);
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc || opt.mode == M_NONE) {
		usage(stderr);
		return -1;
	}
	if (opt.verify_every < 1) {
		fprintf(stderr, "topo_check: --verify-every must be at least 1\n");
		return -1;
	}
	if (opt.window < 1 || opt.window > NB_SEND) {
		fprintf(stderr, "topo_check: --window must be 1..%u\n", NB_SEND);
		return -1;
	}
	if (strlen(opt.disc) == 0 || strlen(opt.disc) > 64 || opt.retry_ms == 0 ||
	    (opt.max_size != 0 && opt.max_size < 2)) {
		fprintf(stderr, "topo_check: bad -D, --retry-ms or --max-size\n");
		return -1;
	}
	if (!opt.seed_set) {
		if (getrandom(&opt.seed, sizeof(opt.seed), 0) != sizeof(opt.seed))
			opt.seed = now_us();
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *mode_name;
	struct ep e;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_args(argc, argv) != 0)
		return 2;
	mode_name = opt.mode == M_SERVER ? "server" : opt.mode == M_CLIENT ? "client" : "loopback";
	printf("topo_check %s%s: nic %s, disc \"%s\", %u rounds, %s memory, seed %#" PRIx64
	       "%s, VIAD_SOCKET=%s\n", mode_name, opt.rdma ? " (RDMA)" : "", opt.nic, opt.disc,
	       opt.rounds,
	       opt.heap ? "heap (malloc)" : "provider (VipDpdkAllocMem)", opt.seed,
	       opt.mode == M_SERVER && !opt.seed_set ? " (the client's is used)" : "",
	       getenv("VIAD_SOCKET") ? getenv("VIAD_SOCKET") : "(default)");
	if (opt.mode == M_SERVER) {
		rc = ep_open(&e, "server", opt.seed ^ 0x5e5e5e5eULL, true);
		if (rc == 0)
			rc = wait_link(&e);
		if (rc == 0) {
			print_port(&e);
			rc = opt.rdma ? run_rdma_server(&e) : run_server(&e);
		}
		ep_close(&e);
	} else if (opt.mode == M_CLIENT) {
		char disc[64];

		snprintf(disc, sizeof(disc), "%s-client-%ld", opt.disc, (long)getpid());
		rc = ep_open(&e, "client", opt.seed ^ 0xc1c1c1c1ULL, false);
		if (rc == 0)
			rc = wait_link(&e);
		if (rc == 0) {
			print_port(&e);
			rc = opt.rdma ? run_rdma_client(&e, opt.peer_mac, disc)
				      : run_client(&e, opt.peer_mac, disc);
		}
		ep_close(&e);
	} else {
		static struct server_arg sa;
		pthread_t t;
		char disc[64];

		/* the server gives up soon after the client could have connected */
		if (opt.wait_ms > opt.connect_ms + 5000)
			opt.wait_ms = opt.connect_ms + 5000;
		snprintf(disc, sizeof(disc), "%s-client-%ld", opt.disc, (long)getpid());
		memset(&e, 0, sizeof(e));
		rc = ep_open(&sa.e, "server", opt.seed ^ 0x5e5e5e5eULL, true);
		if (rc == 0)
			rc = ep_open(&e, "client", opt.seed ^ 0xc1c1c1c1ULL, false);
		if (rc == 0)
			rc = wait_link(&e);
		if (rc == 0) {
			print_port(&e);
			if (pthread_create(&t, NULL, server_thread, &sa) != 0) {
				perror("pthread_create");
				return 1;
			}
			rc = opt.rdma ? run_rdma_client(&e, e.na.LocalNicAddress, disc)
				      : run_client(&e, e.na.LocalNicAddress, disc);
			/* the server stops on our disconnect (ep_close) at the latest */
			ep_close(&e);
			pthread_join(t, NULL);
			if (sa.rc != 0)
				rc = -1;
		} else {
			ep_close(&e);
		}
		ep_close(&sa.e);
	}
	if (zero_copy_wrong)
		rc = -1;
	printf("topo_check %s: %s\n", mode_name, rc == 0 ? "PASS" : "FAIL");
	return rc == 0 ? 0 : 1;
}
