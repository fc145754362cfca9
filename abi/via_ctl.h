/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The control protocol between libvipl-dpdk and viad: fixed-size messages
 * over a Unix stream socket, one request and one reply at a time per session
 * (the rdma-core "command over a socket" model; the data path never uses it).
 *
 * Every message is a via_ctl_hdr followed by a body whose size is fixed by
 * the op and direction (table in via_ctl.c). A reply echoes op and seq and
 * carries 0 or -errno in status; on error its body is still full-sized
 * (zeroed) so the framing never depends on the outcome. Replies that hand
 * over memory (OPEN, ALLOC) carry exactly one fd in SCM_RIGHTS, and so does
 * a CLIENT_FD request, which hands viad one of the client's own fds, and a
 * MEM_REGISTER request of a range in a shared object (VIA_CTL_MEM_OBJECT_FD).
 * viad refuses, closes and logs any other fd (docs/design.md section 10).
 *
 * Not installed; versioned with VIA_ABI_VERSION.
 */
#ifndef VIA_CTL_H
#define VIA_CTL_H

#include <stddef.h>
#include <stdint.h>

#include "via_abi.h"

/** "VIA" plus the ABI version in the low byte. */
#define VIA_CTL_COOKIE (0x56494100u | (VIA_ABI_VERSION & 0xffu))

#define VIA_CTL_NAME_MAX     64   /**< NIC name buffer, NUL included */
#define VIA_CTL_HOSTNAME_MAX 256  /**< name-service host name, NUL included */

/** Control operations; the table in via_ctl.c gives each its body sizes. */
enum via_ctl_op {
	VIA_CTL_OPEN = 1,     /**< first message of a session: VipOpenNic */
	VIA_CTL_PTAG_CREATE,
	VIA_CTL_PTAG_DESTROY,
	VIA_CTL_MEM_REGISTER,
	VIA_CTL_MEM_DEREGISTER,
	VIA_CTL_MEM_QUERY,
	VIA_CTL_MEM_SET_ATTR,
	VIA_CTL_ALLOC,        /**< VipDpdkAllocMem: reply carries the fd */
	VIA_CTL_ALLOC_MAPPED, /**< where the client mapped an allocation */
	VIA_CTL_FREE,
	VIA_CTL_CQ_CREATE,
	VIA_CTL_CQ_DESTROY,
	VIA_CTL_VI_CREATE,
	VIA_CTL_VI_DESTROY,
	VIA_CTL_VI_QUERY,
	VIA_CTL_VI_SET_ATTR,
	VIA_CTL_NS_BY_NAME,
	VIA_CTL_NS_BY_ADDR,
	VIA_CTL_SMI_COUNTERS,
	VIA_CTL_SMI_PORT,
	VIA_CTL_CONN_WAIT,    /**< VipConnectWait: deferred until a request or timeout */
	VIA_CTL_CONN_ACCEPT,
	VIA_CTL_CONN_REJECT,
	VIA_CTL_CONN_REQUEST, /**< VipConnectRequest: deferred until answered or timeout */
	VIA_CTL_DISCONNECT,
	VIA_CTL_PEER_REQUEST, /**< VipConnectPeerRequest: returns at once */
	VIA_CTL_PEER_DONE,    /**< -EAGAIN while pending */
	VIA_CTL_PEER_WAIT,    /**< deferred until connected or timeout */
	VIA_CTL_CQ_RESIZE,
	VIA_CTL_WAKE_FD,      /**< the eventfd that wakes a sleeping poller */
	VIA_CTL_CLIENT_FD,    /**< the request carries one of the client's fds */
	VIA_CTL_MEM_TABLE,    /**< a window of the share file for the client's table */
	VIA_CTL_OP_COUNT,
};

#define VIA_CTL_F_REPLY 0x1u

