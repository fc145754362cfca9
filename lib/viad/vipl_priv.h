/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * libvipl-dpdk internals. The library is the VI User Agent of VIA §2.1.3:
 * control calls go to viad over the session socket (via_ctl.h); the data
 * path touches only the rings in the session's shared segment (via_abi.h).
 *
 * Errors are -errno inside the library (0 or -errno; a function that
 * returns something else says what in its comment); the Vip* entry points
 * convert, once, with via_vip_return() (via_return.h). VIP_RETURN comes only from the API
 * boundary: the entry points, the inline data path they are
 * (vipl_dpdk_dp.h), and the static helpers that are the shared body of
 * two or more entry points (queue_wait, conn_wait, peer_result, ...),
 * whose comments name the calls they implement.
 */
#ifndef VIPL_PRIV_H
#define VIPL_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <vipl.h>
#include <vipl_dpdk.h>

#include "via_abi.h"
#include "via_ctl.h"
#include "via_hmap.h"
#include "via_return.h"
#include "via_ring.h"
#include "vipl_dpdk_dp.h"

#define VIPL_EXPORT __attribute__((visibility("default")))

/* ---- vipl_handle.c: handles are ids, never raw pointers --------------- */

/*
 * The objects handles name are never freed (vipl_dpdk_dp.h): a destroyed
 * one keeps its slot in the handle table and waits for the next object of
 * its type and shape. Its owner sets it up, publishes its handle, retires
 * the handle when it is destroyed (under the locks that calls on it take)
 * and gives it back.
 */

/**
 * An object of @p type for a new life: one given back, of the same type
 * and @p shape, as its last owner left it (*@p reused: the owner sets up
 * again what it needs, minding that a call racing the destroy of the last
 * life may still read the words vipl_dpdk_dp.h says it reads), else a new
 * one of @p size bytes, zeroed. It has this life's id (the cookie viad
 * echoes) and serial, and no handle yet.
 * @return the object, or NULL (no memory, or 2^22 - 1 objects exist)
 */
void *vipl_obj_get(enum vipl_dpdk_obj_type type, size_t size, uint32_t shape, bool *reused);
/** vipl_obj_get of an object none of whose fields a racing call reads (a
 *  NIC, a connection request): zeroed past its header either way. */
void *vipl_obj_get_zeroed(enum vipl_dpdk_obj_type type, size_t size);
/** @p obj is set up: its handle becomes valid (store-release). @return it */
void *vipl_handle_publish(struct vipl_dpdk_obj *obj);
/** Retire the handle of @p obj: later lookups fail (VIA §9.3.2). */
void vipl_handle_retire(struct vipl_dpdk_obj *obj);
/** Give @p obj back, its handle retired, for the next object of its type and shape. */
void vipl_obj_put(struct vipl_dpdk_obj *obj);
/** The handle of this life of @p obj (also once retired). */
void *vipl_handle_of(const struct vipl_dpdk_obj *obj);
/** libvipl.so's tag for this provider's handles (vipl_provider.h), before any handle is made. */
void vipl_handle_set_tag(uint8_t tag);

/* ---- vipl_nic.c: the session ------------------------------------------ */

struct vipl_alloc;
struct vipl_table;
struct vipl_cq;
struct vipl_vi;
LIST_HEAD(vipl_alloc_list, vipl_alloc);
LIST_HEAD(vipl_cq_list, vipl_cq);
LIST_HEAD(vipl_vi_list, vipl_vi);

struct vipl_call;
LIST_HEAD(vipl_call_list, vipl_call);

struct vipl_notify_q;
TAILQ_HEAD(vipl_notify_list, vipl_notify_q);

#define VIPL_LOCAL_ERRORS 16
#define VIPL_IDLE_ERRORS 8    /**< errors an Idle VI keeps (VIA §5.1), as viad's */

struct vipl_nic {
	struct vipl_dpdk_obj obj;
	int sock;
	/*
	 * Control calls of many threads share the socket: each sends under
	 * ctl_lock and waits for the reply with its seq; one waiter at a time
	 * reads the socket (reader_active) and hands replies to their callers,
	 * so a thread blocked in VipConnectWait never holds up another's call.
	 */
	pthread_mutex_t ctl_lock;
	pthread_cond_t ctl_cond;
	struct vipl_call_list calls; /**< calls waiting for their reply */
	bool reader_active;
	uint32_t seq;
	bool dead;                   /**< viad went away: every call fails */

