/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_common: code shared by the VIPL test programs (vipl_pingpong,
 * vipl_bw), in the manner of fabtests' shared code: option parsing, NIC /
 * memory / VI set-up and teardown, connection establishment, descriptor
 * posting and completion (poll or block, work queue or CQ), payload
 * patterns, the client -> server schedule message (hello) and its reply,
 * credit-based flow control and latency statistics.
 *
 * Everything uses the standard VIPL API (vipl.h); the only provider
 * extensions used are VipDpdkAllocMem/VipDpdkFreeMem (--mem provider),
 * VipDpdkCreateVi (--inline) and VipDpdkReturnString for messages.  Any VIPL call that fails prints the
 * call and its return code and exits with status 1 (usage errors: 2).
 */
#ifndef VIPL_COMMON_H
#define VIPL_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vipl.h>
#include <vipl_dpdk.h>

#define VC_MAX_SIZES 64   /* sizes per run */
#define VC_MAGIC 0x56495042u /* "VIPB": control messages */
#define VC_CTL_BYTES 1024    /* room for any control message */
#define VC_CTL_RECVS 8       /* receives a sender keeps posted for credit / control
			      * messages: at most 4 credit messages + 1 report */
#define VC_CTL_SENDS 8       /* send descriptors of a receiver returning credits */
/* Column header matching vc_lat_row. */
#define VC_LAT_COLUMNS \
	"    size     iters       min       p50       p90       p99     p99.9       max      mean  (us)"

enum vc_role { VC_CLIENT, VC_SERVER, VC_LOOPBACK };
enum vc_test { VC_TEST_PINGPONG = 1, VC_TEST_BW = 2 };
/* --op: the data transfer operation measured */
enum vc_op { VC_OP_SEND, VC_OP_WRITE, VC_OP_WRITE_IMM, VC_OP_READ };
#define VC_OP_RDMA(op) ((op) != VC_OP_SEND)

/* What the client runs, per size; the server receives it in the hello. */
struct vc_sched {
	uint32_t nsizes;
	uint32_t check;                 /* payload pattern filled and verified */
	uint32_t credits;               /* credit-based flow control wanted */
	uint32_t op;                    /* enum vc_op */
	uint32_t window;                /* client's outstanding operations (vipl_bw) */
	uint32_t size[VC_MAX_SIZES];
	uint32_t iters[VC_MAX_SIZES];   /* measured iterations / messages */
	uint32_t warmup[VC_MAX_SIZES];  /* unmeasured ones before them */
};

/* Constants of one program. */
struct vc_app {
	const char *name;          /* "vipl_pingpong" */
	const char *test;          /* "pingpong": JSON "test" */
	enum vc_test id;
	const char *disc;          /* default discriminator */
	const char *about;         /* program-specific part of the usage text */
	const uint32_t *sizes;     /* default sizes (capped at MaxTransferSize) */
	unsigned nsizes;
	uint32_t iters, warmup;    /* default iterations and warm-up per size */
	double scale_bytes;        /* default iterations: min(iters, scale/size), >= 100 */
	bool window;               /* streams: accepts --window and --credits */
};

/* --mem: the kinds of memory a VIPL program registers (docs/design.md
 * section 7 says how viad reaches each) */
enum vc_mem {
	VC_MEM_PROVIDER,           /* VipDpdkAllocMem */
	VC_MEM_HEAP,               /* posix_memalign: in place */
	VC_MEM_SHARED,             /* MAP_SHARED | MAP_ANONYMOUS: copied */
	VC_MEM_KINDS
};

struct vc_opts {
	const struct vc_app *app;
	enum vc_role role;
	const char *nic, *peer, *disc;
	VIP_RELIABILITY_LEVEL rel;
	bool block, json, cq;
	enum vc_mem mem;           /* --mem: where buffers and descriptors live */
	enum vc_op op;
	bool credits;              /* flow control: --credits, or a reliable level */
	VIP_ULONG timeout_ms;      /* connect, and any expected message */
	uint32_t window;
	uint32_t idle_vis;         /* --idle-vis: idle VIs created beside the measured ones */
	bool one_thread;           /* vipl_bw --loopback --one-thread: one thread drives both VIs */
	int32_t inline_size;       /* --inline: VIs with line entries and this much data in
				    * them (VipDpdkCreateVi); -1: 16-byte entries */
	bool reg_each;             /* vipl_pingpong --reg-each: each ping's buffer registered for it */
	uint32_t iters, warmup;
	bool iters_set, warmup_set, sizes_set;
	struct vc_sched sched;     /* client / loopback: filled by vc_nic_open */
};

