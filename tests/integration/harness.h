/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test harness: private viad instances, TAP-like checks, and the
 * VIPL chores the tests share (a registered region with a bump allocator,
 * an asynchronous error recorder, addresses, connecting, VI states,
 * disconnecting and draining).
 *
 * Every test executable gets the viad binary as argv[1] (meson passes
 * `args: [viad]`). Each viad started here listens on a socket in the test's
 * own temporary directory, under a unique DPDK instance name, with its log
 * (stdout and stderr) in that directory. The log tail of every viad is
 * printed when a check failed. With VIA_TEST_POLL_LCORES=N in the
 * environment every viad runs N poll lcores (viad.poll_lcores).
 *
 * Checks print one line each: "ok - what" or "not ok - what (file:line)".
 * The exit status of a test is 0 iff no check failed.
 */
#ifndef VIA_IT_HARNESS_H
#define VIA_IT_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <vipl_dpdk.h>

/* VIA_TEST_INLINE (meson's *_inline tests): the test's VipPostSend,
 * VipPostRecv, VipSendDone, VipRecvDone and VipCQDone are the inline ones
 * of vipl_dpdk_inline.h, not the library's calls (issue 13 part 3) */
#ifdef VIA_TEST_INLINE
#include <vipl_dpdk_inline.h>
#endif

/**
 * VipCreateVi of the tests. With VIA_TEST_LINES=N in the environment
 * (meson's *_lines tests) every VI a test creates has line entries with N
 * bytes of inline data (VipDpdkCreateVi, issue 30): the same tests over the
 * other descriptor path; with VIA_TEST_LINES=N:alternate every other VI
 * (the *_mixed tests: a pair joins a VI of each kind); else VipCreateVi
 * itself.
 */
VIP_RETURN h_create_vi(VIP_NIC_HANDLE nic, VIP_VI_ATTRIBUTES *attr, VIP_CQ_HANDLE send_cq,
		       VIP_CQ_HANDLE recv_cq, VIP_VI_HANDLE *vi);
#ifndef VIA_IT_HARNESS_C
#define VipCreateVi h_create_vi
#endif

/** Generous bound for anything viad must do (start, stop, reclaim). */
#define H_TIMEOUT_MS 20000

struct viad_proc {
	pid_t pid;           /**< 0 when not running */
	char name[32];       /**< label in the test output */
	char sock[256];
	char log[256];
	char instance[64];
	int status;          /**< wait status once it exited */
};

/** Parse argv (argv[1] = viad), make the temporary directory, set stdout
 *  unbuffered, arm a watchdog of @p watchdog_s seconds (0: none). */
void h_init(int argc, char **argv, unsigned watchdog_s);
/** The test's temporary directory. */
const char *h_tmpdir(void);
/** Print the summary, clean up (viads killed, tmpdir removed on success).
 *  @return the exit status for main(). */
int h_finish(void);
/** Prefix of check lines (e.g. "child"), for forked processes. Marks the
 *  process as a child: it must leave with _exit(), never h_finish(). */
void h_set_child(const char *prefix);
/** Failed checks so far in this process. */
unsigned h_failures(void);
/** Seed for randomized tests: VIA_TEST_SEED or a fixed default; printed. */
uint64_t h_seed(void);
/** xorshift64* step. */
uint64_t h_rand(uint64_t *state);
/** Monotonic nanoseconds. */
uint64_t h_now_ns(void);
/** Monotonic milliseconds. */
uint64_t h_now_ms(void);
/** Sleep @p ms milliseconds. */
void h_sleep_ms(unsigned ms);

