/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The upgrade image (docs/design.md section 18): what one viad hands the
 * next across exec, in a sealed memfd. A header, then records, each a
 * type, a length and a payload of explicit little structs below (never
 * viad's private structs copied whole: a field added there does not change
 * what an older image means). Fds are not in the image, only their
 * numbers: exec keeps them open (their close-on-exec flag cleared), and the
 * adopter judges each again by what it is.
 *
 * The adopter treats the image as untrusted input: via_image_parse()
 * checks the header, the checksum, every record's length, every enum and
 * every index against the image's own tables and limits, and every
 * reference between records, before anything is built from it
 * (image_adopt.c). It is libc only, fuzzed (tests/fuzz/fuzz_image.c).
 *
 * Compatibility: a viad adopts only an image of its own version
 * (via_image_version); any change of a record bumps VIA_IMAGE_VERSION. The
 * header's first 48 bytes keep their meaning in every version: a viad that
 * refuses an image still finds in them the binary to roll back to.
 */
#ifndef VIA_IMAGE_H
#define VIA_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "via_abi.h"
#include "via_ctl.h"

/** "VIADIMG\0" */
#define VIA_IMAGE_MAGIC UINT64_C(0x00474d4944414956)
/** The records' version this source writes and reads. */
#define VIA_IMAGE_VERSION 3u
/**
 * The version this build writes and adopts: VIA_IMAGE_VERSION, or one more
 * in the test build viad_image_next (meson: the rollback test), which must
 * refuse every image of this one (image_version.c).
 */
extern const uint32_t via_image_version;

/** Records at most, and bytes at most: a bound on what an adopter reads. */
#define VIA_IMAGE_MAX_BYTES (UINT64_C(1) << 32)

/** The image's header, at offset 0. */
struct via_image_hdr {
	/* stable in every version: */
	uint64_t magic;          /**< VIA_IMAGE_MAGIC */
	uint32_t version;        /**< via_image_version of the writer */
	uint32_t header_size;    /**< sizeof(struct via_image_hdr) */
	uint64_t total_len;      /**< header and records */
	uint32_t crc;            /**< CRC32C of the whole image with this field 0 */
	int32_t rollback_fd;     /**< O_PATH fd of the writer's binary (it adopts a refused image) */
	int32_t admin_fd;        /**< the viactl that asked, to answer; -1: a signal asked */
	uint32_t abi_version;    /**< VIA_ABI_VERSION: the clients' contract */
	int32_t pid;             /**< the writer: exec keeps it */
	uint32_t wire_version;   /**< VIA_WIRE_VERSION */
	/* this version's: */
	uint64_t frozen_ns;      /**< CLOCK_MONOTONIC when the data path stopped */
	uint32_t nb_records;
	uint32_t upgrades;       /**< handovers so far in this pid's life */
};
_Static_assert(sizeof(struct via_image_hdr) == 64, "via_image_hdr is an image format");
_Static_assert(offsetof(struct via_image_hdr, frozen_ns) == 48, "the stable part is 48 bytes");

/** A record's header; @c len payload bytes follow (a multiple of 8). */
struct via_image_rec {
	uint16_t type;           /**< enum via_img_type */
	uint16_t reserved;       /**< 0 */
	uint32_t len;
};
_Static_assert(sizeof(struct via_image_rec) == 8, "via_image_rec is an image format");

/** Record types, in the order a writer puts them (the parser requires it). */
enum via_img_type {
	VIA_IMG_DAEMON = 1,      /**< one, first */
	VIA_IMG_NIC,             /**< nb_nics, in index order */
	VIA_IMG_TABLE,           /**< one per enum via_img_table_kind */
	VIA_IMG_USER,
	VIA_IMG_SESSION,
	VIA_IMG_PTAG,
	VIA_IMG_PMEM,
	VIA_IMG_TPT,             /**< at most one per session, in the sessions' order */
	VIA_IMG_MR,
	VIA_IMG_CQ,
	VIA_IMG_VI,
	VIA_IMG_SQ_PEND,         /**< after its VI */
	VIA_IMG_FRAME,           /**< after its VI, in sequence order */
	VIA_IMG_CM_REQ,
	VIA_IMG_CM_LISTENER,
	VIA_IMG_REAP,            /**< at most one */
	VIA_IMG_TYPE_COUNT,
};

/** The id tables an image carries (their slots' generations included). */
enum via_img_table_kind {
	VIA_IMG_T_SESSIONS,
	VIA_IMG_T_PTAGS,
	VIA_IMG_T_MRS,
	VIA_IMG_T_CQS,
	VIA_IMG_T_VIS,
	VIA_IMG_T_PMEMS,
	VIA_IMG_T_CM_REQS,
	VIA_IMG_T_COUNT,
};