struct vc_nic {
	const struct vc_opts *o;
	VIP_NIC_HANDLE h;
	VIP_NIC_ATTRIBUTES attr;
	VIP_PROTECTION_HANDLE ptag;
	uint8_t mac[6];
	atomic_ulong rq_drops;     /* VIP_ERROR_RECVQ_EMPTY reports */
	VIP_VI_HANDLE *idle;       /* --idle-vis */
	uint32_t nb_idle;
};

/* One VI with its descriptors and buffers (one registered region each). */
struct vc_ep {
	struct vc_nic *nic;
	const struct vc_opts *o;
	const char *role;          /* for messages */
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;          /* receive queue's CQ (--cq) or NULL */
	void *mem;
	size_t desc_len, buf_len;
	VIP_DESCRIPTOR *sd, *rd;   /* nsend send, nrecv receive descriptors */
	uint8_t *sbuf, *rbuf;      /* nsend slots of sslot, nrecv of rslot bytes */
	VIP_MEM_HANDLE desc_mh, buf_mh;
	uint32_t nsend, nrecv, sslot, rslot;
	uint64_t sposted, sdone;   /* send queue is FIFO: descriptor = count % nsend */
	VIP_VI_ATTRIBUTES remote;  /* the peer VI's attributes, once connected */
	/* RDMA target region (vc_target_open): tslots slots of tstride bytes,
	 * registered with RDMA Write (and Read, where supported) enabled */
	void *tmem;
	size_t tmem_len;
	uint8_t *tbuf;
	VIP_MEM_HANDLE t_mh;
	uint32_t tslots, tstride;
	struct vc_remote {         /* the peer's target region, from the hello */
		uint64_t addr;
		VIP_MEM_HANDLE handle;
		uint32_t slots, stride;
	} peer;
	struct vc_credit {         /* flow control, once vc_credit_start'ed */
		uint32_t limit;    /* R: receives the receiver keeps posted; 0: off */
		uint32_t batch;    /* receiver: credits returned per credit message */
		uint32_t sent;     /* sender: messages sent (mod 2^32) */
		uint32_t acked;    /* sender: highest re-post count returned */
		uint32_t reposted; /* receiver: receives re-posted (mod 2^32) */
		uint32_t returned; /* receiver: count of its last credit message */
		uint64_t waits;    /* sender: times it waited for a credit */
		uint64_t writeoffs; /* sender, Unreliable: credits given up as lost */
	} cr;
};

/* ---- errors ---- */
_Noreturn void vc_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vc_ok(const char *call, VIP_RETURN rc);
#define VC_OK(fn, ...) vc_ok(#fn, fn(__VA_ARGS__))

/* ---- options ---- */
void vc_parse(struct vc_opts *o, const struct vc_app *app, int argc, char **argv);
const char *vc_rel_name(VIP_RELIABILITY_LEVEL rel);
const char *vc_op_name(enum vc_op op);

/* ---- NIC and endpoints ---- */
void vc_nic_open(struct vc_nic *n, struct vc_opts *o);
void vc_nic_close(struct vc_nic *n);
void vc_resolve(struct vc_nic *n, const char *peer, uint8_t mac[6]);
void vc_ep_open(struct vc_ep *e, struct vc_nic *n, const char *role, uint32_t nsend,
		uint32_t sslot, uint32_t nrecv, uint32_t rslot);
void vc_ep_close(struct vc_ep *e);
uint32_t vc_recv_depth(const struct vc_nic *n, uint32_t want, uint32_t slot);
uint32_t vc_max_size(const struct vc_sched *s);
void vc_target_open(struct vc_ep *e, uint32_t slots, uint32_t size);
uint8_t *vc_tslot(const struct vc_ep *e, uint64_t i);
void vc_peer_of(struct vc_ep *e, const struct vc_ep *target);
void vc_peer_check(const struct vc_ep *e, uint32_t size);

/* ---- connection ---- */
void vc_accept(struct vc_ep *e);
void vc_connect(struct vc_ep *e, const uint8_t mac[6]);
void vc_connect_pair(struct vc_ep *server, struct vc_ep *client);

/* ---- data transfer ---- */
uint8_t *vc_sbuf(const struct vc_ep *e);
void vc_post_send(struct vc_ep *e, const void *buf, uint32_t len);
bool vc_send_reap(struct vc_ep *e, bool wait);
void vc_post_rdma(struct vc_ep *e, uint16_t control, const void *buf, uint32_t len,
		  uint64_t slot, uint32_t imm);