struct via_ctl_hdr {
	uint32_t cookie;   /**< VIA_CTL_COOKIE */
	uint16_t op;       /**< enum via_ctl_op */
	uint16_t flags;    /**< VIA_CTL_F_REPLY on replies */
	uint32_t seq;      /**< chosen by the client, echoed by viad */
	int32_t  status;   /**< replies: 0 or -errno; requests: 0 */
	uint32_t len;      /**< body bytes that follow */
	uint32_t reserved; /**< zero */
};
_Static_assert(sizeof(struct via_ctl_hdr) == 24, "via_ctl_hdr is ABI");

/** VI attributes as they cross the socket (VIP_VI_ATTRIBUTES, fixed width). */
struct via_ctl_vi_attr {
	uint16_t reliability;     /**< one VIP_SERVICE_* bit */
	uint8_t  rdma_write;      /**< bool */
	uint8_t  rdma_read;       /**< bool */
	uint32_t max_transfer;
	uint32_t qos;
	uint32_t ptag;            /**< viad ptag id; 0 = none */
};
_Static_assert(sizeof(struct via_ctl_vi_attr) == 16, "via_ctl_vi_attr is ABI");

/** Memory attributes as they cross the socket (VIP_MEM_ATTRIBUTES). */
struct via_ctl_mem_attr {
	uint32_t ptag;
	uint8_t  rdma_write;
	uint8_t  rdma_read;
	uint8_t  reserved[2];
};
_Static_assert(sizeof(struct via_ctl_mem_attr) == 8, "via_ctl_mem_attr is ABI");

/** Static NIC attributes (VIP_NIC_ATTRIBUTES less the pointer), from viad.conf. */
struct via_ctl_nic_info {
	char     name[VIA_CTL_NAME_MAX];
	uint8_t  mac[6];
	uint16_t mtu;
	uint32_t hardware_version;
	uint32_t provider_version;
	uint32_t max_discriminator_len;
	uint32_t max_register_regions;
	uint32_t max_vi;
	uint32_t max_desc_per_queue;
	uint32_t max_segments_per_desc;
	uint32_t max_cq;
	uint32_t max_cq_entries;
	uint32_t max_transfer_size;
	uint32_t max_ptags;
	uint32_t reliability_support;  /**< mask of VIP_SERVICE_* */
	uint32_t rdma_read_support;    /**< bool */
	uint32_t reserved;
	uint64_t max_register_bytes;
	uint64_t max_register_block_bytes;
};
_Static_assert(sizeof(struct via_ctl_nic_info) == 144, "via_ctl_nic_info is ABI");

struct via_ctl_open_req {
	char     nic_name[VIA_CTL_NAME_MAX];
	uint32_t abi_version;
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_open_req) == 72, "ABI");

struct via_ctl_open_rep {               /* + fd of the session segment */
	struct via_ctl_nic_info nic;
	uint64_t shm_size;
	uint32_t session_id;
	uint32_t port_index;
};
_Static_assert(sizeof(struct via_ctl_open_rep) == 160, "ABI");

/** Requests and replies that carry only an object id. */
struct via_ctl_id {
	uint32_t id;
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_id) == 8, "ABI");

/**
 * Where viad finds a registered range of ordinary memory (docs/design.md,
 * section 7). Provider memory needs no placement: viad knows its
 * allocations. viad reaches client memory only through what the client
 * hands it and with the client's own rights (docs/design.md section 10):
 * an fd it passes, a SysV segment its credentials may use, or its own
 * /proc/self/mem; never through what /proc/PID says about it.
 */
enum via_ctl_mem_placement {
	/** Copied through the client's /proc/self/mem (CLIENT_FD PROC_MEM); @c reason says why. */
	VIA_CTL_MEM_COPIED = 0,
	/** In place: every page of the range is mapped, shared, from the
	 *  session's share file (CLIENT_FD SHARE_FILE) at offset = address. */
	VIA_CTL_MEM_IN_PLACE = 1,
	/** The range lies in one shared mapping of a memfd sealed against
	 *  shrinking, at @c offset in it: the request carries an fd of that
	 *  memfd, whose access mode says whether viad may write it. */
	VIA_CTL_MEM_OBJECT_FD = 2,
	/** The range lies in SysV shared memory segment @c shmid, at @c offset
	 *  in it: viad attaches it as far as the client's credentials allow. */
	VIA_CTL_MEM_SYSV = 3,
};