/** Counters of the poll lcores carried over (telemetry's and SMI's). */
enum via_img_poll_counter {
	VIA_IMG_PC_FRAMES_RX, VIA_IMG_PC_FRAMES_TX, VIA_IMG_PC_FRAMES_DROPPED,
	VIA_IMG_PC_FRAMES_CORRUPT, VIA_IMG_PC_FRAMES_UNMATCHED, VIA_IMG_PC_CQ_OVERRUNS,
	VIA_IMG_PC_FRAMES_RETRANSMITTED, VIA_IMG_PC_RTO_EXPIRIES, VIA_IMG_PC_FRAMES_TX_ZERO_COPY,
	VIA_IMG_PC_NAKS_TX, VIA_IMG_PC_NAKS_RX, VIA_IMG_PC_FRAMES_DUPLICATE,
	VIA_IMG_PC_FRAMES_OUT_OF_ORDER, VIA_IMG_PC_CM_COOKIES_SENT, VIA_IMG_PC_CM_REQUESTS_REFUSED,
	VIA_IMG_PC_COUNT,
};

/** VIA_IMG_DAEMON: the shapes everything else is checked against. */
struct via_img_daemon {
	uint32_t nb_nics;
	uint32_t max_desc_per_queue;
	uint32_t max_segments_per_desc;
	uint32_t max_discriminator_len;
	uint32_t max_cq_entries;
	int32_t listen_fd;       /**< the clients' socket */
	int32_t wake_fd;         /**< the pollers' eventfd: clients hold copies (WAKE_FD) */
	uint32_t nb_user_res;    /**< VIA_USER_RES_COUNT of the writer */
	uint64_t cm_key[2];
	uint64_t cm_flood_next_ms, cm_flood_cookies, cm_flood_refused;
	uint64_t mappings;
	uint64_t sec_fds_refused, sec_bus_errors, sec_programs_gone;
	struct via_ctl_counters counters;        /**< the control thread's */
	uint64_t poll[VIA_IMG_PC_COUNT];         /**< the poll lcores', summed */
};

/** VIA_IMG_NIC: a port, which the adopter must find again as it was. */
struct via_img_nic {
	char name[VIA_CTL_NAME_MAX];
	uint8_t mac[6];
	uint16_t mtu;
	uint32_t index;
	uint32_t reserved;
};

/** VIA_IMG_TABLE: an id table; @c nb_slots u32 slot ids follow (padded to 8). */
struct via_img_table {
	uint32_t table;          /**< enum via_img_table_kind */
	uint32_t capacity;
	uint32_t nb_slots;       /**< slots ever handed out */
	uint32_t reserved;
};

/** VIA_IMG_USER: what a uid's sessions hold (user.c). */
#define VIA_IMG_USER_RES_MAX 16
struct via_img_user {
	uint32_t uid;
	uint32_t refused;
	uint64_t used[VIA_IMG_USER_RES_MAX];
};

/** A ring's private side (struct via_ring): what viad knows of its indices. */
struct via_img_ring {
	uint32_t local;
	uint32_t cached_peer;
	uint32_t corrupt;
	uint32_t reserved;
};

/** VIA_IMG_SESSION; @c nb_extents struct via_img_extent follow (the arena's free list). */
struct via_img_session {
	uint32_t id;
	uint32_t nic;            /**< its NIC's index; unopened: UINT32_MAX */
	int32_t sock, pidfd, seg_fd, share_fd, mem_fd, witness_fd, in_fd;
	int32_t pid;
	uint32_t uid, gid;
	uint32_t nb_groups;
	uint32_t deferred;       /**< requests awaiting a deferred reply */
	uint8_t opened, seg_hugepages, in_fd_refused, errq_overflowed;
	uint8_t mem_gone_logged, copy_fault_logged, reserved[2];
	uint32_t fd_refusals_logged;
	uint32_t bell_off, bell_words;
	uint32_t reserved1;
	uint64_t errq_off;
	uint64_t seg_len;
	uint64_t in_place_bytes;
	struct via_img_ring errq;
	struct via_ctl_hdr in_hdr;   /**< a request partly read */
	uint32_t in_got;
	uint32_t nb_extents;
	uint8_t in_body[VIA_CTL_BODY_MAX];
	uint32_t groups[256];
};

struct via_img_extent {
	uint64_t off;
	uint64_t len;
};