	pthread_t provider;          /**< runs error handlers (VIA §9.9.1) */
	/* errors the library itself raises (VI_OVERRUN), under lock */
	struct via_async_error local_errs[VIPL_LOCAL_ERRORS];
	unsigned nb_local_errs;
	bool provider_started;
	bool closing;
	struct via_ring errq;        /**< consumer view of the error queue */
	struct via_shm_errq *errq_sh;

	struct via_shm_header *shm;  /**< the session segment */
	uint64_t *bells;             /**< the VIs' doorbell bits (via_abi.h) */
	int wake_fd;                 /**< wakes viad's poller when it sleeps */
	int witness_fd;              /**< its close at exec tells viad (give_program_fds) */
	bool share_file_given;       /**< viad has the process's share file (under lock) */
	uint64_t shm_size;
	struct via_ctl_nic_info info;

	pthread_mutex_t lock;        /**< the lists and the callback below */
	struct vipl_alloc_list allocs;
	struct via_hmap regions;     /**< memory handle -> struct vipl_region * */
	/** every region's range by handle, for inline data (vipl_dpdk_dp.h) */
	struct vipl_dpdk_mr_cache mrs;
	struct via_hmap ptags;       /**< ptag id -> entries of the table using it (vipl_mem.c) */
	struct vipl_table *table;    /**< the client's table of regions, NULL until used */
	struct vipl_cq_list cqs;
	struct vipl_vi_list vis;
	void (*error_handler)(VIP_PVOID, VIP_ERROR_DESCRIPTOR *);
	VIP_PVOID error_context;
	bool ns_open;

	/*
	 * Completion notification (vipl_error.c): the notify thread, started
	 * at the first registration that has to wait, runs the handlers of
	 * VipSendNotify, VipRecvNotify and VipCQNotify.
	 */
	pthread_mutex_t notify_lock; /**< everything below, every vipl_notify_q */
	pthread_cond_t notify_cond;  /**< signalled when a handler returns */
	struct vipl_notify_list notify_armed; /**< queues with registrations */
	pthread_t notifier;
	bool notifier_started;
	bool notify_closing;         /**< the notify thread is to exit */
	bool notify_closed;          /**< VipCloseNic cancelled everything */
	const void *notify_running;  /**< the VI or CQ whose handler runs now */
};

/**
 * One control call: send @p req (its size from the op table), wait for the
 * reply into @p rep. @p fd_out receives the fd of ALLOC/OPEN replies.
 * @return viad's status (0 or -errno), or -ECONNRESET when viad is gone
 */
int vipl_ctl_call(struct vipl_nic *nic, unsigned op, const void *req, void *rep, int *fd_out);

/**
 * vipl_ctl_call() with a copy of @p fd_in (-1: none) passed along with the
 * request (the caller keeps its own): CLIENT_FD, and MEM_REGISTER of a range
 * in a shared object. @return as vipl_ctl_call()
 */
int vipl_ctl_call_fd(struct vipl_nic *nic, unsigned op, const void *req, int fd_in, void *rep,
		     int *fd_out);

/**
 * CLIENT_FD: hand viad a copy of @p fd (the caller keeps its own).
 * @return as vipl_ctl_call(): -EINVAL (a bad fd of its kind), -EALREADY
 */
int vipl_ctl_give_fd(struct vipl_nic *nic, enum via_ctl_client_fd_kind kind, int fd);

/**
 * The process's registered pages (vipl_pages.c): locked (VIA §9.5.3),
 * counted, and shared with viad in place where their kind allows it.
 */
struct vipl_pages_placement {
	uint32_t placement;    /**< enum via_ctl_mem_placement */
	uint32_t reason;       /**< enum via_ctl_mem_copied_reason when copied */
	uint32_t flags;        /**< VIA_CTL_MEM_READ_ONLY */
	/** OBJECT_FD: an fd of the memfd mapped there (the caller closes it);
	 *  -1 otherwise */
	int obj_fd;
	int32_t shmid;         /**< SYSV: the segment */
	uint64_t offset;       /**< OBJECT_FD, SYSV: the range's offset in the object */
};

/**
 * Count a registration of the pages [@p base, @p base + @p len) (page
 * aligned): lock them and, where each was not registered yet, move them
 * into the share file in place, keeping their address and contents; a range
 * in one shared mapping of a sealed memfd or SysV segment names the object.
 * @return 0 and @p out; -EINVAL (a hole or unreadable pages in the range),
 *         -ENOMEM (mlock failed: RLIMIT_MEMLOCK)
 */