/** Why a range is copied, not in place: for viad's log line. */
enum via_ctl_mem_copied_reason {
	VIA_CTL_COPIED_NONE = 0,
	VIA_CTL_COPIED_FILE,        /**< a private file mapping (its pages are the file's) */
	VIA_CTL_COPIED_READ_ONLY,   /**< read-only pages */
	VIA_CTL_COPIED_SHARED,      /**< a shared mapping of some other object */
	VIA_CTL_COPIED_STACK,       /**< the main stack, or the registering thread's */
	VIA_CTL_COPIED_HIGH,        /**< above the share file's end */
	VIA_CTL_COPIED_NO_SWITCH,   /**< no userfaultfd write protection to switch safely */
	VIA_CTL_COPIED_SWITCH_FAILED, /**< the switch failed (a log line in the client says why) */
	VIA_CTL_COPIED_UNSEALED,    /**< a shared object that may shrink (not a sealed memfd, not SysV) */
	VIA_CTL_COPIED_NO_FD,       /**< a memfd the program holds no fd of any more */
	VIA_CTL_COPIED_REASON_COUNT,
};

/** MEM_REGISTER flags. */
#define VIA_CTL_MEM_READ_ONLY 0x1u  /**< some page of the range cannot be written (VIA §9.5.3) */

struct via_ctl_mem_register_req {       /* + the object's fd for VIA_CTL_MEM_OBJECT_FD */
	uint64_t addr;
	uint64_t len;
	struct via_ctl_mem_attr attr;
	uint32_t placement;      /**< enum via_ctl_mem_placement */
	uint32_t reason;         /**< enum via_ctl_mem_copied_reason when COPIED */
	uint64_t offset;         /**< OBJECT_FD, SYSV: where addr's page is in the object */
	int32_t  shmid;          /**< SYSV: the segment */
	uint32_t flags;          /**< VIA_CTL_MEM_* */
};
_Static_assert(sizeof(struct via_ctl_mem_register_req) == 48, "ABI");

/**
 * The share file of in-place memory: one per client process, sparse, this
 * long (past every user address of x86-64 and AArch64 with 4-level tables),
 * sealed against shrinking so that viad's mappings of it never fault.
 */
#define VIA_SHARE_FILE_SIZE (UINT64_C(1) << 48)

/** What a CLIENT_FD request's fd is; each is given once per session. */
enum via_ctl_client_fd_kind {
	/** The process's share file (memfd, F_SEAL_SHRINK, VIA_SHARE_FILE_SIZE long). */
	VIA_CTL_FD_SHARE_FILE = 1,
	/** The process's own /proc/self/mem, opened O_RDWR: copied regions are
	 *  moved through it, and it dies with the address space (exec). */
	VIA_CTL_FD_PROC_MEM,
	/** The read end of a pipe whose write end the library holds close-on-exec:
	 *  its hang-up tells viad the program was replaced or has gone. */
	VIA_CTL_FD_EXEC_WITNESS,
};

struct via_ctl_client_fd_req {          /* + the fd */
	uint32_t kind;           /**< enum via_ctl_client_fd_kind */
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_client_fd_req) == 8, "ABI");

/**
 * MEM_TABLE (via_abi.h, "The client's table of regions"): viad maps the
 * window of the session's share file that holds @c addr, for entries of
 * the client's table, and keeps it till the session ends; at the first
 * call it makes the table. The window's bytes count against the session's
 * limits.max_in_place_bytes and its user's in-place bytes and mappings,
 * the table's capacity against the user's regions: what the client
 * registers through the table stays within them, unseen by viad.
 * Errors: -EINVAL (no share file given, @c addr past it), -EOPNOTSUPP
 * (limits.table_regions is 0), -ENOSPC (a limit, VIA_TPT_WINDOWS, or the
 * segment is full), -ENOMEM.
 */