/** VIA_IMG_PTAG */
struct via_img_ptag {
	uint32_t id;
	uint32_t session;
};

/** What a pmem record maps. */
enum via_img_pmem_kind {
	VIA_IMG_PMEM_ALLOC,      /**< provider memory: viad's memfd */
	VIA_IMG_PMEM_SHARE,      /**< a window of the session's share file */
	VIA_IMG_PMEM_OBJECT,     /**< a shared memfd the client passed */
	VIA_IMG_PMEM_SYSV,       /**< a SysV segment */
	VIA_IMG_PMEM_KIND_COUNT,
};

/** VIA_IMG_PMEM: provider memory and viad's views of client memory. */
struct via_img_pmem {
	uint32_t ref;            /**< its number in the image (1, 2, ...), for regions */
	uint32_t session;
	uint32_t id;             /**< ALLOC: its pmems id; else 0 */
	uint32_t kind;           /**< enum via_img_pmem_kind */
	int32_t fd;              /**< ALLOC, OBJECT; else -1 */
	int32_t shmid;           /**< SYSV */
	uint8_t hugepages;
	uint8_t reserved[7];
	uint64_t len;            /**< bytes mapped */
	uint64_t asked;          /**< ALLOC: the length asked for */
	uint64_t client_va;      /**< ALLOC: 0 until ALLOC_MAPPED; views: the first address */
	uint64_t offset;         /**< OBJECT, SYSV: into the object */
};

/**
 * VIA_IMG_TPT: a session's table of regions (via_abi.h, "The client's
 * table"; daemon/mr.c): where viad made it in the segment, its capacity,
 * and its windows, each a VIA_IMG_PMEM_SHARE record of the session. The
 * entries are the client's, in the segment; their handles name the
 * windows by index, so the windows keep their order.
 */
struct via_img_tpt {
	uint32_t session;
	uint32_t capacity;       /**< entries, a power of two */
	uint64_t off;            /**< the entries' offset in the segment */
	uint32_t nb_windows;
	uint32_t reserved;
	uint32_t window_ref[VIA_TPT_WINDOWS];  /**< the windows' pmem refs; 0 past nb_windows */
};

/** VIA_IMG_MR: a region of the translation and protection table. */
struct via_img_mr {
	uint32_t handle;
	uint32_t session;
	uint32_t ptag;
	uint32_t pmem_ref;       /**< 0: copied through the program's /proc/self/mem */
	uint64_t addr, len, page_base, page_len;
	uint8_t rdma_write, rdma_read, writable, reserved[5];
};

/** VIA_IMG_CQ */
struct via_img_cq {
	uint32_t id;
	uint32_t session;
	uint32_t capacity;
	uint32_t reserved;
	uint64_t shm_off, shm_len;
	uint64_t slots_off;      /**< the slots in use (a resize moves them) */
	struct via_img_ring ring;
};

/** A data segment of a descriptor (struct via_dp_seg without its region pointer). */
struct via_img_seg {
	uint64_t va;
	uint32_t len;
	uint32_t handle;
};

/** An RDMA Read the VI answers (struct via_rdma_resp). */
struct via_img_answer {
	uint64_t va;
	uint32_t handle, len, msg_id, seq, sent, reserved;
};

/**
 * VIA_IMG_VI: a VI and its connection, receive state, transport, held
 * completions' FIFO shape, the peer's Reads it answers and the message
 * being framed; @c rx_nb_segs then @c tx_nb_segs struct via_img_seg follow.
 */
