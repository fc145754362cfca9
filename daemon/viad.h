/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * viad internals: the daemon context and its objects (one file each:
 * session.c, ptag.c, mr.c, pmem.c, cq.c, vi.c), the connection manager
 * (cm.c) and the data path (dp.c and the files dp.h lists). The control
 * thread and the poll lcores share them under the shards' data-path locks
 * (struct via_shard).
 *
 * Errors are -errno throughout; ctl.c maps them to replies and the library
 * maps replies to VIP_RETURN codes.
 */
#ifndef VIAD_H
#define VIAD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <rte_pause.h>
#include <rte_ticketlock.h>

#include <vipl.h>

#include "conf.h"
#include "via_abi.h"
#include "via_ctl.h"
#include "via_idtab.h"
#include "via_ring.h"

struct via_port;
struct via_hosts;
struct via_zc;
struct rte_mempool;
struct via_dp_seg;

/* BSD's safe iteration, which glibc's sys/queue.h lacks */
#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                     \
	for ((var) = TAILQ_FIRST(head);                                 \
	     (var) != NULL && ((tvar) = TAILQ_NEXT(var, field), 1);     \
	     (var) = (tvar))
#endif

/** Copy a C string into a fixed buffer, truncating to fit; always terminated. */
static inline void
via_copy_name(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/**
 * The data-path lock: a fair ticket lock. Each shard (poll lcore) has one,
 * held for each iteration of its loop and dropped between iterations and
 * while it sleeps; the control thread holds every shard's while it changes
 * anything the data path reads (VIs, regions, CQs, sessions, connection
 * state). Fairness matters: the control thread must get its turn after at
 * most one iteration, however busy the data path is. The same lock, alone,
 * guards a port's transmit side and a CQ's producer side, which several
 * shards share.
 *
 * The state is DPDK's rte_ticketlock_t and the release is
 * rte_ticketlock_unlock; only the wait differs from rte_ticketlock_lock,
 * which spins without bound: with more threads than CPUs (poll lcores
 * sharing cores with clients and the control thread), the holder, or the
 * waiter whose turn comes next, may be off-CPU, and spinning a whole time
 * slice would only delay it. So a waiter yields its CPU after
 * VIA_DP_LOCK_SPINS pauses; it keeps its ticket, so the order stays fair.
 */
struct via_dp_lock {
	rte_ticketlock_t ticket;
};

#define VIA_DP_LOCK_SPINS 1024   /**< then yield: the holder may want our CPU */

static inline void
via_dp_lock(struct via_dp_lock *l)
{
	uint16_t me = __atomic_fetch_add(&l->ticket.s.next, 1, __ATOMIC_RELAXED);
	unsigned spins = 0;

	while (__atomic_load_n(&l->ticket.s.current, __ATOMIC_ACQUIRE) != me) {
		if (++spins < VIA_DP_LOCK_SPINS)
			rte_pause();
		else
			sched_yield();
	}
}

static inline void
via_dp_unlock(struct via_dp_lock *l)
{
	rte_ticketlock_unlock(&l->ticket);
}

/** Monotonic milliseconds, for connection-manager timers. */
uint64_t via_now_ms(void);

/* ---- log.c ------------------------------------------------------------ */

enum via_log_level { VIA_LOG_ERR, VIA_LOG_WARNING, VIA_LOG_INFO, VIA_LOG_DEBUG };

/** printf-style log line to stderr with level and an ISO 8601 time, or,
 *  when stderr is the journal (JOURNAL_STREAM), with a syslog priority
 *  prefix "<N>" instead; thread-safe. */
void via_log(enum via_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/** @return 0, -EINVAL for an unknown name */
int via_log_set_level(const char *name);

#define VLOG_ERR(...)  via_log(VIA_LOG_ERR, __VA_ARGS__)
#define VLOG_WARN(...) via_log(VIA_LOG_WARNING, __VA_ARGS__)
#define VLOG_INFO(...) via_log(VIA_LOG_INFO, __VA_ARGS__)
#define VLOG_DBG(...)  via_log(VIA_LOG_DEBUG, __VA_ARGS__)

/* ---- shm.c: hugepage-backed memory and the per-session arena ---------- */

/** A memfd mapping shared with one client. */
struct via_shm {
	int fd;
	uint8_t *va;        /**< viad's mapping */
	uint64_t len;
	bool hugepages;     /**< false: fell back to normal pages (logged) */
	uint32_t guard;     /**< its slot in guard.c's table (0: none) */
};

/**
 * Create and map @p len bytes of memfd memory, on 2 MiB hugepages when
 * @p huge allows and the pool has them (else on normal pages; a pool that
 * had none is logged). @p len is rounded up to the page size used.
 * @return 0, -ENOMEM, or -errno of memfd_create/ftruncate/mmap
 */
int via_shm_create(struct via_shm *m, const char *name, uint64_t len, bool huge);
/** Unmap (and unguard) @p m, close its fd if viad still has it. */
void via_shm_destroy(struct via_shm *m);

/** A free extent of a segment's arena. */
struct via_arena_extent {
	uint64_t off;
	uint64_t len;
};

/** First-fit allocator of VIA_SHM_ALIGN-aligned extents in a segment. */
struct via_arena {
	struct via_arena_extent *free;   /**< sorted by offset, coalesced */
	uint32_t nb_free;
	uint32_t cap_free;
};
int via_arena_init(struct via_arena *a, uint64_t off, uint64_t len);
void via_arena_fini(struct via_arena *a);
/** @return 0 and *off, -ENOMEM when no extent is large enough */
int via_arena_alloc(struct via_arena *a, uint64_t len, uint64_t *off);
void via_arena_free(struct via_arena *a, uint64_t off, uint64_t len);
/**
 * An arena whose free extents are @p n of @p e (sorted, not overlapping:
 * the caller checked; an upgrade's image). @return 0, -ENOMEM
 */
int via_arena_restore(struct via_arena *a, const struct via_arena_extent *e, uint32_t n);

/* ---- clientfd.c: what a client hands viad (docs/design.md section 10) -- */

/** What an fd a client passed is, as far as viad keeps such fds. */
enum via_fd_kind {
	VIA_FD_REFUSED,     /**< anything else: closed as it arrives */
	VIA_FD_SHMEM,       /**< a file of shmem or hugetlbfs (a memfd, say) */
	VIA_FD_PROC,        /**< a file of viad's own /proc */
	VIA_FD_PIPE,        /**< a pipe or FIFO */
};

/** An fd judged by via_fd_classify(). */
struct via_fd_info {
	enum via_fd_kind kind;
	char what[112];     /**< what it is, for the log */
	int accmode;        /**< O_RDONLY, O_WRONLY or O_RDWR */
	int seals;          /**< F_GET_SEALS (VIA_FD_SHMEM) */
	bool hugetlb;       /**< VIA_FD_SHMEM on hugetlbfs */
	uint64_t size;
	uid_t uid;          /**< its owner */
};

struct via_session;

/**
 * What @p fd is, found without a call that could wait on the object (no
 * fstat of a FUSE file: statx with AT_STATX_DONT_SYNC, F_GET_SEALS, then
 * fstatfs of shared memory only). @return fi->kind
 */
enum via_fd_kind via_fd_classify(int fd, struct via_fd_info *fi);
/**
 * CLIENT_FD SHARE_FILE: a memfd of shmem (not hugetlbfs), VIA_SHARE_FILE_SIZE
 * long, sealed against shrinking, open read-write, the client's own.
 * @return 0, -EINVAL with *@p why
 */
int via_fd_check_share_file(const struct via_session *s, const struct via_fd_info *fi,
			    const char **why);
/**
 * MEM_REGISTER OBJECT_FD: a memfd of shmem sealed against shrinking that
 * holds [@p offset, +@p len); *@p writable as its access mode allows.
 * @return 0, -EINVAL with *@p why
 */
int via_fd_check_object(const struct via_fd_info *fi, uint64_t offset, uint64_t len,
			bool *writable, const char **why);
/**
 * CLIENT_FD PROC_MEM: /proc/PID/mem (or .../task/TID/mem) of viad's procfs,
 * read-write, PID the process that connected. @return 0, -EINVAL with *@p why
 */
int via_fd_check_proc_mem(const struct via_session *s, int fd, const struct via_fd_info *fi,
			  const char **why);
/** CLIENT_FD EXEC_WITNESS: the read end of a pipe. @return 0, -EINVAL with *@p why */
int via_fd_check_witness(const struct via_fd_info *fi, const char **why);
/**
 * CLIENT_FD of @p kind: whether the request's fd (s->in_fd) may be kept as
 * that, and in which of the session's slots (*@p slot; the caller moves it
 * there). @return 0; -EBADF (no fd), -EINVAL (not of its kind), -EALREADY;
 * *@p why says which
 */
int via_client_fd_check(struct via_session *s, uint32_t kind, int **slot, const char **why);
struct ipc_perm;
/** Whether the client of @p s may read (or @p write) what @p p guards, as ipcperms() decides. */
bool via_sysv_allowed(const struct via_session *s, const struct ipc_perm *p, bool write);

/* ---- procmem.c: a client's ordinary memory ---------------------------- */

/**
 * Whether the program that opened @p s is still there: its /proc/self/mem
 * still reaches an address space (an exec or exit leaves it none). A
 * session without that fd has nothing to check: true.
 */
bool via_procmem_alive(const struct via_session *s);
/**
 * Map [@p offset, +@p len) of the memfd @p fd (judged as @p fi), shared,
 * writable only if its access mode is (*@p writable), and fault it in.
 * @return 0 and @p out (fd -1); -EINVAL (via_fd_check_object), -EFAULT
 *         (pages it cannot give), -errno of mmap; *@p why says which
 */
int via_object_map_fd(int fd, const struct via_fd_info *fi, uint64_t offset, uint64_t len,
		      struct via_shm *out, bool *writable, const char **why);
/**
 * Attach [@p offset, +@p len) of SysV segment @p shmid if the credentials
 * of @p s may read it, read-only unless they may write it (*@p writable),
 * and fault it in. @return 0 and @p out (fd -1); -EINVAL (no such segment,
 * out of it, not in normal pages), -EACCES, -EAGAIN (it changed meanwhile),
 * -EFAULT, -errno of shmat; *@p why says which
 */
int via_sysv_attach(const struct via_session *s, int shmid, uint64_t offset, uint64_t len,
		    struct via_shm *out, bool *writable, const char **why);

/* ---- guard.c: bus errors in client memory (docs/design.md section 10) -- */

/** What of a client a guarded mapping is, for the log. */
enum via_guard_kind {
	VIA_GUARD_SEGMENT,  /**< its session segment */
	VIA_GUARD_ALLOC,    /**< provider memory */
	VIA_GUARD_VIEW,     /**< a window of its share file */
	VIA_GUARD_OBJECT,   /**< a shared object it registered */
};

/**
 * Install the SIGBUS handler, with a table for @p capacity mappings.
 * @return 0, -ENOMEM, -errno
 */
int via_guard_init(uint32_t capacity);
/** The eventfd that becomes readable after a bus error in a client mapping. */
int via_guard_fd(void);
/** Close that eventfd: the control thread ends; the guard itself stays until exit. */
void via_guard_fini(void);
/**
 * Guard [@p va, +@p len), a mapping of session @p session's memory.
 * @return its slot, 0 when not guarded (no table: unit tests; table full)
 */
uint32_t via_guard_add(const void *va, uint64_t len, uint32_t session, enum via_guard_kind kind);
/** Unguard slot @p slot (0: nothing), from any thread. */
void via_guard_remove(uint32_t slot);
/**
 * Control thread: the next guarded mapping that took a bus error: its
 * session, the address and what it is. @return false when there is none
 */
bool via_guard_next_fault(uint32_t *session, uint64_t *addr, const char **what);
/** Bus errors caught so far. */
uint64_t via_guard_faults(void);

/** Bus errors this thread took in guarded mappings (the handler counts). */
extern __thread volatile unsigned via_guard_hits;

/* ---- reap.c: closing what clients handed over (docs/design.md section 10) */

/** Start the first reaper thread. @return 0, -errno */
int via_reap_start(void);
/** Wait up to @p wait_ms for what is queued; stuck reapers are left behind. */
void via_reap_stop(unsigned wait_ms);
/**
 * Close @p fd (-1: nothing), which came from session @p session's client
 * or may hold fds it queued, on a reaper thread: never here. Before
 * via_reap_start() it is closed at once.
 */
void via_reap(int fd, uint32_t session);
/** Control thread, now and then: another reaper when every one is stuck. */
void via_reap_watch(void);
/**
 * Take the fds queued and not being closed yet (an upgrade hands them to
 * the next viad, which reaps them). @return 0 and a malloc'd array of *@p n;
 * -ENOMEM (none taken)
 */
int via_reap_take(int **fds, uint32_t *n);

struct via_mr;
struct via_session;

/**
 * Copy @p len bytes at client address @p va of region @p mr into @p dst:
 * in place from provider memory and in-place regions, through the client
 * program's /proc/self/mem otherwise. The caller has checked the range
 * with via_mr_check().
 * @return 0, -EFAULT (the client unmapped it, its rights do not reach it
 *         (logged once per session), or it took the page away under viad's
 *         mapping: guard.c), -ESRCH (the program is gone: it exited or exec
 *         replaced it; logged once per session)
 */
int via_mem_read(const struct via_session *s, const struct via_mr *mr, uint64_t va,
		 void *dst, size_t len);
/** The other direction; same errors. */
int via_mem_write(const struct via_session *s, const struct via_mr *mr, uint64_t va,
		  const void *src, size_t len);
/** viad's own address of @p va in a region mapped in place, or NULL (copied). */
void *via_mem_direct(const struct via_mr *mr, uint64_t va);
/**
 * Copy between the @p cnt buffers of @p iov (@p len bytes in all) and the
 * contiguous client range at @p va of a copied region, in one system call
 * on the client program's /proc/self/mem (preadv, or pwritev if @p write):
 * a burst of frames moves with one crossing, not one per frame.
 * @return 0, -EFAULT, -ESRCH (as via_mem_read())
 */
int via_mem_copyv(const struct via_session *s, uint64_t va, const struct iovec *iov,
		  unsigned cnt, size_t len, bool write);

/* ---- the daemon ------------------------------------------------------- */

TAILQ_HEAD(via_session_list, via_session);

/* ---- user.c: limits per user (issue 14) --------------------------------- */

/** What a user's sessions hold together, each with its [limits] user_max_* key. */
enum via_user_res {
	VIA_USER_SESSIONS,
	VIA_USER_VIS,
	VIA_USER_CQS,
	VIA_USER_PTAGS,
	VIA_USER_REGIONS,
	VIA_USER_REGISTER_BYTES,  /**< pages of its regions (max_register_bytes) */
	VIA_USER_IN_PLACE_BYTES,  /**< its memory viad maps (max_in_place_bytes) */
	VIA_USER_ALLOC_BYTES,     /**< provider memory (max_alloc_bytes) */
	VIA_USER_REQUESTS,        /**< control requests awaiting a deferred reply */
	/** viad's mappings of its memory: segments, allocations, share-file
	 *  windows, shared objects (viad-wide: max_mappings) */
	VIA_USER_MAPPINGS,
	VIA_USER_HUGEPAGE_BYTES,  /**< its segments and allocations on hugepages */
	VIA_USER_MEMORY_BYTES,    /**< memory viad creates for it: segments, allocations */
	VIA_USER_RES_COUNT,
};

/** One uid with a session: what its sessions hold. */
struct via_user {
	TAILQ_ENTRY(via_user) link;
	uid_t uid;
	uint64_t used[VIA_USER_RES_COUNT];
	uint32_t refused;         /**< a bit per resource: its refusal was logged */
};
TAILQ_HEAD(via_user_list, via_user);

/**
 * What the host has, read at start (via_user_init): the defaults of the
 * limits that hold the host, not only viad's tables. 0: unknown (unit
 * tests), no such limit.
 */
struct via_host {
	uint64_t mem_bytes;        /**< MemTotal */
	uint64_t hugepage_bytes;   /**< the 2 MiB pool (nr_hugepages) */
	uint64_t max_mappings;     /**< limits.max_mappings, or half of what
				    *   vm.max_map_count leaves viad at start */
};

struct viad;
struct via_session;
/** Read the host's memory, hugepage pool and mapping limit into d->host; logged. */
void via_user_init(struct viad *d);
/**
 * The limit of @p res per user: its user_max_* key, or the viad-wide limit
 * (or the host's memory, pool, mappings) / user_share.
 */
uint64_t via_user_limit(const struct viad *d, enum via_user_res res);
/**
 * Charge @p n of @p res to @p s's user; nothing for a session with no user.
 * @return 0, -ENOSPC (the user's limit, logged once until it drops below)
 */
int via_user_charge(struct viad *d, struct via_session *s, enum via_user_res res, uint64_t n);
/** The reverse of via_user_charge(). */
void via_user_uncharge(struct viad *d, struct via_session *s, enum via_user_res res, uint64_t n);
/** Attach @p s to the user of s->uid, charged one session. @return 0, -ENOSPC, -ENOMEM */
int via_user_attach(struct viad *d, struct via_session *s);
/** Uncharge the session (everything else it held is freed by then). */
void via_user_detach(struct viad *d, struct via_session *s);

/** One VI NIC: a port and the attributes VipQueryNic reports for it. */
struct rte_ring;

struct via_nic {
	struct via_port *port;
	struct viad *d;
	uint16_t index;          /**< in viad.nics; carried in mbuf->port between shards */
	struct via_ctl_nic_info info;
	bool loopback;           /**< VIA_PORT_CAP_LOOPBACK: named /dev/via_lo */
	struct via_dp_lock tx_lock; /**< the port's transmit queue 0 and @c backlog */
	struct rte_ring *backlog; /**< frames the port did not take yet, in order */
	bool link_up;            /**< as last seen by via_nics_watch() */
	/** via_nics_watch(): since when the link is down (ms; 0: up), whether
	 *  its connections were broken for it (after link_down_grace_ms), and
	 *  when a port that reconnects only at start is started again next */
	uint64_t link_down_since;
	bool link_lost;
	uint64_t restart_at;
	/** its port is stopped (a start again failed): no burst touches it;
	 *  written under every data-path lock (via_nics_watch) */
	bool stopped;
	/** its port's enum via_port_cap bits (via_glue.h): own-address frames
	 *  through the port, a transmit kick, frames that may point into
	 *  provider memory (dp_zc.c), a loopback */
	uint32_t caps;
};

TAILQ_HEAD(via_vi_list, via_vi);

#define VIA_MAX_SHARDS VIA_CONF_MAX_POLL_LCORES
/** VIs whose completions' wait words a shard bumps at the end of its iteration */
#define VIA_SHARD_OWED_MAX 32
/** Summary words of the largest session: limits.max_vi / 64 / 64 */
#define VIA_BELL_SUMMARY_MAX 64

/**
 * One poll lcore's part of the data path: VIA §11's NIC engine, once per
 * core. A VI belongs to one shard for life, the one that owns the doorbell
 * word holding its bit (word index modulo the number of shards); only that
 * shard's lcore runs its queues, its transport and its connection's data
 * frames, under the shard's lock. Port receive queue N is polled by shard N;
 * a frame for a VI of another shard, or sent to the NIC's own address, is
 * handed over through that shard's inbox; connection-manager frames go to
 * the control thread (viad.cm_inbox).
 */
struct via_shard {
	struct via_dp_lock lock;
	unsigned index;
	unsigned lcore;
	struct rte_ring *inbox;       /**< frames for this shard's VIs: MP/SC */
	/** Its own wake-up (via_abi.h, "Wake-up contract", pair 2): another
	 *  thread with work for it writes this eventfd when @c asleep says its
	 *  poller sleeps; no other poller reads it, so no other can take a
	 *  wake-up meant for it (dp_poll.c) */
	int wake_fd;
	uint32_t asleep;              /**< 1 while its poller sleeps (seq_cst) */
	struct via_vi_list rel_vis;   /**< its connected reliable VIs: timers, ACKs */
	/** VIs whose send ring it polls without doorbells (dp.c, "polled send
	 *  queues"), and how many */
	struct via_vi_list polled_vis;
	uint32_t nb_polled;
	uint64_t iteration;           /**< poll iterations so far */
	uint32_t nb_vis;              /**< VIs placed on it (placement balance) */
	/** its bits of each doorbell summary word: those of the bell words it
	 *  owns (word index modulo the number of shards) */
	uint64_t bell_masks[VIA_BELL_SUMMARY_MAX];
	/** zero-copy trackers whose last frame was freed, pushed from any
	 *  thread (a lock-free stack), reaped by this shard (dp_zc.c) */
	struct via_zc *zc_released;
	struct via_zc *zc_free;       /**< spare trackers, under the shard's lock */
	/* memory its lcore takes instead of allocating (dp_mem.c), made and
	 * freed by the control thread */
	struct via_zc *zc_slab;       /**< every tracker: VIA_DP_ZC_TRACKERS */
	/** scatter lists of RDMA Reads waiting for their answer
	 *  (via_sq_pending.segs): VIA_DP_READ_LISTS of max_segments_per_desc */
	struct rte_mempool *read_lists;
	/** where a send of a VI never connected is fetched, to be flushed
	 *  (max_segments_per_desc entries; such a VI has no vi->tx.segs) */
	struct via_dp_seg *flush_segs;
	/** within an iteration: the wait words of completions are bumped at
	 *  its end, once per queue (dp_comp.c), for the VIs listed in owed */
	bool batch;
	uint16_t nb_owed;
	struct via_vi *owed[VIA_SHARD_OWED_MAX];
} __attribute__((aligned(64)));

struct via_vi;

/**
 * Events handed up (rxe style): the transport, the zero-copy trackers, the
 * connection manager and the link watch tell the files above them through
 * this table (struct viad::ev) instead of calling them. dp.c fills it at
 * via_dp_init(), cm.c its link_down at via_cm_init().
 */
struct via_events {
	/** dp_rel.c: the connection of @p vi broke (VIA §2.5.2): Error state,
	 *  every outstanding send fails (the first with Transport Error), the peer
	 *  is told; already logged with @p why */
	void (*conn_broken)(struct viad *d, struct via_vi *vi, const char *why);
	/** dp_rel.c: the peer refused a frame: the message being framed stops
	 *  and waits, like one framed whole, for the break that follows */
	void (*tx_cut)(struct via_vi *vi);
	/** dp_zc.c: the frames a held send completion waited for were freed */
	void (*sq_released)(struct viad *d, struct via_vi *vi);
	/** cm.c: the connection ended (VIA §4.2): both queues flushed */
	void (*conn_ended)(struct viad *d, struct via_vi *vi);
	/** cm.c: a new connection starts: the data path forgets the old one */
	void (*conn_reset)(struct via_vi *vi);
	/** nic.c: the port of @p nic lost its link (cm.c breaks its connections) */
	void (*link_down)(struct viad *d, struct via_nic *nic);
};

struct viad {
	struct via_conf conf;
	struct via_hosts *hosts;
	struct via_nic nics[VIA_CONF_MAX_PORTS];
	unsigned nb_nics;

	/* object tables; ids double as handles on the wire */
	struct via_idtab sessions;
	struct via_idtab ptags;
	struct via_idtab mrs;       /**< the translation and protection table */
	/** regions deregistered or changed since the start (mr.c), counted
	 *  under every shard's lock: what the data path found in the table
	 *  stays good while the count stays (via_mr_epoch) */
	uint64_t mr_changes;
	struct via_idtab cqs;
	struct via_idtab vis;
	struct via_idtab pmems;

	struct via_session_list session_list;
	struct via_user_list users;         /**< users with a session (user.c) */
	struct via_host host;               /**< the host's resources (user.c) */
	uint64_t mappings;                  /**< VIA_USER_MAPPINGS of every user */
	/** what clients tried and viad refused (docs/design.md section 10),
	 *  for operators (telemetry /viad/security) */
	struct {
		uint64_t fds_refused;       /**< fds of a kind or op that takes none */
		uint64_t bus_errors;        /**< SIGBUS in client memory (guard.c) */
		uint64_t programs_gone;     /**< sessions whose program was replaced */
	} sec;
	struct via_ctl_counters counters;   /**< control-thread counters */
	struct via_shard shards[VIA_MAX_SHARDS];
	unsigned nb_shards;                 /**< one per poll lcore */
	struct rte_ring *cm_inbox;          /**< CM frames for the control thread: MP/SC */
	int cm_fd;                          /**< eventfd: cm_inbox has frames */
	int wake_fd;                        /**< eventfd sleeping pollers wait on */
	struct via_dp_lock sleep_lock;      /**< orders changes of poller_asleep */
	uint32_t poller_asleep;             /**< pollers asleep (adaptive mode) */
	struct via_cm *cm;                  /**< connection manager state (cm.c) */
	struct via_events ev;               /**< events handed up (dp.h, the layers) */
	/** taken first by via_dp_lock_all(): alone, it keeps the objects as
	 *  they are without stopping the data path (telemetry reads them) */
	struct via_dp_lock objects_lock;
	bool stopping;  /**< written by the control thread (atomic), read by poll lcores */
	/** the poll lcores leave their loops for an upgrade (upgrade.c): set
	 *  by the control thread (atomic), read by poll lcores */
	bool parked;
};

/** The shard serving doorbell bit @p bell of any session (vi.c places VIs). */
static inline struct via_shard *
via_bell_shard(struct viad *d, uint32_t bell)
{
	return &d->shards[(bell / 64) % d->nb_shards];
}

/** The control thread's hold on the whole data path: the objects, then
 *  every shard, in order. */
static inline void
via_dp_lock_all(struct viad *d)
{
	unsigned i;

	via_dp_lock(&d->objects_lock);
	for (i = 0; i < d->nb_shards; i++)
		via_dp_lock(&d->shards[i].lock);
}

static inline void
via_dp_unlock_all(struct viad *d)
{
	unsigned i;

	for (i = d->nb_shards; i-- > 0;)
		via_dp_unlock(&d->shards[i].lock);
	via_dp_unlock(&d->objects_lock);
}

/* ---- session.c -------------------------------------------------------- */

TAILQ_HEAD(via_ptag_list, via_ptag);
TAILQ_HEAD(via_mr_list, via_mr);
TAILQ_HEAD(via_cq_list, via_cq);
TAILQ_HEAD(via_pmem_list, via_pmem);

/** Incremental reader state of one control connection. */
struct via_ctl_inbuf {
	struct via_ctl_hdr hdr;
	uint8_t body[VIA_CTL_BODY_MAX];
	size_t got;          /**< bytes of hdr + body received so far */
};

/** Supplementary groups of a client viad keeps (allowed_gids, SysV
 *  permissions); a client with more counts as in none of them. */
#define VIA_SESSION_GROUPS 256

/** One client connection: everything it owns is freed when it goes. */
struct via_session {
	TAILQ_ENTRY(via_session) link;
	uint32_t id;
	int sock;
	pid_t pid;           /**< SO_PEERCRED at connect */
	int pidfd;           /**< that process: the session ends when it exits */
	uid_t uid;
	gid_t gid;
	gid_t groups[VIA_SESSION_GROUPS]; /**< supplementary groups (SO_PEERGROUPS) */
	unsigned nb_groups;
	struct via_user *user;      /**< charged with what it holds; NULL: none */
	uint32_t deferred;          /**< requests awaiting a deferred reply */
	bool opened;         /**< OPEN done: nic and seg are valid */
	struct via_nic *nic;
	struct via_shm seg;
	struct via_arena arena;
	struct via_ctl_inbuf in;
	uint64_t *bells;            /**< doorbell words in the segment (untrusted) */
	uint64_t *bell_summary;     /**< and their summary words, right after them */
	uint32_t bell_words;
	struct via_vi **by_bell;    /**< VI of each doorbell bit (viad's own) */
	uint64_t *bell_taken;       /**< the bits of by_bell in use, a word per bell word */
	uint32_t bell_words_live;   /**< one past the last word with a VI: what pollers scan */
	struct via_dp_lock errq_lock; /**< shards raise errors concurrently */
	struct via_ring errq;       /**< async errors: viad's producer view */
	bool errq_overflowed;       /**< logged that errors were lost */
	struct via_shm_errq *errq_sh;

	struct via_ptag_list ptags;
	struct via_mr_list mrs;
	struct via_cq_list cqs;
	struct via_vi_list vis;
	struct via_pmem_list pmems;

	/*
	 * The client program's fds (CLIENT_FD; docs/design.md, "Registered
	 * ordinary memory"), -1 until given. Through them viad reaches that
	 * program's ordinary memory, and only that program's: an exec ends
	 * the witness (the session ends) and the mem fd (copies fail).
	 */
	int in_fd;                  /**< an fd that came with the request being read */
	struct via_fd_info in_fd_info; /**< what in_fd is (via_fd_classify) */
	bool in_fd_refused;         /**< an fd of the request was refused: it fails */
	unsigned fd_refusals_logged; /**< refused fds logged so far (a flood is not) */
	int share_fd;               /**< the process's share file: in-place regions */
	int mem_fd;                 /**< its /proc/self/mem: copied regions */
	int witness_fd;             /**< hangs up at the program's exec or exit */
	bool mem_gone_logged;       /**< logged that mem_fd no longer reaches a program */
	bool copy_fault_logged;     /**< logged that a copied access failed */
	uint64_t in_place_bytes;    /**< pages of its in-place regions (max_in_place_bytes) */
	struct via_pmem_list views; /**< viad's mappings of share_fd */
	struct via_tpt *tpt;        /**< the client's table of regions, NULL until MEM_TABLE */
};

/** @return 0, -ENOSPC (max_sessions), -ENOMEM */
int via_session_new(struct viad *d, int sock, struct via_session **out);
/** A session's fds none yet (-1), its lists empty, it in d's list. */
void via_session_init(struct viad *d, struct via_session *s);
/**
 * OPEN: bind the session to the NIC called @p nic_name and create its
 * segment. @return 0, -ENODEV (no such NIC), -EALREADY, -ENOSPC (the
 * user's mappings or memory), -ENOMEM
 */
int via_session_open(struct viad *d, struct via_session *s, const char *nic_name);
/**
 * Free everything the session owns (counted as reclaimed); its socket and
 * the fds its client gave go to the reapers (via_reap).
 */
void via_session_close(struct viad *d, struct via_session *s);
/**
 * Queue an asynchronous error for the session's VipErrorCallback handler
 * (VIA §9.9.1). A full queue drops it (counted): errors never block viad.
 */
void via_session_async_error(struct via_session *s, uint32_t code, uint32_t vi_cookie,
			     uint32_t resource, uint32_t op, uint64_t desc_va);
/** Wake a futex waiter of @p w if one says it sleeps (via_abi.h, "Wake-up contract", pair 3). */
void via_shm_wait_bump(struct via_shm_wait *w);
/** via_shm_wait_bump() for @p n completions at once (one add, one look at the sleepers). */
void via_shm_wait_add(struct via_shm_wait *w, uint32_t n);
/** Resolve a NIC name: viaN, /dev/via_lo, /dev/via_ethN. NULL if none. */
struct via_nic *via_nic_by_name(struct viad *d, const char *name);

/* ---- ptag.c ------------------------------------------------------------ */

struct via_ptag {
	TAILQ_ENTRY(via_ptag) link;
	struct via_session *owner;
	uint32_t id;
	uint32_t refs;       /**< VIs and regions using it (VIA §9.5.2) */
};

/** @return 0, -ENOSPC (max_ptags), -ENOMEM */
int via_ptag_create(struct viad *d, struct via_session *s, uint32_t *id);
/** @return 0, -ENOENT (not this session's), -EBUSY (still used) */
int via_ptag_destroy(struct viad *d, struct via_session *s, uint32_t id);
/** The session's ptag @p id, or NULL (another process's tags never resolve). */
struct via_ptag *via_ptag_get(struct viad *d, struct via_session *s, uint32_t id);

/* ---- pmem.c: provider memory (VipDpdkAllocMem) ------------------------ */

struct via_pmem {
	TAILQ_ENTRY(via_pmem) link;
	struct via_session *owner;
	uint32_t id;
	uint32_t refs;        /**< regions registered in it */
	/** zero-copy frames' trackers pointing into it (atomic: shards pin and
	 *  unpin under their own locks); it stays mapped while any does */
	uint32_t pins;
	bool freed;           /**< freed by its client while pinned: unmapped after the last unpin */
	struct via_pmem *dead_next;  /**< after its last unpin: in the stack via_pmem_reap() empties */
	bool view;            /**< viad's mapping of client memory, not an allocation */
	bool object_view;     /**< a view of a shared object (via_pmem_object_view), one region's */
	struct via_shm shm;
	uint64_t asked;       /**< the length asked for: what its user is charged */
	uint64_t client_va;   /**< reported by ALLOC_MAPPED (0 until then); a view's first address */
	/* an object view's object, for an upgrade to map it again (image_save.c):
	 * shm.fd is the memfd the client passed, or -1 and shmid its SysV segment */
	int shmid;
	uint64_t object_offset;
	uint32_t image_ref;   /**< its number in the image being written */
};

/**
 * via_shm_create() for session @p s: one mapping, its bytes and (while its
 * share of the pool lasts) its hugepages charged to the session's user, and
 * guarded as @p kind (guard.c).
 * @return 0; -ENOSPC (limits.user_max_mappings or _memory_bytes, viad's
 *         max_mappings); as via_shm_create()
 */
int via_shm_create_charged(struct viad *d, struct via_session *s, struct via_shm *m,
			   const char *name, uint64_t len, enum via_guard_kind kind);
/** The charges of via_shm_create_charged() given back (the mapping may stay a while). */
void via_shm_uncharge(struct viad *d, struct via_session *s, const struct via_shm *m);
/** @return 0, -EINVAL (len 0), -ENOSPC (per-session cap, the user's limits), -ENOMEM */
int via_pmem_alloc(struct viad *d, struct via_session *s, uint64_t len, struct via_pmem **out);
/** A zero-copy frame's tracker points into @p p: keep it mapped. */
void via_pmem_pin(struct via_pmem *p);
/** The reverse of via_pmem_pin(); after the last unpin of a freed one,
 *  via_pmem_reap() unmaps it (any thread; lock-free). */
void via_pmem_unpin(struct via_pmem *p);
/** Control thread: unmap and free the freed allocations no frame pins any more. */
void via_pmem_reap(void);
/** @return 0, -ENOENT, -EINVAL (va 0, unaligned, or already mapped) */
int via_pmem_mapped(struct viad *d, struct via_session *s, uint32_t id, uint64_t client_va);
/** @return 0, -ENOENT, -EBUSY (regions still in it) */
int via_pmem_free(struct viad *d, struct via_session *s, uint32_t id);
/**
 * A view of the session's share file that covers the client pages
 * [@p base, @p base + @p len), counted as one more region in it: an
 * existing one, or a new mapping of the 1 GiB-aligned windows around them.
 * @return 0 and *@p out; -EINVAL (no share file, out of its range),
 *         -ENOSPC (the user's mappings), -ENOMEM
 */
int via_pmem_view_get(struct viad *d, struct via_session *s, uint64_t base, uint64_t len,
		      struct via_pmem **out);
/**
 * A view of the shared object the client names for [@p base, +@p len), one
 * region's: the memfd it passed with the request (@p q OBJECT_FD, s->in_fd)
 * or its SysV segment q->shmid (SYSV), from q->offset; *@p writable as far
 * as the client may write it.
 * @return 0; -ENOSPC (the user's mappings), -EBADF (no fd), -ENOMEM; as
 *         via_object_map_fd() and via_sysv_attach(); *@p why says which
 */
int via_pmem_object_view(struct viad *d, struct via_session *s,
			 const struct via_ctl_mem_register_req *q, uint64_t base, uint64_t len,
			 struct via_pmem **out, bool *writable, const char **why);
/** One region fewer in view @p v: the last one unmaps it (at its last unpin). */
void via_pmem_view_put(struct viad *d, struct via_session *s, struct via_pmem *v);
/** The session's allocation wholly containing [va, va+len), or NULL. */
struct via_pmem *via_pmem_find(struct via_session *s, uint64_t va, uint64_t len);

/* ---- mr.c: memory regions and the translation and protection table --- */

/** Access a data-path operation needs from a region (VIA §3.2.2, §6.3.2). */
enum via_mr_access {
	VIA_MR_LOCAL_READ   = 1u << 0,  /**< send gather, RDMA Write source */
	VIA_MR_LOCAL_WRITE  = 1u << 1,  /**< receive scatter, RDMA Read sink */
	VIA_MR_REMOTE_WRITE = 1u << 2,  /**< target of an RDMA Write */
	VIA_MR_REMOTE_READ  = 1u << 3,  /**< source of an RDMA Read */
};

struct via_mr {
	TAILQ_ENTRY(via_mr) link;
	struct via_session *owner;
	uint32_t handle;     /**< VIP_MEM_HANDLE */
	uint32_t ptag;
	uint64_t addr;       /**< as given to VipRegisterMem */
	uint64_t len;
	uint64_t page_base;  /**< registered on page granularity (VIA §3.2.1) */
	uint64_t page_len;
	bool rdma_write;
	bool rdma_read;
	bool writable;       /**< no read-only page in the range (VIA §9.5.3) */
	struct via_pmem *pmem;   /**< provider memory: moved in place; NULL: process memory */
};

/** A window of the share file the client's table may name (via_abi.h). */
struct via_tpt_window {
	struct via_pmem *view;   /**< viad's mapping, held till the session ends */
	struct via_mr mr;        /**< the whole window: what via_mr_check() returns */
};

/**
 * The client's table of regions (via_abi.h, "The client's table"): where
 * it is, and its windows; viad's own numbers, never read from the segment.
 */
struct via_tpt {
	const struct via_tpt_entry *sh;  /**< the entries in the segment (the client's) */
	uint64_t off;                    /**< their offset in the segment */
	uint32_t capacity;               /**< entries, a power of two */
	uint32_t nb_windows;
	struct via_tpt_window windows[VIA_TPT_WINDOWS];
};

/**
 * MEM_TABLE: the window of the share file holding @p addr mapped for the
 * client's table (made at the first call), charged to the session and its
 * user; filled in @p rep. Already a window: the same one.
 * @return 0; -EINVAL (no share file, @p addr past it); -EOPNOTSUPP
 *         (limits.table_regions 0); -ENOSPC (max_in_place_bytes, the
 *         user's in-place bytes, mappings or regions, VIA_TPT_WINDOWS, the
 *         segment full); -ENOMEM
 */
int via_mr_table_window(struct viad *d, struct via_session *s, uint64_t addr,
			struct via_ctl_mem_table_rep *rep);
/**
 * Window @p w of a client's table is view @p v of the share file (a
 * reference of @p v the caller holds): the region via_mr_check() returns
 * for the entries naming it, the whole view. MEM_TABLE, and an upgrade's
 * adopter (image_adopt.c).
 */
void via_mr_table_window_set(struct via_session *s, struct via_tpt_window *w,
			     struct via_pmem *v);
/** The client's table and its windows given back (session end). */
void via_mr_table_close(struct viad *d, struct via_session *s);

/**
 * Register [addr, addr+len) of the session's process, placed as @p q says
 * (in place from the share file, copied, or in provider memory).
 * A shared object (OBJECT_FD: the fd in s->in_fd; SYSV) is mapped as far
 * as the client may use it; one viad does not map (logged with the reason)
 * is copied, as is any range the client says is copied: every access then
 * goes through the program's /proc/self/mem with its own rights.
 * @return 0 and *handle; -EINVAL (len 0, wraps, past the user address
 *         space, a bad placement or flag, in place without a share file,
 *         copied without the program's mem fd); -ESRCH (bad ptag);
 *         -EOPNOTSUPP (RDMA Read requested, unsupported); -ENOSPC
 *         (max_regions, max_register_bytes, max_in_place_bytes, the
 *         user's limits, its mappings included); -ENOMEM
 */
int via_mr_register(struct viad *d, struct via_session *s,
		    const struct via_ctl_mem_register_req *q, uint32_t *handle);
/** @return 0, -ENOENT (no such region of this session at @p addr) */
int via_mr_deregister(struct viad *d, struct via_session *s, uint64_t addr, uint32_t handle);
/** The session's region @p handle based at @p addr, or NULL. */
struct via_mr *via_mr_get(struct viad *d, struct via_session *s, uint64_t addr, uint32_t handle);
/** @return 0, -ENOENT, -ESRCH (bad ptag), -EOPNOTSUPP (RDMA Read unsupported) */
int via_mr_set_attr(struct viad *d, struct via_session *s, uint64_t addr, uint32_t handle,
		    const struct via_ctl_mem_attr *attr);
/**
 * Translation and protection check of one segment (VIA §3.2.2): @p handle
 * must name a region of @p s, [va, va+len) lie within its registered bytes,
 * its ptag equal @p ptag and it must allow @p access. A handle of the
 * client's table (VIA_TPT_HANDLE) is checked against the entry it names,
 * copied out, and the window the entry names; the region returned is then
 * the window's (its bytes are all the client's share file).
 * @return the region, or NULL with *err = -ENOENT (bad handle), -ERANGE
 *         (outside the region), -EACCES (ptag or access denied)
 */
struct via_mr *via_mr_check(struct viad *d, struct via_session *s, uint32_t handle,
			    uint64_t va, uint64_t len, uint32_t ptag, unsigned access, int *err);
/**
 * Whether [va, va+len) lies in region @p mr too, which via_mr_check()
 * returned for @p handle under the same lock: the range then passes the
 * same check with the same ptag and the same or less access, without the
 * lookup. Always false for a handle of the client's table (the region
 * returned is its window, not the entry): check that one again.
 */
bool via_mr_holds(const struct via_mr *mr, uint32_t handle, uint64_t va, uint64_t len);
/**
 * The epoch of the translation and protection table: via_mr_check() gives
 * every handle (but those of the client's table) the same answer as long
 * as it lasts, since every region that goes or changes ends it, under
 * every shard's lock. Never 0, which a zeroed message holds for "not
 * looked up" (dp.h). Read by the data path under its shard's lock.
 */
static inline uint64_t
via_mr_epoch(const struct viad *d)
{
	return d->mr_changes + 1;
}
/**
 * The epoch a lookup of @p handle made now stays good for: 0 (none) for a
 * handle of the client's table, whose entries the client changes without
 * viad's knowing: those are looked up at every use.
 */
static inline uint64_t
via_mr_epoch_of(const struct viad *d, uint32_t handle)
{
	return (handle & VIA_TPT_HANDLE) ? 0 : via_mr_epoch(d);
}

/* ---- cq.c --------------------------------------------------------------- */

struct via_cq {
	TAILQ_ENTRY(via_cq) link;
	struct via_session *owner;
	uint32_t id;
	uint32_t capacity;
	uint32_t refs;        /**< work queues attached (VIA §9.7.2) */
	uint64_t shm_off;
	uint64_t shm_len;
	struct via_dp_lock lock; /**< producers: VIs of several shards may share a CQ */
	struct via_ring ring; /**< viad's producer view; never re-read from shm */
	struct via_shm_cq *sh;
};

/** @return 0; -EINVAL (0 entries); -ENOSPC (max_cq, max_cq_entries or segment full) */
int via_cq_create(struct viad *d, struct via_session *s, uint32_t entries, struct via_cq **out);
/**
 * VipResizeCQ (VIA §9.7.3): move the entries the client has not consumed
 * (from @p cons, its consumer index) into a new slot array of @p entries.
 * @return 0 and the new array's offset and capacity; -EINVAL (0 entries,
 *         or @p cons not within what viad produced); -ENOENT; -ENOSPC (more
 *         than max_cq_entries, fewer than the entries queued, segment full)
 */
int via_cq_resize(struct viad *d, struct via_session *s, uint32_t id, uint32_t entries,
		  uint32_t cons, uint64_t *slots_off, uint32_t *capacity);
/** @return 0, -ENOENT, -EBUSY (work queues attached) */
int via_cq_destroy(struct viad *d, struct via_session *s, uint32_t id);
struct via_cq *via_cq_get(struct viad *d, struct via_session *s, uint32_t id);

/* ---- vi.c ------------------------------------------------------------- */

/**
 * A VI's part in the connection handshake (cm.c, one function per state;
 * VIA §4.1, §9.4.2, §9.4.4 and the peer calls of vipl.h; the handshake is
 * docs/wire-format.md section 7). The VI is Pending Connect in the
 * requesting and accepting states.
 */
enum via_cm_state {
	VIA_CM_IDLE,            /**< no handshake of its own outstanding */
	VIA_CM_REQUESTING,      /**< VipConnectRequest: CONN_REQ every CM_RETRY_MS until
				 *   an answer, the CONN_NOMATCH grace, cm_unreachable_ms
				 *   of silence or the Timeout */
	VIA_CM_PEER_REQUESTING, /**< VipConnectPeerRequest: the same, and the peer's own
				 *   request connects it too; no CONN_NOMATCH grace */
	VIA_CM_ACCEPTING,       /**< VipConnectAccept: CONN_ACCEPT every CM_RETRY_MS until
				 *   the requester confirms (CONN_ACK) or refuses, or
				 *   cm_unreachable_ms */
	VIA_CM_PEER_ACCEPTING,  /**< the larger end of a peer connection: the same */
	VIA_CM_PEER_DONE,       /**< the peer request ended: its result waits for
				 *   VipConnectPeerDone or VipConnectPeerWait */
};

/** The connection of a VI (VIA §4): who is at the other end. */
struct via_vi_conn {
	uint32_t id;              /**< connection identifier; 0 = none */
	uint8_t remote_mac[6];
	uint32_t remote_vi;
	uint32_t frame_payload;   /**< payload per frame agreed with the peer */
	/** both ports cannot alter frames (VIA_WF_INTACT both ways): data
	 *  frames go without their payload CRC. Not in the upgrade image: a
	 *  VI adopted sums again, which its peer takes all the same */
	bool unsummed;
	/** MaxTransferSize agreed with the peer: the smaller of the two (VIA
	 *  §4.1, §9.10.5); attr.max_transfer while Connected (via_vi_set_state) */
	uint32_t max_transfer;
	struct via_ctl_vi_attr remote_attr;
	/* the handshake while Pending Connect (cm.c) */
	enum via_cm_state cm_state;
	int result;               /**< how the last attempt ended: 0 connected, or -errno */
	uint64_t nomatch_since_ms; /**< the first CONN_NOMATCH answer came (0: none) */
	uint64_t heard_ms;        /**< requesting: the last answer came (or the start) */
	uint32_t cookie;          /**< requesting: the server's, sent in CONN_REQ's imm */
	uint32_t reply_seq;       /**< deferred CONN_REQUEST, CONN_ACCEPT or PEER_WAIT */
	uint16_t reply_op;        /**< 0 = none */
	uint64_t deadline_ms;     /**< UINT64_MAX: no timeout */
	uint64_t next_retry_ms;
	struct via_ctl_addr local, remote;
};

/** Receive reassembly of a VI (dp_resp.c, one function per state). */
enum via_rx_state {
	VIA_RX_IDLE,     /**< between messages: waits for the first frame of one (§6.4.1) */
	VIA_RX_MESSAGE,  /**< frames of msg_id land in the receive descriptor it took: a
			  *   Send, or an RDMA Write with immediate data (§10.2 bit 2) */
	VIA_RX_WRITE,    /**< frames of msg_id, an RDMA Write without immediate data,
			  *   land in its target region; no descriptor (§6.3.2) */
};

/** One data segment of a descriptor, after validation (VIA §10.4). */
struct via_dp_seg {
	uint64_t va;
	uint32_t len;
	uint32_t handle;
	struct via_mr *mr;   /**< valid only while a data-path lock is held */
};

/** What the frames of one message say besides their data (dp_frame.c). */
struct via_frame_spec {
	uint8_t opcode;
	uint16_t flags;
	uint32_t imm;
	uint32_t msg_id;
	uint32_t msg_len;          /**< READ_REQ: the bytes asked for */
	uint32_t rdma_handle;      /**< RDMA: the address segment (§10.3) they carry */
	uint64_t rdma_va;
	/** the message's bytes in viad's reach (a line entry's inline data),
	 *  or NULL: they are the segments' */
	const uint8_t *data;
};

/**
 * The region a descriptor was found in when it was fetched, and the
 * table's epoch it was found in (via_mr_epoch; 0: none, or a handle of the
 * client's table): good for its completion while the epoch lasts.
 */
struct via_desc_mr {
	const struct via_mr *mr;
	uint64_t epoch;
};

/**
 * One message of the data path, as rxe's wqe: what its frames say, where its
 * bytes are, how far it went, the descriptor it completes and how. Lives
 * where the message does: the VI's send side (via_vi_tx), an RDMA Read it
 * answers (via_rdma_resp); the requester, the framing, the descriptor fetch
 * and the completer take it whole (daemon/dp/dp.h).
 */
struct via_dp_msg {
	struct via_frame_spec fs;
	struct via_wqe wqe;        /**< the descriptor it completes */
	struct via_dp_seg *segs;   /**< its data segments: gathered, or scattered into */
	uint16_t nb_segs;
	bool zero_copy;            /**< its frames may point into its segments (dp_zc.c) */
	uint32_t total;            /**< its bytes */
	uint32_t off;              /**< bytes framed so far */
	uint32_t first_seq;        /**< reliable levels: the seq of its first frame */
	uint32_t status;           /**< its completion's VIP_STATUS_OP_* bits */
	uint32_t cs_imm;           /**< the control segment's, written back on completion */
	int err;                   /**< 0, or why it failed (-errno: dp.h, "Errors") */
	struct via_zc *zc;         /**< its zero-copy frames' tracker, or NULL */
	struct via_desc_mr desc_mr; /**< the region its descriptor was found in */
	/** the table's epoch its segments' regions (segs[].mr) were all
	 *  found in (via_mr_epoch; 0: none): good while it lasts */
	uint64_t segs_epoch;
};

/** Receive-side state of a VI: the message landing, and the descriptor it takes. */
struct via_vi_rx {
	enum via_rx_state state;
	bool delivered_any;
	uint32_t last_msg_id;      /**< last message completed: duplicates are dropped */
	/** the message: msg.fs its msg_id and immediate data (if it has any),
	 *  msg.off the offset expected next, msg.status its completion's
	 *  IMMEDIATE and op bits; its descriptor msg.wqe (regions named by
	 *  handle, looked up at each use: the client may deregister them),
	 *  msg.total the sum of its segments' lengths (in @c segs) */
	struct via_dp_msg msg;
	/** max_segments_per_desc entries, from the connection on (dp_mem.c) */
	struct via_dp_seg *segs;
};

/**
 * Send side of a VI: the message being framed. A turn of the VI (dp.c,
 * vi_send) frames about a quantum of bytes, so one large message takes
 * several turns and small messages of other VIs go between its frames.
 */
struct via_vi_tx {
	bool active;               /**< a descriptor is taken and partly framed */
	bool stale;                /**< the lock was dropped: look its regions up again */
	struct via_dp_msg msg;     /**< the message (its segments in @c segs) */
	/** max_segments_per_desc entries, from the connection on (dp_mem.c) */
	struct via_dp_seg *segs;
};

struct rte_mbuf;

/** What a send-queue completion waits for (struct via_sq_pending). */
enum via_sq_wait {
	VIA_SQ_READY,      /**< nothing: it only keeps its place in the queue's order */
	VIA_SQ_ACK,        /**< Reliable Reception: the ACK of its last frame (§2.5.3) */
	VIA_SQ_READ,       /**< an RDMA Read: all of its answer placed (§9.6, §10.2) */
};

/**
 * A send-queue descriptor whose completion is held back. Completions leave
 * a queue in order (the library dequeues the head), so once one waits,
 * every later one waits behind it.
 */
struct via_sq_pending {
	struct via_wqe wqe;
	struct via_desc_mr desc_mr;  /**< the region its descriptor was found in */
	uint8_t wait;              /**< enum via_sq_wait */
	bool no_desc;              /**< the descriptor was unusable (POST_DESC) */
	uint16_t nb_segs;          /**< VIA_SQ_READ: the scatter list */
	uint32_t start_seq;        /**< its frames: [start_seq, end_seq), a NAK's seq in */
	uint32_t end_seq;          /**< them names it (§10.2); VIA_SQ_ACK: done once the
				    *   peer expects this seq */
	uint32_t msg_id;           /**< VIA_SQ_READ: the read's id on the wire */
	uint32_t len;
	uint32_t imm;
	uint32_t status;           /**< VIP_STATUS_* op bits, error bits if any */
	uint32_t received;         /**< VIA_SQ_READ: bytes placed so far */
	/** VIA_SQ_READ: a copy of the data segments, a list of its shard's
	 *  read_lists (dp_mem.c) */
	struct via_dp_seg *segs;
	/** frames still point into the message's memory: it completes only
	 *  once they are freed (dp_zc.c), whatever @c wait says */
	struct via_zc *zc;
};

/** An RDMA Read this VI answers (the target side of §9.6.1, op RDMAREAD). */
struct via_rdma_resp {
	/** the answer: READ_RESP frames of @c src (msg.segs points there
	 *  while it is framed), msg.off of them framed so far */
	struct via_dp_msg msg;
	struct via_dp_seg src;     /**< what the request asked for */
	uint32_t seq;              /**< the request's frame: a refusal's NAK names it */
};

#define VIA_MAX_READS 16   /**< RDMA Reads outstanding per VI, each direction */
#define VIA_IDLE_ERRORS 8  /**< asynchronous errors an Idle VI keeps (VIA §5.1) */
#define VIA_REL_MAX_FRAMES 2048  /**< frames of one message on a reliable level */
#define VIA_WIRE_HDR_LEN 48      /**< sizeof(struct via_wire_hdr), for DPDK-free code */

/**
 * The reliable transport of a connected VI (dp_rel.c; docs/wire-format.md):
 * go-back-N over per-connection frame sequence numbers, cumulative ACKs,
 * retransmission on a timeout with exponential backoff and bounded retries.
 */
struct via_vi_rel {
	struct rte_mbuf **win;     /**< frames the peer has not received, at seq & (win_size - 1) */
	uint32_t win_size;         /**< power of two; 0 until a reliable connection (dp_mem.c) */
	uint32_t snd_una;          /**< oldest frame the peer has not received */
	uint32_t snd_nxt;          /**< next frame to send */
	uint32_t snd_placed;       /**< the peer placed every frame before it (RR completions) */
	uint32_t probe_nxt;        /**< snd_nxt when the last probe went: its token */
	uint32_t reply_token;      /**< receiver: the token of the probe to answer */
	uint32_t behind_reads;     /**< frames sent since the oldest RDMA Read not yet answered */
	uint64_t rto_at;           /**< retransmission deadline, timer cycles; 0: none */
	uint32_t rto_us;
	uint8_t retries;
	uint8_t dupacks;
	bool recovering;           /**< a fast retransmission of snd_una is out */
	bool ack_due;              /**< receiver: acknowledge in this iteration */
	bool reply_due;            /**< receiver: that ACK answers a PROBE */
	bool probing;              /**< a probe is unanswered */
	uint64_t heard_at;         /**< timer cycles: last valid frame from the peer */
	uint32_t rcv_nxt;          /**< receiver: next frame expected */
	/** receiver, Reliable Reception: frames taken in order but not placed
	 *  yet, behind an RDMA Read of the peer still to answer (dp_resp.c) */
	struct rte_mbuf **park;
	uint32_t park_head, park_tail;  /**< free-running; capacity park_size */
	uint32_t park_size;        /**< 0 until a Reliable Reception connection (dp_mem.c) */
};

/**
 * The send queue's held completions (dp_comp.c), a FIFO on every
 * reliability level: completions leave in posting order.
 */
struct via_vi_sq {
	struct via_sq_pending *pend;
	uint32_t head, tail;       /**< free-running; capacity @c size */
	uint32_t size;             /**< power of two; 0 until a connection (dp_mem.c) */
	uint32_t reads;            /**< RDMA Reads waiting for their answer */
};

/** The peer's RDMA Reads this VI answers, oldest first (dp_resp.c). */
struct via_vi_reads {
	struct via_rdma_resp q[VIA_MAX_READS];
	uint32_t head, tail;       /**< free-running */
};

struct via_vi {
	TAILQ_ENTRY(via_vi) link;
	TAILQ_ENTRY(via_vi) rel_link;   /**< in shard->rel_vis while listed */
	TAILQ_ENTRY(via_vi) req_link;   /**< in the CM's list while via_cm_handshaking() */
	bool rel_listed;
	TAILQ_ENTRY(via_vi) polled_link; /**< in shard->polled_vis while polled_listed */
	bool polled_listed;
	uint64_t polled_until;          /**< timer cycles: back to doorbells after */
	uint64_t turn_iteration;        /**< its shard's iteration of its last turn */
	uint32_t bell;                  /**< doorbell bit in the owner's segment */
	struct via_shard *shard;        /**< the poll lcore that serves it */
	struct via_session *owner;
	uint32_t id;
	uint32_t cookie;                /**< the client's, for CQ entries and errors */
	uint32_t state;                 /**< VIP_VI_STATE (VIA §5) */
	/** its attributes; while Connected (and in Error) max_transfer is the
	 *  size granted for the connection (VIA §9.10.5), requested_transfer
	 *  the one it asked for (0: not connected since), back in attr when it
	 *  is Idle again */
	struct via_ctl_vi_attr attr;
	uint32_t requested_transfer;
	struct via_vi_conn conn;
	struct via_vi_rx rx;
	struct via_vi_rel rel;
	struct via_vi_sq sq;
	struct via_vi_reads answers;
	struct via_vi_tx tx;
	uint32_t tx_msg_id;
	uint32_t tx_seq;
	/** bytes this VI may still send in the current round robin turn; below
	 *  zero it owes for the message that overran its last turn (dp.c) */
	int64_t tx_deficit;
	/** asynchronous errors raised while Idle, reported when the consumer
	 *  connects the VI (VIA §5.1); the rest of a burst is dropped */
	struct via_async_error idle_errors[VIA_IDLE_ERRORS];
	uint8_t nb_idle_errors;
	struct via_cq *cq[VIA_WQ_COUNT];
	uint32_t wq_capacity;
	/** bytes of its ring entries: sizeof(struct via_wqe), or a line
	 *  entry's (struct via_wqe_line, then inline data), the VI's choice */
	uint32_t entry_size;
	uint64_t shm_off;
	uint64_t shm_len;
	struct via_ring wq[VIA_WQ_COUNT];  /**< viad's consumer views */
	struct via_shm_vi *sh;
	/** line entries: the first line of the entry each queue took last,
	 *  copied out of the ring before anything reads it (via_desc_take) */
	struct via_wqe_line taken[VIA_WQ_COUNT];
	/** line entries: each queue's completions written so far, which is
	 *  the ring index of the next one (completions go in ring order) */
	uint32_t completed[VIA_WQ_COUNT];
	/** completions of each queue whose wait word waits for the end of
	 *  its shard's iteration (via_shard.owed lists the VI while any does) */
	uint32_t owed[VIA_WQ_COUNT];
};

/** Whether @p vi's rings hold line entries (struct via_wqe_line). */
static inline bool
via_vi_lines(const struct via_vi *vi)
{
	return vi->entry_size >= VIA_WQE_LINE_SIZE;
}

/**
 * Ring @p vi's doorbell from viad's side: its turn comes with the others'
 * (work left for a later iteration, a polled send ring with posts, a post
 * that may have found its ring polled and not rung).
 */
static inline void
via_dp_ring_again(struct via_vi *vi)
{
	struct via_session *s = vi->owner;
	uint32_t w = vi->bell / 64;

	via_bell_ring(&s->bells[w], 1ull << (vi->bell % 64), &s->bell_summary[w / 64],
		      1ull << (w % 64));
}

/** Whether @p vi is in a handshake: requesting or accepting (enum via_cm_state). */
static inline bool
via_cm_handshaking(const struct via_vi *vi)
{
	return vi->conn.cm_state == VIA_CM_REQUESTING ||
	       vi->conn.cm_state == VIA_CM_PEER_REQUESTING ||
	       vi->conn.cm_state == VIA_CM_ACCEPTING ||
	       vi->conn.cm_state == VIA_CM_PEER_ACCEPTING;
}

/**
 * @return 0; -ENOENT (bad CQ id); -EPROTONOSUPPORT (reliability level);
 *         -EMSGSIZE (max transfer size); -EDOM (QoS); -ESRCH (ptag);
 *         -EOPNOTSUPP (RDMA Read); -ENOSPC (max_vi or segment full)
 */
int via_vi_create(struct viad *d, struct via_session *s, const struct via_ctl_vi_create_req *req,
		  struct via_vi **out);
/**
 * viad's consumer views of @p vi's rings in its segment (at vi->sh, of
 * vi->wq_capacity entries of vi->entry_size bytes), from their indices:
 * at VI_CREATE, when the rings are zero. @return 0, -EINVAL
 */
int via_vi_attach_rings(struct via_vi *vi);
/** @return 0, -ENOENT, -EBUSY (not Idle or descriptors still posted, VIA §9.3.2) */
int via_vi_destroy(struct viad *d, struct via_session *s, uint32_t id);
/** Free a VI whatever its state and queues: its owner is gone. */
void via_vi_free(struct viad *d, struct via_vi *vi);
/** @return as via_vi_create, plus -ENOENT and -EPERM (not Idle, VIA §9.8.2) */
int via_vi_set_attr(struct viad *d, struct via_session *s, uint32_t id,
		    const struct via_ctl_vi_attr *attr);
struct via_vi *via_vi_get(struct viad *d, struct via_session *s, uint32_t id);
/**
 * @p vi takes its doorbell bit (vi->bell) in its owner's session and the
 * shard that bit names (via_bell_shard: the shard count may differ from
 * the viad that chose the bit, after an upgrade).
 */
void via_vi_place(struct viad *d, struct via_vi *vi);
/** Whether the client's ring of @p wq holds no descriptor viad has not taken. */
bool via_vi_wq_empty(struct via_vi *vi, enum via_wq_kind wq);

/**
 * Report an asynchronous error of @p vi (VIA §9.9.1) to its session's error
 * handler; while the VI is Idle it is kept, and reported when the consumer
 * connects the VI (VIA §5.1).
 */
void via_vi_async_error(struct via_vi *vi, uint32_t code, uint32_t resource, uint32_t op,
			uint64_t desc_va);
/**
 * Move @p vi to @p state if Figure 5 of VIA §5 allows it; logs the change.
 * Leaving Idle for Pending Connect reports the errors kept while Idle.
 * @return 0, -EPERM (not a transition of the state diagram)
 */
int via_vi_set_state(struct via_vi *vi, uint32_t state, const char *why);
/** Name of a VIP_VI_STATE for logs. */
const char *via_vi_state_name(uint32_t state);

/* ---- dp.c: the data path (a poll lcore with its shard's lock, or the control thread with all) */


/**
 * Complete every descriptor posted on both work queues of @p vi with
 * DESC_FLUSHED (VIA §4.2, §9.4.5), e.g. on disconnect.
 */
void via_dp_flush(struct viad *d, struct via_vi *vi);
/** Forget @p vi's receive state (its descriptor goes back to nothing). */
void via_dp_vi_reset(struct via_vi *vi);

/* ---- cm.c: the connection manager (VIA §4, §5, §9.4) ------------------ */

/** @return 0, -ENOMEM */
int via_cm_init(struct viad *d);
void via_cm_fini(struct viad *d);
/** Drop what @p s had pending (listeners, requests it got). */
void via_cm_session_closed(struct viad *d, struct via_session *s);
/** Run timers; returns ms until the next one is due (-1: none). */
int via_cm_timers(struct viad *d, uint64_t now);

/** Deferred replies: a handler returning this has not answered yet. */
#define VIA_CTL_DEFERRED 1

/** Answer a deferred request of @p s (op and seq of the request). */
void via_ctl_reply(struct viad *d, struct via_session *s, unsigned op, uint32_t seq,
		   int status, const void *body);

/* ---- ctl.c: the control thread --------------------------------------- */

/**
 * Create the listening socket at conf.socket_path (removing a stale one;
 * -EADDRINUSE if a live viad answers there).
 */
int via_ctl_listen(struct viad *d, int *lfd);
/**
 * What the control thread needs besides its sockets: the access lists,
 * the host's resources, the guard, the reapers, telemetry's /viad/security.
 * @return 0, -errno (logged)
 */
int via_ctl_init(struct viad *d);
/**
 * Serve until SIGINT/SIGTERM (SIGUSR2 and the admin socket: an upgrade,
 * upgrade.c), the sessions already in d->session_list (adopted) included;
 * returns 0 after closing every session.
 */
int via_ctl_run(struct viad *d, int lfd);

/* ---- dp_poll.c: data-path lcores ----------------------------------------- */

/** Per-lcore data-path counters, summed on SMI_COUNTERS. */
struct via_poll_stats {
	uint64_t frames_rx;
	uint64_t frames_tx;
	uint64_t frames_dropped;   /**< not for us, corrupt, or for no connection */
	uint64_t frames_corrupt;   /**< CRC mismatch (subset of dropped) */
	uint64_t frames_unmatched; /**< for a Connected VI but not its connection: source
				    *   MAC, connection id or VI pair differ (subset of
				    *   dropped; forged or stale) */
	uint64_t cq_overruns;      /**< CQ entries lost to a full CQ (VIA §6.4.1) */
	uint64_t frames_retransmitted;
	uint64_t rto_expiries;     /**< retransmission timer expiries */
	uint64_t frames_tx_zero_copy; /**< frames whose data stayed in the client's pages */
	/* for operators (telemetry.c), not in VIP_DPDK_COUNTERS */
	uint64_t naks_tx;          /**< NAK frames sent (wire-format.md 11.6) */
	uint64_t naks_rx;          /**< NAK frames received for a connection */
	uint64_t frames_duplicate; /**< reliable levels: numbered frames taken before */
	uint64_t frames_out_of_order; /**< reliable levels: numbered frames after a gap */
	/** CONN_REQ frames answered with a cookie, nothing kept for them: a
	 *  first contact each, or a flood from forged source MACs (cm.c) */
	uint64_t cm_cookies_sent;
	/** requests from a source that proved it receives, refused for the
	 *  per-source or the global limit of held requests (cm.c) */
	uint64_t cm_requests_refused;
	/** a shard's pool had nothing left (dp_mem.c): an RDMA Read failed
	 *  with a Transport Error (no scatter list), or a message went copied
	 *  instead of zero copy (no tracker) */
	uint64_t pool_exhausted;
	uint64_t rx_bursts;        /**< port receive bursts that brought frames */
	uint64_t rx_burst_frames;  /**< the frames those bursts brought */
	uint64_t iterations;       /**< poll iterations */
	uint64_t busy_iterations;  /**< iterations that found work */
	uint64_t busy_cycles;      /**< timer cycles spent in iterations that found work */
	uint64_t started_at;       /**< timer cycles when the lcore began polling; 0: not yet */
	/** per NIC (its index): frames to its own address, which move in
	 *  memory and never cross its port; its counters add them */
	uint64_t nic_mem_frames[VIA_CONF_MAX_PORTS];
	uint64_t nic_mem_bytes[VIA_CONF_MAX_PORTS];
} __attribute__((aligned(64)));

/** lcore entry point; @p arg is the struct viad. Returns when stopping. */
int via_poll_main(void *arg);
/** Sum of every lcore's counters into @p c (the control thread's included). */
void via_poll_stats_sum(struct via_ctl_counters *c);
/**
 * Add the counters an upgrade carried over (the old viad's, summed) to the
 * calling lcore's, the control thread's: every sum counts them from now on.
 */
void via_poll_stats_carry(const struct via_poll_stats *carried);
/**
 * The counters of lcore @p lcore, written by that lcore only: read each
 * field with a relaxed atomic load.
 */
const struct via_poll_stats *via_poll_stats_of(unsigned lcore);
/** The counters of the calling lcore (a poll lcore or the control thread). */
struct via_poll_stats *via_poll_stats_here(void);

/* Per received frame: inline on the data path. */
/**
 * The VI a frame from @p src_mac on @p nic belongs to: VI @p dst_vi,
 * Connected, whose connection has that peer MAC, connection id and peer VI
 * (@p src_vi) (VIA §4.1). NULL otherwise; a frame for a Connected VI that
 * differs in source MAC, connection id or VI pair is forged or stale and
 * counts in @p st's frames_unmatched (design.md section 10, "Threat model").
 */
static inline struct via_vi *
via_vi_of_frame(struct viad *d, const struct via_nic *nic, const uint8_t src_mac[6],
		uint32_t dst_vi, uint32_t src_vi, uint32_t conn_id, struct via_poll_stats *st)
{
	struct via_vi *vi = via_idtab_lookup(&d->vis, dst_vi);

	if (vi == NULL || vi->owner->nic != nic || vi->state != VIP_STATE_CONNECTED)
		return NULL;
	if (vi->conn.id != conn_id || vi->conn.remote_vi != src_vi ||
	    memcmp(vi->conn.remote_mac, src_mac, 6) != 0) {
		st->frames_unmatched++;
		return NULL;
	}
	return vi;
}

/* ---- nic.c: ports as VI NICs ------------------------------------------ */

/** Open and start every configured port (an implicit loopback via0 if none). */
int via_nics_open(struct viad *d);
void via_nics_close(struct viad *d);
/** Fill the SMI_PORT reply for @p nic. */
void via_nic_port_info(const struct via_nic *nic, struct via_ctl_port_info *pi);

#endif /* VIAD_H */