struct via_ctl_mem_table_req {
	uint64_t addr;
};
_Static_assert(sizeof(struct via_ctl_mem_table_req) == 8, "ABI");

struct via_ctl_mem_table_rep {
	uint64_t table_off;      /**< offset of struct via_tpt_entry[capacity] in the segment */
	uint64_t window_va;      /**< the window's first address */
	uint64_t window_len;
	uint32_t capacity;       /**< entries, a power of two */
	uint32_t window;         /**< its index (via_tpt_entry.window) */
};
_Static_assert(sizeof(struct via_ctl_mem_table_rep) == 32, "ABI");

/** MEM_DEREGISTER and MEM_QUERY requests: the region is named by both. */
struct via_ctl_mem_ref {
	uint64_t addr;
	uint32_t handle;
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_mem_ref) == 16, "ABI");

struct via_ctl_mem_set_attr_req {
	struct via_ctl_mem_ref ref;
	struct via_ctl_mem_attr attr;
};
_Static_assert(sizeof(struct via_ctl_mem_set_attr_req) == 24, "ABI");

struct via_ctl_alloc_req {
	uint64_t len;
};
_Static_assert(sizeof(struct via_ctl_alloc_req) == 8, "ABI");

struct via_ctl_alloc_rep {              /* + fd of the allocation */
	uint64_t len;            /**< rounded up to the page size used */
	uint32_t id;
	uint32_t hugepages;      /**< bool: backed by hugepages */
};
_Static_assert(sizeof(struct via_ctl_alloc_rep) == 16, "ABI");

struct via_ctl_alloc_mapped_req {
	uint64_t client_va;
	uint32_t id;
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_alloc_mapped_req) == 16, "ABI");

struct via_ctl_cq_create_req {
	uint32_t entries;
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_cq_create_req) == 8, "ABI");

struct via_ctl_cq_create_rep {
	uint64_t shm_off;        /**< offset of the via_shm_cq in the segment */
	uint32_t id;
	uint32_t capacity;       /**< ring slots (entries rounded up to 2^n) */
};
_Static_assert(sizeof(struct via_ctl_cq_create_rep) == 16, "ABI");

/**
 * CQ_RESIZE (VipResizeCQ, VIA §9.7.3, §11.3.14). viad allocates a slot
 * array of the new capacity, copies into it the entries not consumed yet,
 * [cons, prod) by its own prod and the @c cons of this request, switches
 * its producer to it and frees the old array; all under the data-path lock,
 * so no completion is produced meanwhile and none is lost. The via_shm_cq
 * block itself (indices, wait and notify words) does not move.
 *
 * The client must not consume between reading @c cons and switching its
 * consumer view to the reply (the library holds the CQ's consumer lock for
 * the whole call): what it consumed before is not copied, what it did not
 * is, and it resumes at @c cons in the new array, so an entry is delivered
 * once. viad checks @c cons against its own prod (at most the old capacity
 * behind it, never ahead): anything else is -EINVAL.
 *
 * Errors: -ENOENT (no such CQ), -EINVAL (entries 0, or an impossible cons),
 * -ENOSPC (entries above max_cq_entries or below the entries queued now, or
 * the segment is full: the CQ is then unchanged).
 */
struct via_ctl_cq_resize_req {
	uint32_t id;
	uint32_t entries;        /**< VipResizeCQ's EntryCount */
	uint32_t cons;           /**< the client's consumer index, see above */
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_cq_resize_req) == 16, "ABI");

struct via_ctl_cq_resize_rep {
	uint64_t slots_off;      /**< offset of the new struct via_cqe[capacity] */
	uint32_t capacity;       /**< ring slots (entries rounded up to 2^n) */
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_cq_resize_rep) == 16, "ABI");

struct via_ctl_vi_create_req {
	struct via_ctl_vi_attr attr;
	uint32_t send_cq;        /**< CQ id or 0 */
	uint32_t recv_cq;        /**< CQ id or 0 */
	uint32_t cookie;         /**< echoed in CQ entries and async errors */
	/** bytes of a work queue ring entry: 0 (struct via_wqe), or line
	 *  entries (via_wqe_line_size_ok(): struct via_wqe_line and inline data) */
	uint32_t entry_size;
};
_Static_assert(sizeof(struct via_ctl_vi_create_req) == 32, "ABI");