int vipl_pages_acquire(uintptr_t base, size_t len, struct vipl_pages_placement *out);

/** Uncount a registration; in-place pages no registration covers any more
 *  stay in place, idle (made private again with VIPL_DPDK_REG_CACHE=0),
 *  copied ones are unlocked. */
void vipl_pages_release(uintptr_t base, size_t len);
/** Every idle in-place page made private again and unlocked (VipCloseNic). */
void vipl_pages_evict_idle(void);

/** The share file's fd (open once vipl_pages_acquire placed a range in place), or -1. */
int vipl_pages_share_file(void);

/** The NIC of @p handle, or NULL. */
struct vipl_nic *vipl_nic_get(VIP_NIC_HANDLE handle);

/** Log a line on stderr: "libvipl-dpdk: ...". */
void vipl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));


/* ---- vipl_mem.c --------------------------------------------------------- */

/** viad's ptag id of a VIP_PROTECTION_HANDLE (0 for NULL). */
uint32_t vipl_ptag_id(VIP_PROTECTION_HANDLE ptag);
/** Free the library side of regions and allocations at VipCloseNic. */
void vipl_mem_close(struct vipl_nic *nic);

/* ---- completion notification (vipl_error.c) ------------------------------ */

struct vipl_notify;                  /* one registration */

enum vipl_notify_kind {
	VIPL_NOTIFY_SEND = VIA_WQ_SEND,  /**< VipSendNotify */
	VIPL_NOTIFY_RECV = VIA_WQ_RECV,  /**< VipRecvNotify */
	VIPL_NOTIFY_CQ,                  /**< VipCQNotify */
};

/**
 * The notification side of a work queue or CQ: its registrations, oldest
 * first, each served by one completion. Zeroed (calloc) means "never armed";
 * everything is under nic->notify_lock.
 */
struct vipl_notify_q {
	TAILQ_ENTRY(vipl_notify_q) link; /**< on nic->notify_armed while head != NULL */
	struct vipl_notify *head;
	struct vipl_notify **tailp;
	struct vipl_nic *nic;        /**< NULL until the first registration */
	void *owner;                 /**< the vipl_vi or vipl_cq */
	uint32_t *flag;              /**< its notify word in the segment (via_abi.h) */
	uint8_t kind;                /**< enum vipl_notify_kind */
	bool suspended;              /**< VipDestroyCQ in progress: not served */
};

/**
 * Send/RecvNotify (@p kind VIA_WQ_SEND/RECV) of @p vi: hand the head to
 * @p fn now if it is complete, else at the next completion.
 * @return 0, -ENOMEM (no memory, no thread), -ECONNRESET (viad gone, or
 *         the NIC closing)
 */
int vipl_notify_vi(struct vipl_vi *vi, enum via_wq_kind kind, VIP_PVOID ctx,
		   VIP_VI_CALLBACK fn);
/** CQNotify of @p cq; as vipl_notify_vi. */
int vipl_notify_cq(struct vipl_cq *cq, VIP_PVOID ctx, VIP_CQ_CALLBACK fn);
/**
 * The owner of @p nq is destroyed: its registrations go without running,
 * and a handler of the owner running on the notify thread is waited for
 * (unless the caller is that handler). Its notify word is not touched: viad
 * has freed it.
 */
void vipl_notify_cancel(struct vipl_notify_q *nq);
/** Stop serving @p nq and wait for a running handler of its owner (VipDestroyCQ). */
void vipl_notify_suspend(struct vipl_notify_q *nq);
/** Serve @p nq again (the destroy failed). */
void vipl_notify_resume(struct vipl_notify_q *nq);

/* ---- vipl_cq.c, vipl_vi.c ----------------------------------------------- */

struct vipl_cq {
	struct vipl_dpdk_cq dp;      /**< first: what the data path reads (vipl_dpdk_dp.h) */
	LIST_ENTRY(vipl_cq) link;
	struct vipl_nic *nic;
	uint32_t id;                 /**< viad's CQ id */
	/**
	 * Never moves, even on resize. VipResizeCQ holds dp.lock across its
	 * control call, so that nobody consumes between the index it reports
	 * to viad and its switch to the new slots (via_ctl.h, CQ_RESIZE).
	 */
	struct via_shm_cq *sh;
	struct vipl_notify_q nq;     /**< VipCQNotify */
};