int h_check(bool ok, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int h_check_ret(VIP_RETURN got, VIP_RETURN want, const char *expr, const char *file, int line,
		const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/** Print a comment line "# ...". */
void h_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** CHECK(condition, "what %d", ...) */
#define CHECK(cond, ...) h_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/** CHECK_RET(VipCall(...), VIP_SUCCESS, "what") */
#define CHECK_RET(expr, want, ...) \
	h_check_ret((expr), (want), #expr, __FILE__, __LINE__, __VA_ARGS__)

/**
 * Start viad with `-s SOCK --set viad.instance=UNIQUE --set
 * viad.poll_mode=backoff` plus `--set S` for each S of the NULL-terminated
 * @p sets (may be NULL), and wait (H_TIMEOUT_MS) until its socket accepts.
 * Sets VIAD_SOCKET to its socket.
 * @return 0, or -1 (viad exited or did not become ready; a check failed)
 */
int viad_start(struct viad_proc *v, const char *name, const char *const *sets);
/** RLIMIT_NOFILE (soft and hard, as `ulimit -n N`) of the viads started
 *  from now on; 0: inherited. */
void h_viad_set_nofile(unsigned n);
/** The one CPU the viads started from now on run on, all their lcores
 *  (viad places them on the CPUs it may use); -1: inherited. */
void h_viad_set_cpu(int cpu);
/** Like viad_start with an explicit socket path and no readiness wait. */
int viad_spawn(struct viad_proc *v, const char *name, const char *sock,
	       const char *const *sets);
/** Wait until the socket accepts (or viad exits). @return 0 or -1 */
int viad_wait_ready(struct viad_proc *v, unsigned timeout_ms);

/** The MACs of the two ends of viad_start_memif's link. */
#define H_MEMIF_MAC_SERVER "02:00:00:00:0a:01"
#define H_MEMIF_MAC_CLIENT "02:00:00:00:0b:01"
/**
 * Start viad @p name (socket TMPDIR/NAME.sock) with one port via0: the
 * @p server or client end of a net_memif link on TMPDIR/memif.sock
 * (tests/topo/memif.sh), up to three tries (EAL may lose a race for memory
 * on a shared machine). A failure is a failed check. @return whether it runs
 */
bool viad_start_memif(struct viad_proc *v, const char *name, bool server);
/** viad_start_memif() with more "section.key=value" settings (@p sets,
 *  NULL-terminated, at most 8). */
bool viad_start_memif_with(struct viad_proc *v, const char *name, bool server,
			   const char *const *sets);
/** Wait for exit. @return 0 and v->status set, or -1 on timeout */
int viad_wait_exit(struct viad_proc *v, unsigned timeout_ms);
/** SIGTERM, wait H_TIMEOUT_MS (SIGKILL on timeout), check exit status 0.
 *  @return 0 if it exited 0 in time */
int viad_stop(struct viad_proc *v);
/** SIGKILL and reap. */
void viad_kill(struct viad_proc *v);
/** Point VIAD_SOCKET at @p v. */
void viad_use(const struct viad_proc *v);
/** Whether viad is still running (not exited). */
bool viad_alive(struct viad_proc *v);
/** Print the last @p lines lines of the log. */
void viad_log_tail(const struct viad_proc *v, unsigned lines);
/** Whether the log contains @p needle. */
bool viad_log_contains(const struct viad_proc *v, const char *needle);
/** Open file descriptors of viad (/proc/PID/fd), -1 if unknown. */
int viad_fd_count(const struct viad_proc *v);
/** CPU seconds (user + system) used by viad's main (control) thread. */
double viad_main_thread_cpu(const struct viad_proc *v);
/** CPU seconds (user + system) of thread @p tid of process @p pid, -1 if unknown. */
double h_thread_cpu(pid_t pid, pid_t tid);

/** VIP_DPDK_SMI_COUNTERS of @p nic; zeroed on failure. */
VIP_RETURN h_counters(VIP_NIC_HANDLE nic, VIP_DPDK_COUNTERS *c);
/**
 * Wait (H_TIMEOUT_MS at most) until viad counts @p want open sessions,
 * asked through @p nic; *@p c (NULL: not wanted) gets the last counters.
 * @return whether it did; if not, a note says what viad counted
 */
bool h_wait_sessions(VIP_NIC_HANDLE nic, uint64_t want, VIP_DPDK_COUNTERS *c);

/** Default VI attributes: unreliable, 32 KiB, QoS 0, @p ptag. */
void h_vi_attrs(VIP_VI_ATTRIBUTES *a, VIP_PROTECTION_HANDLE ptag);

/** Connect a raw client to @p v's socket. @return fd or -1 */
int h_raw_connect(const struct viad_proc *v);

/* ---- the suite's memory kind ---------------------------------------------------- */

/**
 * Memory for a test's buffers and descriptors: provider memory
 * (VipDpdkAllocMem), or, with VIA_TEST_MEM=heap in the environment,
 * page-aligned heap memory, so that the same data-path tests run over the
 * registered ordinary memory of VIPL programs (issue 12). The caller
 * registers it as usual. @return VIP_SUCCESS, VIP_ERROR_RESOURCE
 */
VIP_RETURN h_alloc(VIP_NIC_HANDLE nic, size_t len, void **p);
/** Free what h_alloc gave. @return as VipDpdkFreeMem */
VIP_RETURN h_free(VIP_NIC_HANDLE nic, void *p);
/** Whether h_alloc gives heap memory (VIA_TEST_MEM=heap). */
bool h_heap_mem(void);

/* ---- registered region with a bump allocator -------------------------------- */

/** A registered region handed out front to back by h_mem_get. */
struct h_mem {
	const char *name;
	uint8_t *base;
	size_t len, used;
	VIP_MEM_HANDLE mh;
	bool provider; /**< allocated with VipDpdkAllocMem, not the heap */
};

/**
 * Open @p m: @p len bytes of provider memory (VipDpdkAllocMem) or, without
 * @p provider, of the heap (page aligned), registered on @p nic with @p ma
 * and named @p name. A failure is a failed check; @p m is then closed.
 * @return whether @p m is open
 */
bool h_mem_open(struct h_mem *m, VIP_NIC_HANDLE nic, const VIP_MEM_ATTRIBUTES *ma,
		const char *name, size_t len, bool provider);
/** Deregister and free @p m (opened on @p nic), checked; nothing if it is not
 *  open. */
void h_mem_close(struct h_mem *m, VIP_NIC_HANDLE nic);
/** Hand out everything of @p m again. */
void h_mem_reset(struct h_mem *m);
/** @p size bytes of @p m aligned to @p align (a power of two); a region too
 * small is a bug of the test: reported as a failed check, then the start. */
void *h_mem_get(struct h_mem *m, size_t size, size_t align);

/**
 * A one-segment descriptor at @p at (zeroed first): a send of @p len bytes
 * at @p buf (@p send), or a receive of capacity @p len.
 */
VIP_DESCRIPTOR *h_desc1(void *at, void *buf, VIP_MEM_HANDLE mh, uint32_t len, bool send);

/** One message's descriptors, from @p m (reset first). */
struct h_msg {
	VIP_DESCRIPTOR *recv, *send;
	uint8_t *rbuf;   /**< zeroed */
	uint8_t *sbuf;   /**< @p len bytes of (i & 0xff) */
};

/** A receive and a send descriptor of @p len bytes each, in @p m. */
void h_msg_prep(struct h_mem *m, uint32_t len, unsigned i, struct h_msg *msg);

/* ---- asynchronous error recorder (VipErrorCallback, VIA 2.8.2.5) ---------- */

/** One VIP_ERROR_DESCRIPTOR delivered to h_err_handler, as recorded. */
struct h_err_event {
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_ERROR_CODE code;
	VIP_RESOURCE_CODE resource;
	VIP_ULONG op;
	VIP_DESCRIPTOR *desc;
	uint64_t at_ms;      /**< h_now_ms() when the handler ran */
	bool on_main_thread; /**< the handler ran on the thread that called h_init */
};

/** A VipErrorCallback handler that records every event (up to 4096). */
void h_err_handler(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e);
/** Take the first recorded event @p code of @p vi (NULL: any VI), waiting up
 * to @p ms. @p out may be NULL. @return whether one was found */
bool h_err_take(VIP_ERROR_CODE code, VIP_VI_HANDLE vi, unsigned ms, struct h_err_event *out);
/** Recorded events @p code of @p vi (NULL: any VI). */
unsigned h_err_count(VIP_ERROR_CODE code, VIP_VI_HANDLE vi);
/** Forget every recorded event. */
void h_err_clear(void);

/* ---- connections ------------------------------------------------------------ */

/** Discriminator room of union h_net_addr: more than any NIC takes (VIA-DPDK:
 *  64), so that a test can also build one that is too long. */
#define H_DISC_ROOM 256

/** A VIP_NET_ADDRESS (use .a) with room for a 6-byte host address (a MAC)
 *  and a discriminator of up to H_DISC_ROOM bytes. */
union h_net_addr {
	VIP_NET_ADDRESS a;
	uint64_t align;
	uint8_t bytes[sizeof(VIP_NET_ADDRESS) + 6 + H_DISC_ROOM];
};

/** Fill @p u with host address @p mac (NULL: none, HostAddressLen 0) and the
 *  bytes of @p disc (without its NUL) as the discriminator. A discriminator
 *  longer than H_DISC_ROOM is a bug of the test: a failed check, then cut.
 *  @return &u->a */
VIP_NET_ADDRESS *h_addr(union h_net_addr *u, const uint8_t *mac, const char *disc);

/** What each side of h_connect_rc got. */
struct h_conn_rc {
	VIP_RETURN request; /**< VipConnectRequest of the client */
	VIP_RETURN accept;  /**< VipConnectWait of the server, then its VipConnectAccept */
	uint64_t ms;        /**< how long the connection took */
};

/**
 * Connect client @p cvi (a VI of @p cnic) to server @p svi (a VI of @p snic):
 * a thread does VipConnectWait on @p snic and VipConnectAccept of @p svi
 * while the caller does VipConnectRequest, both with @p timeout_ms. The
 * addresses are each NIC's own MAC with the discriminators "TAG-c" (client)
 * and "TAG-s" (server). The NICs may be sessions of different viads.
 * Checks nothing, so any thread may call it.
 * @param out each side's return code and the time taken (may be NULL)
 * @return VIP_SUCCESS, the request's error, or else the server side's;
 *         VIP_INVALID_PARAMETER at once for a NULL VI
 */
VIP_RETURN h_connect_rc(VIP_NIC_HANDLE cnic, VIP_VI_HANDLE cvi, VIP_NIC_HANDLE snic,
			VIP_VI_HANDLE svi, const char *tag, unsigned timeout_ms,
			struct h_conn_rc *out);
/** h_connect_rc, checked: "connect 'TAG' (request ..., accept ..., N ms)".
 *  A NULL VI (its creation failed, already reported) gives false and no
 *  check. Like every check, not for several threads at once.
 *  @return whether connected */
bool h_connect(VIP_NIC_HANDLE cnic, VIP_VI_HANDLE cvi, VIP_NIC_HANDLE snic, VIP_VI_HANDLE svi,
	       const char *tag, unsigned timeout_ms);
/**
 * Connect @p x (a VI of @p xnic) and @p y (a VI of @p ynic) peer-to-peer:
 * VipConnectPeerRequest on @p x, then on @p y (@p timeout_ms each), then
 * VipConnectPeerWait on both. Discriminators "TAG-x" and "TAG-y", each NIC's
 * own MAC. Checks nothing, so any thread may call it.
 * @return VIP_SUCCESS or the first error; VIP_INVALID_PARAMETER for a NULL VI
 */
VIP_RETURN h_peer_connect_rc(VIP_NIC_HANDLE xnic, VIP_VI_HANDLE x, VIP_NIC_HANDLE ynic,
			     VIP_VI_HANDLE y, const char *tag, unsigned timeout_ms);
/** h_peer_connect_rc, checked: "connect 'TAG' peer-to-peer: ...". A NULL VI
 *  gives false and no check. @return whether connected */
bool h_peer_connect(VIP_NIC_HANDLE xnic, VIP_VI_HANDLE x, VIP_NIC_HANDLE ynic, VIP_VI_HANDLE y,
		    const char *tag, unsigned timeout_ms);

/** The VIP_VI_STATE of @p vi (VipQueryVi), -1 if the query failed. */
int h_vi_state(VIP_VI_HANDLE vi);
/** Name of a VIP_VI_STATE ("Idle", "Pending Connect", ...), "?" for others. */
const char *h_state_name(int st);
/** Poll @p vi's state until it is @p want, at most @p ms.
 *  @return the state reached: @p want, or the last one seen (-1: query failed) */
int h_state_wait(VIP_VI_HANDLE vi, int want, unsigned ms);

/** The next completion of @p vi's receive (@p recv) or send queue within
 *  @p ms (VipRecvWait, VipSendWait), or NULL. */
VIP_DESCRIPTOR *h_done_wait(VIP_VI_HANDLE vi, bool recv, unsigned ms);
/** Wait up to @p ms for the link of @p nic's port (VIP_DPDK_SMI_PORT: memif
 *  connects after both viads started). @return whether it is up */
bool h_link_wait(VIP_NIC_HANDLE nic, unsigned ms);

/** VipDisconnect @p vi and dequeue every completion of both its queues; the
 *  VI stays, Idle. NULL: nothing. */
void h_vi_drain(VIP_VI_HANDLE vi);
/** h_vi_drain, then VipDestroyVi: retried for up to 2 s while completions
 *  still come back, a failed check if it never succeeds. NULL: nothing. */
void h_vi_drop(VIP_VI_HANDLE vi);
/** h_vi_drain both, then h_err_clear: the teardown's own asynchronous errors
 *  (CONN_LOST at the peer) are expected, and must not reach the next test. */
void h_pair_drain(VIP_VI_HANDLE a, VIP_VI_HANDLE b);
/** h_vi_drop both, then h_err_clear (see h_pair_drain). */
void h_pair_drop(VIP_VI_HANDLE a, VIP_VI_HANDLE b);

#endif /* VIA_IT_HARNESS_H */