struct via_ctl_vi_create_rep {
	uint64_t shm_off;        /**< offset of the via_shm_vi in the segment */
	uint32_t id;
	uint32_t wq_capacity;    /**< slots per work queue ring */
	uint32_t bell;           /**< the VI's doorbell bit (via_shm_header) */
	uint32_t entry_size;     /**< bytes of each ring entry: sizeof(struct via_wqe) or the line size asked */
};
_Static_assert(sizeof(struct via_ctl_vi_create_rep) == 24, "ABI");

struct via_ctl_vi_query_rep {
	struct via_ctl_vi_attr attr;
	uint32_t state;          /**< VIP_VI_STATE */
	uint32_t send_empty;     /**< bool */
	uint32_t recv_empty;     /**< bool */
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_vi_query_rep) == 32, "ABI");

struct via_ctl_vi_set_attr_req {
	struct via_ctl_vi_attr attr;
	uint32_t id;
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_vi_set_attr_req) == 24, "ABI");

struct via_ctl_ns_by_name_req {
	char     name[VIA_CTL_HOSTNAME_MAX];
	uint32_t index;
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_ns_by_name_req) == 264, "ABI");

struct via_ctl_mac {
	uint8_t mac[6];
	uint8_t reserved[2];
};
_Static_assert(sizeof(struct via_ctl_mac) == 8, "ABI");

struct via_ctl_ns_by_addr_rep {
	char name[VIA_CTL_HOSTNAME_MAX];
};
_Static_assert(sizeof(struct via_ctl_ns_by_addr_rep) == 256, "ABI");

/** SMI_COUNTERS reply: viad-wide counters; the field list is VIP_DPDK_COUNTERS. */
struct via_ctl_counters {
	uint64_t sessions;
	uint64_t sessions_closed;
	uint64_t vis_created;
	uint64_t vis_destroyed;
	uint64_t cqs_created;
	uint64_t cqs_destroyed;
	uint64_t ptags_created;
	uint64_t ptags_destroyed;
	uint64_t regions_registered;
	uint64_t regions_deregistered;
	uint64_t bytes_registered;
	uint64_t reclaimed_vis;
	uint64_t reclaimed_cqs;
	uint64_t reclaimed_ptags;
	uint64_t reclaimed_regions;
	uint64_t reclaimed_allocs;
	uint64_t clients_disconnected_for_violation;
	uint64_t control_errors;
	uint64_t frames_rx;
	uint64_t frames_tx;
	uint64_t frames_dropped;
	uint64_t frames_corrupt;
	uint64_t cq_overruns;
	uint64_t frames_retransmitted;
	uint64_t rto_expiries;
	uint64_t frames_tx_zero_copy;
	uint64_t regions_in_place;
	uint64_t regions_copied;
};
_Static_assert(sizeof(struct via_ctl_counters) == 28 * 8, "ABI");

/** SMI_PORT reply: the session's port; the field list is VIP_DPDK_PORT_INFO. */
struct via_ctl_port_info {
	char     name[32];
	char     glue[32];
	uint8_t  mac[6];
	uint16_t mtu;
	uint32_t link_up;
	uint32_t link_speed_mbps;
	uint64_t rx_packets;
	uint64_t tx_packets;
	uint64_t rx_bytes;
	uint64_t tx_bytes;
	uint64_t rx_errors;
	uint64_t tx_errors;
};
_Static_assert(sizeof(struct via_ctl_port_info) == 128, "ABI");

/** A VIA network address (VIA §9.10.8): a MAC and a discriminator. */
struct via_ctl_addr {
	uint8_t mac[6];
	uint8_t disc_len;
	uint8_t reserved;
	uint8_t disc[64];
};
_Static_assert(sizeof(struct via_ctl_addr) == 72, "ABI");

