/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_check, one program in four files: topo_check.c (what it checks,
 * options, modes), topo_ep.c (an endpoint: NIC, VI, memory, descriptors,
 * one message out and in, checked), topo_sendrecv.c (the send/receive
 * check), topo_rdma.c (the RDMA Write and Read check). Each includes this
 * first.
 */
#ifndef TOPO_CHECK_H
#define TOPO_CHECK_H

#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <vipl.h>
#include <vipl_dpdk.h>

#include "test_rand.h"

#define MAX_SEGS        8
#define RDMA_SEGS       16         /* --rdma: local segments of an RDMA descriptor */
#define RDMA_DESC_STRIDE 512       /* CS + address segment + 16 DS = 304 */
#define PAGE            4096u
#define RDMA_WAIT_MS    5000       /* an RDMA completion or a check's answer */
#define RINFO_MAGIC     0x4e4f49474552504fULL   /* "OPREGION": the server's answer */
#define RCHECK_LEN      16
#define RDMA_SALT       0x52444d4157524954ULL   /* content of RDMA round r */
#define TINIT_SALT      0x54494e4954524547ULL   /* initial content of the region */
#define HELLO_F_RDMA    1u         /* hello flags: the client runs --rdma */
#define NB_RECV         8          /* receive descriptors kept posted */
#define NB_SEND         8          /* send descriptors: the largest window */
#define GAP_MAX         4095       /* bytes skipped before each segment */
#define DESC_STRIDE     256        /* room per descriptor: CS + 8 DS = 160 */
#define HELLO_LEN       32
#define HELLO_MAGIC     0x4f4c4c45484f504fULL   /* "OPOHELLO" */
#define MIN_TRANSFER    (32u * 1024u)
#define WIRE_HDR_LEN    48u        /* VIA header after Ethernet (daemon/wire.h) */

#define IMM_TYPE_SHIFT  30
#define IMM_SEQ_MASK    0x3fffffffu
#define T_DATA          0u
#define T_HELLO         1u
#define T_RCHECK        2u         /* --rdma: check request and its answer */
#define T_BYE           3u
#define MK_IMM(t, s)    (((uint32_t)(t) << IMM_TYPE_SHIFT) | ((s) & IMM_SEQ_MASK))

enum mode { M_NONE, M_SERVER, M_CLIENT, M_LOOPBACK };

/* the command line (topo_check.c) */
struct topo_opt {
	enum mode mode;
	const char *nic;
	const char *disc;
	uint8_t peer_mac[6];
	uint64_t seed;
	bool seed_set;
	unsigned rounds;
	unsigned retry_ms;
	unsigned max_retries;
	unsigned connect_ms;
	unsigned wait_ms;          /* server: VipConnectWait timeout */
	unsigned idle_ms;          /* server: give up after this long without a message */
	unsigned link_ms;
	unsigned window;           /* client: messages in flight per round */
	uint32_t max_size;         /* 0: MaxTransferSize */
	bool heap;
	bool strict_tail;          /* a dirty tail (see canary_check) is a mismatch */
	bool rdma;                 /* RDMA Write/Read check instead of send/receive */
	unsigned verify_every;     /* --rdma: the server checks its region every K rounds */
	int zero_copy;             /* viad sends zero-copy frames: 1 must, 0 must not, -1 either */
	int verbose;
};
extern struct topo_opt opt;

/* ---- topo_ep.c -------------------------------------------------------------- */

/* a --zero-copy expectation failed (print_counters) */
extern bool zero_copy_wrong;
/* the test is over: CONN_LOST is expected */
extern volatile int async_quiet;

struct rng {
	uint64_t s;
};

struct seg {
	uint8_t *ptr;
	uint32_t len;
};

struct dslot {
	VIP_DESCRIPTOR *d;
	size_t dsize;              /* bytes of registered memory at d */
	uint8_t *buf;              /* this descriptor's buffer area */
	size_t len;                /* of buf */
	struct seg segs[RDMA_SEGS];
	unsigned nb_segs;
	uint8_t canary;
};