struct via_img_vi {
	uint32_t id, session, cookie, state;
	struct via_ctl_vi_attr attr;
	uint32_t requested_transfer;
	uint32_t bell;
	uint32_t cq[2];
	uint32_t wq_capacity;
	uint32_t nb_idle_errors;
	uint64_t shm_off, shm_len;
	struct via_img_ring wq[2];
	struct via_async_error idle_errors[8];
	/* the connection (struct via_vi_conn) */
	uint32_t conn_id, remote_vi, frame_payload, max_transfer;
	uint8_t remote_mac[6];
	uint16_t reply_op;
	struct via_ctl_vi_attr remote_attr;
	uint32_t cm_state;
	int32_t result;
	uint64_t nomatch_since_ms, heard_ms, deadline_ms, next_retry_ms;
	uint32_t cm_cookie, reply_seq;
	struct via_ctl_addr local, remote;
	/* the receive state (struct via_vi_rx) */
	uint32_t rx_state, rx_msg_id, rx_expected_off, rx_imm, rx_status, rx_last_msg_id;
	uint32_t rx_capacity;
	uint16_t rx_nb_segs;
	uint8_t rx_delivered_any, reserved0;
	struct via_wqe rx_wqe;
	/* the transport (struct via_vi_rel); its frames are VIA_IMG_FRAME records */
	uint32_t win_size, snd_una, snd_nxt, rcv_nxt;
	uint32_t rto_us;
	uint8_t retries, dupacks, recovering, ack_due, probing, reserved1[3];
	/* the held completions' FIFO (struct via_vi_sq); its entries are
	 * VIA_IMG_SQ_PEND records, head first */
	uint32_t sq_size, sq_head, sq_tail, sq_reads;
	/* the peer's Reads it answers */
	uint32_t ans_head, ans_tail;
	uint32_t reserved3;
	struct via_img_answer answers[16];
	/* the message being framed (struct via_vi_tx) */
	uint8_t tx_active, tx_opcode;
	uint16_t tx_flags;
	uint16_t tx_nb_segs;
	uint16_t reserved2;
	uint32_t tx_imm, tx_cs_imm, tx_msg_id, tx_first_seq, tx_total, tx_off, tx_status;
	uint32_t tx_rdma_handle;
	uint64_t tx_rdma_va;
	struct via_wqe tx_wqe;
	uint32_t tx_msg_counter;     /**< vi->tx_msg_id */
	uint32_t tx_seq;
	int64_t tx_deficit;
	/* the rings' entries (version 3): sizeof(struct via_wqe), or line
	 * entries (struct via_vi: entry_size, completed, taken) */
	uint32_t entry_size;
	uint32_t completed[2];       /**< completions written, per queue */
	uint32_t reserved4;
	struct via_wqe_line taken[2]; /**< the first line of the entry each queue took last */
};

/** VIA_IMG_SQ_PEND: a held send completion; @c nb_segs struct via_img_seg follow. */
struct via_img_sq_pend {
	uint32_t vi;
	uint8_t wait;            /**< enum via_sq_wait */
	uint8_t no_desc;
	uint16_t nb_segs;
	uint32_t start_seq, end_seq, msg_id, len, imm, status, received;
	uint32_t reserved;
	struct via_wqe wqe;
};

/** VIA_IMG_FRAME: an unacknowledged frame of a VI, whole; @c len bytes follow. */
struct via_img_frame {
	uint32_t vi;
	uint32_t seq;
	uint32_t len;
	uint32_t reserved;
};

/** VIA_IMG_CM_REQ: an incoming connection request (cm.c, struct via_cm_req). */
struct via_img_cm_req {
	uint32_t id;
	uint32_t state;
	uint32_t nic;
	uint32_t session;        /**< offered to: its session; else 0 */
	uint8_t remote_mac[6];
	uint8_t reserved[2];
	uint32_t remote_vi, conn_id, vi, reason;
	uint64_t expires_ms;
	uint8_t info[144];       /**< struct via_wire_conn, as the requester sent it */
};

/** VIA_IMG_CM_LISTENER: a VipConnectWait in progress. */
struct via_img_cm_listener {
	uint32_t session;
	uint32_t nic;
	uint32_t seq;
	uint32_t reserved;
	uint64_t deadline_ms;
	struct via_ctl_conn_wait_req req;
};

/** VIA_IMG_REAP: fds the reapers had not closed yet; @c count int32 follow (padded). */
struct via_img_reap {
	uint32_t count;
	uint32_t reserved;
};

/* every record a multiple of 8 bytes, with no hidden padding (-Wpadded clean) */
_Static_assert(sizeof(struct via_img_daemon) == 448, "an image format");
_Static_assert(sizeof(struct via_img_nic) == 80, "an image format");
_Static_assert(sizeof(struct via_img_table) == 16, "an image format");
_Static_assert(sizeof(struct via_img_user) == 136, "an image format");
_Static_assert(sizeof(struct via_img_session) == 1688, "an image format");
_Static_assert(sizeof(struct via_img_extent) == 16, "an image format");
_Static_assert(sizeof(struct via_img_ptag) == 8, "an image format");
_Static_assert(sizeof(struct via_img_pmem) == 64, "an image format");
_Static_assert(sizeof(struct via_img_tpt) == 24 + 4 * VIA_TPT_WINDOWS, "an image format");
_Static_assert(sizeof(struct via_img_tpt) % 8 == 0, "an image format");
_Static_assert(sizeof(struct via_img_mr) == 56, "an image format");
_Static_assert(sizeof(struct via_img_cq) == 56, "an image format");
_Static_assert(sizeof(struct via_img_seg) == 16, "an image format");
_Static_assert(sizeof(struct via_img_vi) == 1368, "an image format");
_Static_assert(sizeof(struct via_img_sq_pend) == 56, "an image format");
_Static_assert(sizeof(struct via_img_frame) == 16, "an image format");
_Static_assert(sizeof(struct via_img_cm_req) == 192, "an image format");
_Static_assert(sizeof(struct via_img_cm_listener) == 176, "an image format");
_Static_assert(sizeof(struct via_img_reap) == 8, "an image format");