/** Timeouts in milliseconds; this value waits forever (VIP_INFINITE). */
#define VIA_CTL_INFINITE UINT32_MAX

#define VIA_CTL_FILTER_HOST 0x1  /**< CONN_WAIT: only requests from filter.mac */
#define VIA_CTL_FILTER_DISC 0x2  /**< CONN_WAIT: ... whose own discriminator is filter.disc */

struct via_ctl_conn_wait_req {
	struct via_ctl_addr local;   /**< the discriminator to wait on */
	struct via_ctl_addr filter;  /**< a specific remote (flags say which parts) */
	uint32_t timeout_ms;
	uint32_t flags;              /**< VIA_CTL_FILTER_* */
};
_Static_assert(sizeof(struct via_ctl_conn_wait_req) == 152, "ABI");

struct via_ctl_conn_wait_rep {
	struct via_ctl_addr remote;
	struct via_ctl_vi_attr remote_attr;
	uint32_t conn;               /**< viad's id of the pending request */
	uint32_t reserved;
};
_Static_assert(sizeof(struct via_ctl_conn_wait_rep) == 96, "ABI");

struct via_ctl_conn_accept_req {
	uint32_t conn;
	uint32_t vi;
};
_Static_assert(sizeof(struct via_ctl_conn_accept_req) == 8, "ABI");

/** CONN_REQUEST and PEER_REQUEST. */
struct via_ctl_conn_request_req {
	struct via_ctl_addr local;
	struct via_ctl_addr remote;
	uint32_t vi;
	uint32_t timeout_ms;
};
_Static_assert(sizeof(struct via_ctl_conn_request_req) == 152, "ABI");

/** Largest body of any message: receive buffers are this big. */
#define VIA_CTL_BODY_MAX 512

/**
 * Check a received header: cookie, op, direction, reserved bits and that len
 * is exactly the body size the table gives for this op and direction.
 *
 * @param hdr     header as received (already copied out of the socket)
 * @param reply   true when a reply is expected, false for a request
 * @return 0, -EPROTO (cookie or version mismatch, reserved bits set, wrong
 *         direction), -EOPNOTSUPP (unknown op), -EMSGSIZE (len is not the
 *         op's body size).
 */
int via_ctl_check(const struct via_ctl_hdr *hdr, int reply);

/** Body size of @p op's request (@p reply false) or reply; 0 if unknown op. */
size_t via_ctl_body_size(unsigned op, int reply);

/** Whether @p op's reply carries an fd in SCM_RIGHTS. */
int via_ctl_reply_has_fd(unsigned op);

/** Whether @p op's request may carry an fd in SCM_RIGHTS (viad refuses one with any other). */
int via_ctl_request_has_fd(unsigned op);

/** Printable op name for logs; "unknown" for ops out of range. */
const char *via_ctl_op_name(unsigned op);

/** Fill @p hdr for a request or reply of @p op with its table body size. */
void via_ctl_hdr_init(struct via_ctl_hdr *hdr, unsigned op, int reply,
		      uint32_t seq, int32_t status);

/**
 * Send one message (header + body), optionally with one fd.
 * Retries on EINTR; MSG_NOSIGNAL so a dead peer is an error, not a signal.
 *
 * @return 0, or -errno of sendmsg (-EPIPE/-ECONNRESET when the peer is gone).
 */
int via_ctl_send(int sock, const struct via_ctl_hdr *hdr, const void *body, int fd);

/**
 * Receive one message: the header, validated with via_ctl_check(), then its
 * body into @p body (at least VIA_CTL_BODY_MAX bytes). An fd that arrives is
 * stored in *fd_out (-1 if none, or if @p fd_out is NULL the fd is closed: a
 * peer cannot leak descriptors into us).
 *
 * @return 0; -ECONNRESET on EOF; -errno of recvmsg; or via_ctl_check()'s
 *         error (the stream is then out of sync and must be closed).
 */
int via_ctl_recv(int sock, struct via_ctl_hdr *hdr, void *body, int reply, int *fd_out);

#endif /* VIA_CTL_H */