void vc_post_op(struct vc_ep *e, const void *buf, uint32_t len, uint64_t slot, uint32_t imm);
void vc_post_recv(struct vc_ep *e, VIP_DESCRIPTOR *d);
VIP_DESCRIPTOR *vc_recv(struct vc_ep *e, VIP_ULONG timeout_ms);
VIP_DESCRIPTOR *vc_recv_wait(struct vc_ep *e, VIP_ULONG timeout_ms, bool block);
uint8_t *vc_data(const VIP_DESCRIPTOR *d);
void vc_expect_len(const struct vc_ep *e, const VIP_DESCRIPTOR *d, uint32_t len);
void vc_expect_imm(const struct vc_ep *e, const VIP_DESCRIPTOR *d, uint32_t imm);
bool vc_wait_byte(const uint8_t *p, uint8_t v, VIP_ULONG timeout_ms);

/* ---- control messages (arrays of little-endian uint32) ---- */
void vc_post_ctl(struct vc_ep *e, const uint32_t *msg, uint32_t words);
void vc_send_ctl(struct vc_ep *e, const uint32_t *msg, uint32_t words);
void vc_recv_ctl(struct vc_ep *e, uint32_t *msg, uint32_t words, VIP_ULONG timeout_ms,
		 const char *what);
#define VC_READY_TAG 0x52454459u /* "REDY": target ready for a phase */
#define VC_DONE_TAG 0x444f4e45u  /* "DONE": a phase of one-sided operations ended */
void vc_send_tag(struct vc_ep *e, uint32_t tag, uint32_t n);
void vc_recv_tag(struct vc_ep *e, uint32_t tag, uint32_t n, VIP_ULONG timeout_ms, bool idle,
		 const char *what);
void vc_send_hello(struct vc_ep *e, const struct vc_sched *s);
void vc_recv_hello(struct vc_ep *e, struct vc_sched *s);
void vc_send_hello_reply(struct vc_ep *e, uint32_t credits);
uint32_t vc_recv_hello_reply(struct vc_ep *e);

/*
 * ---- credit-based flow control (VIA §2.5.2: on a reliable level a Send
 * that finds the receive queue empty breaks the connection) ----
 * The receiver pre-posts R receives and announces R (hello reply); the
 * sender sends only while fewer than R of its messages wait for the
 * receiver to re-post their receive.  The receiver counts its re-posts and
 * every batch = ceil(R/4) of them sends the count back in a credit message
 * (VC_MAGIC, VC_CREDIT_TAG, count) on the same VI; the count is cumulative,
 * so a lost or reordered credit message (Unreliable) costs nothing.  Credit
 * messages are consumed by vc_credit_take and vc_recv_ctl.
 */
#define VC_CREDIT_TAG 0x43524454u /* "CRDT" */
#define VC_CREDIT_STALL_MS 100    /* Unreliable: credits deemed lost after this */
void vc_credit_start(struct vc_ep *e, uint32_t limit);
void vc_credit_take(struct vc_ep *e);
void vc_credit_return(struct vc_ep *e);
void vc_credit_sync(struct vc_ep *e, uint32_t count);

/* ---- payload pattern: seq in the first 8 bytes, then words of (seq, size) ---- */
void vc_fill(void *buf, uint32_t len, uint64_t seq);
void vc_verify(const struct vc_ep *e, const void *buf, uint32_t len, uint64_t seq);
bool vc_matches(const void *buf, uint32_t len, uint64_t seq);
void vc_verify_wait(const struct vc_ep *e, const void *buf, uint32_t len, uint64_t seq,
		    VIP_ULONG timeout_ms);
/* --op write: the pattern over len-1 bytes, the last byte vc_tag(seq) (never 0) */
static inline uint8_t vc_tag(uint64_t seq) { return (uint8_t)(seq % 255 + 1); }
void vc_fill_tagged(void *buf, uint32_t len, uint64_t seq, bool pattern);
uint64_t vc_seq_of(const void *buf, uint32_t len);

/* ---- time and statistics ---- */
uint64_t vc_now_ns(void);
struct vc_lat {
	double min, p50, p90, p99, p999, max, mean; /* microseconds */
};
void vc_lat_stats(uint64_t *ns, size_t n, struct vc_lat *l);
void vc_banner(const struct vc_ep *e, const char *columns);
void vc_lat_row(const struct vc_opts *o, uint32_t size, uint32_t iters, const struct vc_lat *l);
void vc_json_common(const struct vc_opts *o);
/**
 * Where a long run stands, on stderr, as size @p size of the schedule is
 * done: "PROG: size 4096 done (3 of 6) after 12.4 s: SUMMARY". Only when
 * stdout is no terminal (--json, or the table going to a file or bench.sh's
 * log): on a terminal the table's row for each size says it already.
 */
void vc_progress(const struct vc_opts *o, uint32_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* VIPL_COMMON_H */