struct vipl_vi {
	struct vipl_dpdk_vi dp;      /**< first: what the data path reads (vipl_dpdk_dp.h) */
	LIST_ENTRY(vipl_vi) link;
	struct vipl_nic *nic;
	uint32_t id;                 /**< viad's VI id */
	struct vipl_cq *cq[VIA_WQ_COUNT];
	struct via_shm_vi *sh;
	struct vipl_notify_q nq[VIA_WQ_COUNT]; /**< VipSendNotify / VipRecvNotify */
	/* VIA §5.1, for the errors the library raises itself (viad keeps its
	 * own, vi.c), under nic->lock: */
	/** not Idle as its consumer sees it: a connect call made, and no
	 *  failed connect or VipDisconnect since */
	bool left_idle;
	struct via_async_error idle_errs[VIPL_IDLE_ERRORS]; /**< raised while Idle */
	unsigned nb_idle_errs;
};

/** Region @p handle of @p nic is [@p va, @p va + @p len) (VipRegisterMem),
 *  or, with @p len 0, is no more (VipDeregisterMem); under the NIC's lock. */
void vipl_mr_cache_set(struct vipl_nic *nic, uint32_t handle, uint64_t va, uint64_t len);

/**
 * Set up work queue @p q of a VI for a new life: its ring @p sh and @p
 * slots of @p ring_cap entries of @p entry_size bytes (struct via_wqe, or
 * line entries) in the segment, room for @p posted_cap descriptors posted
 * and not dequeued (a power of two, the VI object's shape), viad's
 * completion count read every @p count_every polls that find the head not
 * done (a power of two).
 * @return 0, -EINVAL (ring), -ENOMEM
 */
int vipl_wq_init(struct vipl_dpdk_wq *q, struct via_shm_wq *sh, void *slots, uint32_t ring_cap,
		 uint32_t entry_size, uint32_t posted_cap, uint32_t count_every);
/** No descriptor posted and not yet dequeued (VIA §9.3.2, §9.8.3). */
bool vipl_wq_empty(struct vipl_dpdk_wq *q);

/** A pending connection request (VipConnectWait's ConnHandle). */
struct vipl_conn {
	struct vipl_dpdk_obj obj;
	struct vipl_nic *nic;
	uint32_t id;                 /**< viad's id */
};

/** Block until *@p word != @p val, @p ms elapse (UINT32_MAX: no limit) or a wake. */
void vipl_futex_wait(uint32_t *word, uint32_t val, uint32_t ms);

/** Wake every waiter on @p word. */
void vipl_futex_wake(uint32_t *word);

/** Whether viad is still there for @p nic (its segment says so, its socket is up). */
bool vipl_nic_alive(struct vipl_nic *nic);

/**
 * Raise an asynchronous error of @p vi that the library detected itself
 * (VIP_ERROR_VI_OVERRUN): it is handed to the error handler on the
 * provider thread, like viad's (VIA §9.9.1); while the VI is Idle it is
 * kept, and reported when the consumer tries to connect the VI (§5.1).
 */
void vipl_vi_async_error(struct vipl_vi *vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *desc,
			 uint32_t op);
/**
 * The consumer tries to connect @p vi (VipConnectRequest, VipConnectAccept,
 * VipConnectPeerRequest): it leaves Idle, and the errors it kept while
 * Idle go to the error handler now (VIA §5.1: "reported when the VI
 * Consumer attempts to connect the VI").
 */
void vipl_vi_connect_called(struct vipl_vi *vi);
/** @p vi is Idle again: its connect call failed, or VipDisconnect. */
void vipl_vi_idle_again(struct vipl_vi *vi);

/**
 * Start the provider thread that runs error handlers; stop it and the
 * notify thread, cancelling every pending notification (VipCloseNic).
 * @return 0, -ENOMEM (no thread)
 */
int vipl_provider_start(struct vipl_nic *nic);
void vipl_provider_stop(struct vipl_nic *nic);

/** The CQ of @p handle on any NIC, or NULL. */
struct vipl_cq *vipl_cq_get(VIP_CQ_HANDLE handle);
/** Retire and free every CQ / VI of @p nic (VipCloseNic; viad frees its side). */
void vipl_cq_close_all(struct vipl_nic *nic);
void vipl_vi_close_all(struct vipl_nic *nic);

#endif /* VIPL_PRIV_H */