struct ep {
	const char *who;
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_PROTECTION_HANDLE ptag;
	VIP_VI_HANDLE vi;
	VIP_MEM_HANDLE mh;
	uint8_t *mem;
	size_t mem_len;
	bool mem_pmem;
	uint64_t zc_frames_at_open; /* viad's FramesTxZeroCopy when the NIC was opened */
	bool sends_data;           /* sends, or RDMA Writes: --zero-copy yes applies */
	uint32_t max_transfer;     /* of the VI */
	uint32_t chunk;            /* payload bytes per frame */
	size_t buf_len;
	struct dslot recv[NB_RECV];
	struct dslot send[NB_SEND];
	unsigned nb_send;          /* send slots in use: 1, or the window */
	unsigned send_head, send_tail;  /* posted sends, FIFO over the slots */
	unsigned recv_head;        /* next receive slot to complete (FIFO) */
	uint8_t *scratch;          /* contiguous copy of a message */
	uint8_t *expect;           /* expected content */
	/* --rdma */
	struct dslot rw, rr;       /* client: RDMA Write gather, RDMA Read scatter */
	uint8_t *tmem;             /* server: the target region */
	size_t tlen;
	VIP_MEM_HANDLE tmh;
	bool tmem_pmem, tmem_reg;
	uint8_t *shadow;           /* server: what the target region must hold */
	struct rng rng;
	/* counters */
	uint64_t msgs_rx, msgs_tx, bytes_rx, bytes_tx, stale, mismatches, errors, dirty_tails;
	unsigned mismatch_prints;
};

#define CHK(ep, call)                                                                  \
	do {                                                                           \
		VIP_RETURN r_ = (call);                                                \
		if (r_ != VIP_SUCCESS) {                                               \
			say((ep)->who, "FAIL %s: %s", #call, VipDpdkReturnString(r_)); \
			return -1;                                                     \
		}                                                                      \
	} while (0)

struct msg_info {
	uint32_t type, seq, len;
};

/* helpers: a line of output, time, seeded numbers and contents, addresses */
void say(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t now_us(void);
void sleep_ms(unsigned ms);
uint64_t rnd(struct rng *r);
uint32_t rnd_below(struct rng *r, uint32_t n);
void pattern_fill(uint8_t *p, uint32_t len, uint64_t seed, uint32_t seq);
uint32_t msg_size(uint64_t seed, uint32_t seq, uint32_t max, uint32_t chunk);
int parse_mac(const char *s, uint8_t mac[6]);
VIP_NET_ADDRESS *mk_addr(const uint8_t mac[6], const char *disc);

/* the endpoint */
void print_async_errors(const char *who);
VIP_DATA_SEGMENT *desc_ds(VIP_DESCRIPTOR *d);
void print_port(struct ep *e);
void print_counters(struct ep *e);
int wait_link(struct ep *e);
int ep_open(struct ep *e, const char *who, uint64_t rng_seed, bool server);
void ep_close(struct ep *e);

/* descriptors: segments laid out at random, gathered, scattered, checked */
void layout_k(struct ep *e, struct dslot *s, uint32_t total, unsigned k, unsigned first);
void layout(struct ep *e, struct dslot *s, uint32_t total);
void describe_layout(struct ep *e, const struct dslot *s, char *buf, size_t len);
int post_recv(struct ep *e, unsigned idx);
void gather(const struct dslot *s, uint8_t *out, uint32_t len);
void scatter(const struct dslot *s, const uint8_t *in, uint32_t len);
long canary_check(struct ep *e, const struct dslot *s, uint32_t len, long *tail);
int check_recv(struct ep *e, const struct dslot *s, const VIP_DESCRIPTOR *d, uint64_t seed,
	       uint32_t max, uint32_t chunk, bool seed_known, struct msg_info *mi);

/* one message out and in */
int send_post(struct ep *e, const uint8_t *data, uint32_t len, uint32_t imm);
int send_reap(struct ep *e);
int send_msg(struct ep *e, const uint8_t *data, uint32_t len, uint32_t imm);
int recv_msg(struct ep *e, unsigned ms, VIP_DESCRIPTOR **out, unsigned *idx);
int post_all_recv(struct ep *e);

/* ---- topo_sendrecv.c ---------------------------------------------------------- */

struct hello {
	uint64_t magic;
	uint64_t seed;
	uint32_t max;
	uint32_t chunk;
	uint32_t rounds;
	uint32_t flags;            /* HELLO_F_* (was padding: 0) */
};
_Static_assert(sizeof(struct hello) == HELLO_LEN, "hello layout");

int server_accept(struct ep *e);
int server_next(struct ep *e, uint64_t *last_msg_us, VIP_DESCRIPTOR **d, unsigned *idx,
		bool *peer_gone);
int run_server(struct ep *e);
int client_connect(struct ep *e, const uint8_t mac[6], const char *local_disc);
int run_client(struct ep *e, const uint8_t mac[6], const char *local_disc);

/* ---- topo_rdma.c ---------------------------------------------------------------- */

int run_rdma_server(struct ep *e);
int run_rdma_client(struct ep *e, const uint8_t mac[6], const char *local_disc);

#endif /* TOPO_CHECK_H */