/* what the parser bounds besides the daemon record's numbers */
#define VIA_IMG_MAX_SEGS 1024     /**< [limits] max_segments_per_desc at most */
#define VIA_IMG_MAX_FRAME 16384   /**< bytes of one frame: an MTU of 9000 and room */
#define VIA_IMG_MAX_WINDOW 65536  /**< entries of a send window or a held FIFO */
#define VIA_IMG_ERRQ_SLOTS 256    /**< session.c's error queue */
#define VIA_IMG_TPT_MAX 65536     /**< entries of a client's table: limits.table_regions at most */

/** One record found by the parser: its header's type and its payload. */
struct via_img_ref {
	const void *p;
	uint32_t len;
};

/**
 * An image parsed and checked: pointers into the caller's buffer, valid as
 * long as it is. Arrays hold the records of each type in image order.
 */
struct via_image {
	const struct via_image_hdr *hdr;
	const struct via_img_daemon *daemon;
	const struct via_img_table *tables[VIA_IMG_T_COUNT];
	const uint32_t *slots[VIA_IMG_T_COUNT];  /**< each table's slot ids */
	struct via_img_ref *recs[VIA_IMG_TYPE_COUNT];   /**< malloc'd, nb_recs[t] entries */
	uint32_t nb_recs[VIA_IMG_TYPE_COUNT];
	/** per VI record: the index of its first SQ_PEND and FRAME record (its
	 *  counts are sq_tail - sq_head and snd_nxt - snd_una) */
	uint32_t *vi_sq_first, *vi_frame_first;
	const struct via_img_reap *reap;
	const int32_t *reap_fds;
	int32_t *fds;            /**< every fd the records name, sorted (malloc'd) */
	uint32_t nb_fds;
};

/**
 * Check the stable part of an image's header only: magic, size, checksum.
 * @return 0; -EINVAL (not an image, cut short or corrupted), -E2BIG
 */
int via_image_check_header(const void *buf, size_t len, const char **why);
/**
 * Parse and check an image of @p len bytes at @p buf (8-byte aligned):
 * header, version (@p version), checksum, records, limits, references.
 * @return 0 and @p img (via_image_free() it); -EPROTO (another version or
 *         ABI: compatible only with the writer), -EINVAL (malformed: *@p why
 *         names what), -ENOMEM
 */
int via_image_parse(const void *buf, size_t len, uint32_t version, struct via_image *img,
		    const char **why);
void via_image_free(struct via_image *img);

/** CRC32C (Castagnoli) of @p len bytes, continuing @p crc (start: 0). */
uint32_t via_image_crc(uint32_t crc, const void *buf, size_t len);

/** A growing image being written (image_save.c). */
struct via_image_buf {
	uint8_t *p;
	size_t len, cap;
	uint32_t nb_records;
	int err;                 /**< -ENOMEM once an append failed, -EFAULT (a frame's pages gone) */
	int32_t *fds;            /**< every fd the records name (via_image_fd) */
	uint32_t nb_fds, cap_fds;
};

/** Note that the image names fd @p fd (< 0: none): it must cross the exec. */
void via_image_fd(struct via_image_buf *ib, int fd);
/** Free what @p ib holds. */
void via_image_buf_free(struct via_image_buf *ib);

/** Start an image: room for its header. ib->err says whether it failed. */
void via_image_begin(struct via_image_buf *ib);
/**
 * End an image: its header is @p h with the format's fields set (magic,
 * sizes, records, checksum), copied to the start. @return ib->err
 */
int via_image_finish(struct via_image_buf *ib, struct via_image_hdr *h);

/**
 * Append a record of @p type: @p fixed bytes of @p a, then @p var bytes of
 * @p b (may be NULL with @p var 0), padded to 8. @return its payload in the
 * buffer (valid until the next append), NULL once out of memory
 */
void *via_image_append(struct via_image_buf *ib, enum via_img_type type, const void *a,
		       size_t fixed, const void *b, size_t var);

#endif /* VIA_IMAGE_H */
