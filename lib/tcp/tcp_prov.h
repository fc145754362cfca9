/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The tcp provider's objects and the calls between its files
 * (docs/provider-tcp.md).
 *
 * Concurrency: each NIC has one mutex, nic->lock, that guards everything
 * of the NIC (its objects, queues, sockets' protocol state). Every VIPL
 * call takes it to resolve its handle (handle.c) and holds it while it
 * works; blocking calls sleep on a condition variable of the NIC, which
 * releases it. The NIC's progress thread (progress.c) takes it for each
 * batch of socket events. Sockets are non-blocking: nothing waits for the
 * network with the lock held. The only thing done outside the lock is
 * what may take long: VipConnectRequest's connect and handshake (on a
 * socket of its own) and calls of the consumer's error handler.
 *
 * Errors are -errno inside the provider (0 or -errno; a function that
 * returns something else says what in its comment); via_vip_return()
 * (via_return.h, shared with libvipl-dpdk) turns them into a VIP_RETURN at
 * the VIPL boundary. VIP_RETURN comes only from
 * that boundary: the tcp_* calls of the provider's ops table, and the
 * static helpers that are the shared body of two or more of them (post,
 * dequeue, wait_dequeue, cq_take, ns_enter, ...), whose comments name the
 * calls they implement.
 */
#ifndef VIPL_TCP_PROV_H
#define VIPL_TCP_PROV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <vipl.h>

#include "via_idtab.h"
#include "via_return.h"
#include "wire.h"

/* ---- limits, as VipQueryNic states them (VIA §9.10.4) ------------------- */

#define TCP_NIC_NAME "tcp0"
#define TCP_MAX_NICS 16                  /**< NICs open at once in a process (4 handle bits) */
#define TCP_MAX_VI 1024                  /**< VIA §8.1 recommends 1024 */
#define TCP_MAX_CQ 1024
#define TCP_MAX_PTAGS TCP_MAX_VI         /**< VIA §3.2.2.1: at least one per VI */
#define TCP_MAX_CQ_ENTRIES 65536u        /**< VIA §3.4: at least 1024 */
#define TCP_MAX_DESC_PER_QUEUE 4096u     /**< a power of two: the rings' largest size */
#define TCP_MAX_SEGS 256u                /**< data segments per descriptor (VIA §6.1.1.1: >= 252) */
#define TCP_MAX_TRANSFER (1u << 20)      /**< bytes per descriptor (VIA §6.1.1.2: >= 32 KiB) */
#define TCP_MAX_REGIONS 65535u           /**< registered regions per NIC */
#define TCP_MAX_REGISTER_BYTES (1ull << 40)
#define TCP_BACKLOG 128u                 /**< incoming requests held, answered or not */
#define TCP_MAX_LINGER 256u              /**< closing streams drained at once */
/** Objects of one NIC's table: VIs, CQs, tags, requests, closing streams. */
#define TCP_MAX_OBJS (TCP_MAX_VI + TCP_MAX_CQ + TCP_MAX_PTAGS + TCP_BACKLOG + TCP_MAX_LINGER)
/** Answers a VI may owe its peer: one per RDMA Read the peer's send queue can hold, and NAKs. */
#define TCP_MAX_CTL (TCP_MAX_DESC_PER_QUEUE + 64u)
#define TCP_NB_CONDS 16u                 /**< condition variables of a NIC, by object id */

_Static_assert(sizeof(void *) == 8, "handles keep the tag, slot and id in 64 bits");
_Static_assert((TCP_MAX_DESC_PER_QUEUE & (TCP_MAX_DESC_PER_QUEUE - 1)) == 0,
	       "work queue rings are powers of two");

/* ---- objects ------------------------------------------------------------ */

enum tcp_obj_type {
	TCP_OBJ_NIC = 1,
	TCP_OBJ_VI,
	TCP_OBJ_CQ,
	TCP_OBJ_PTAG,
	TCP_OBJ_CONN,
	TCP_OBJ_LINGER,
};

/** The head of every object in a NIC's table. */
struct tcp_obj {
	uint32_t type; /**< enum tcp_obj_type */
	uint32_t id;   /**< its id in nic->objs */
};

struct tcp_nic;
struct tcp_cq;

/** A protection tag (VIA §3.2.2.1). */
struct tcp_ptag {
	struct tcp_obj obj;
	uint32_t users; /**< VIs and regions that carry it (VIA §9.5.2) */
};

/** A registered memory region (VIA §3.2.1); its handle is its id in nic->mrs. */
struct tcp_mr {
	uint64_t va;
	uint64_t len;
	struct tcp_ptag *ptag;
	bool writable;   /**< every page was writable at registration (VIA §9.5.3) */
	bool rdma_write; /**< EnableRdmaWrite */
	bool rdma_read;  /**< EnableRdmaRead */
};

/** What a memory access needs of a region (VIA §3.2.2, §6.3.2). */
enum tcp_access {
	TCP_LOCAL_READ = 0x1,
	TCP_LOCAL_WRITE = 0x2,
	TCP_REMOTE_READ = 0x4,
	TCP_REMOTE_WRITE = 0x8,
};

/** A buffer named by a (virtual address, memory handle) pair. */
struct tcp_seg {
	uint64_t va;
	uint32_t len;
	VIP_MEM_HANDLE mh;
};

/** A posted descriptor, as the provider keeps it (VIA §6.2). */
struct tcp_wqe {
	VIP_DESCRIPTOR *desc;
	VIP_MEM_HANDLE mh;
	uint32_t status; /**< VIP_STATUS_* once complete (DONE set), else 0 */
	uint32_t seq;    /**< an RDMA Read: the number of its READ_REQ */
	uint32_t total;  /**< an RDMA Read: the bytes it asked */
	uint8_t op;      /**< VIP_CONTROL_OP_* as posted (the op bits of a flush) */
	bool issued;     /**< an RDMA Read whose READ_REQ went out */
	bool untouchable; /**< the descriptor's own memory failed its check: never written */
};

/**
 * A work queue (VIA §6.3.1.1): FIFO; entries head..next-1 were processed
 * (done, or an RDMA Read waiting for its answer), next..tail-1 wait.
 * Positions run free; the ring holds cap entries (a power of two).
 */
struct tcp_wq {
	struct tcp_wqe *ring;
	uint32_t cap;
	uint32_t head; /**< the oldest not yet dequeued (VipSendDone / VipRecvDone) */
	uint32_t next; /**< the next to process */
	uint32_t tail; /**< where the next post goes */
	struct tcp_cq *cq; /**< its completion queue, or NULL (VIA §2.4) */
	bool recv;         /**< the receive queue */
};

/** An answer a VI owes its peer, sent between its data frames. */
struct tcp_ctl {
	STAILQ_ENTRY(tcp_ctl) link;
	struct tcp_wire_hdr hdr; /**< host order; READ_RESP: rdma_va/handle/arg of the request */
};

/** The sending side of a connection (tx.c). */
struct tcp_tx {
	bool busy;        /**< a frame is partly written */
	bool want_out;    /**< the socket is polled for EPOLLOUT */
	bool has_wqe;     /**< the frame carries send-queue entry wqe_pos */
	uint32_t wqe_pos;
	uint32_t seq;     /**< the number of the next data frame */
	uint32_t reads;   /**< RDMA Reads issued and not answered */
	struct tcp_wire_hdr hdr;           /**< the frame's header, network order */
	struct iovec iov[TCP_MAX_SEGS + 1];
	unsigned iov_pos, iov_cnt;
	size_t left;      /**< bytes of the frame not yet written */
	/** the payload's buffers, checked again when regions change */
	struct tcp_seg segs[TCP_MAX_SEGS];
	unsigned nb_segs;
	uint32_t access;  /**< what they need (enum tcp_access) */
	uint64_t mr_gen;  /**< nic->mr_gen when they were checked */
	STAILQ_HEAD(, tcp_ctl) ctl;
	uint32_t nb_ctl;
};

enum tcp_rx_phase {
	TCP_RX_HDR,     /**< reading a frame header */
	TCP_RX_DATA,    /**< placing a payload */
	TCP_RX_DISCARD, /**< reading a payload that goes nowhere */
};

/** What ends a payload. */
enum tcp_rx_end {
	TCP_RX_END_NONE,
	TCP_RX_END_RECV,      /**< complete receive entry wqe_pos: a Send arrived */
	TCP_RX_END_WRITE_IMM, /**< complete receive entry wqe_pos: an RDMA Write with immediate */
	TCP_RX_END_READ,      /**< complete send-queue entry wqe_pos: an RDMA Read's data arrived */
};

/** The receiving side of a connection (rx.c). */
struct tcp_rx {
	enum tcp_rx_phase phase;
	struct tcp_wire_hdr hdr; /**< the frame's header: network order until decoded */
	size_t got;              /**< header bytes read */
	uint32_t left;           /**< payload bytes still to read */
	uint32_t seq;            /**< the number the next data frame must carry */
	enum tcp_rx_end end;
	uint32_t wqe_pos;
	struct iovec iov[TCP_MAX_SEGS];
	unsigned iov_pos, iov_cnt;
	struct tcp_seg segs[TCP_MAX_SEGS];
	unsigned nb_segs;
	uint32_t access;
	uint64_t mr_gen;
};

/** A VI (VIA §2.1.1, §5). */
struct tcp_vi {
	struct tcp_obj obj;
	struct tcp_nic *nic;
	VIP_VI_STATE state;
	VIP_RELIABILITY_LEVEL reliability;
	uint32_t max_transfer;
	VIP_QOS qos;
	struct tcp_ptag *ptag;
	bool rdma_write; /**< EnableRdmaWrite */
	bool rdma_read;  /**< EnableRdmaRead */
	struct tcp_wq sq, rq;
	int fd;    /**< the connection's stream while Connected, else -1 */
	int cm_fd; /**< the stream of a VipConnectRequest in progress (shut down to abort it) */
	struct tcp_tx tx;
	struct tcp_rx rx;
};

/** An entry of a completion queue (VIA §2.4). */
struct tcp_cqe {
	uint32_t vi_id;
	bool recv;
};

/** A completion queue. */
struct tcp_cq {
	struct tcp_obj obj;
	struct tcp_cqe *ring;
	uint32_t cap, head, count;
	uint32_t users; /**< work queues associated (VIA §9.7.2) */
};

enum tcp_conn_state {
	TCP_CONN_HELLO, /**< reading the requester's HELLO */
	TCP_CONN_READY, /**< a connection request, for VipConnectWait */
	TCP_CONN_GONE,  /**< the requester gave up (closed its stream) */
};

/** An incoming connection request (VIA §4.1, server side). */
struct tcp_conn {
	struct tcp_obj obj;
	TAILQ_ENTRY(tcp_conn) link;
	enum tcp_conn_state state;
	bool claimed;        /**< VipConnectWait handed it out */
	int fd;
	uint64_t deadline_ms; /**< the HELLO must be in by then */
	size_t got;
	struct {
		struct tcp_wire_hdr hdr;
		struct tcp_wire_hello hello;
	} in;                /**< the HELLO frame as it arrives */
};

/** A stream being closed: read to its end, so that the close sends no RST. */
struct tcp_linger {
	struct tcp_obj obj;
	TAILQ_ENTRY(tcp_linger) link;
	int fd;
	uint64_t deadline_ms;
};

/** An asynchronous error waiting for the error handler (VIA §9.9.1). */
struct tcp_async {
	STAILQ_ENTRY(tcp_async) link;
	VIP_ERROR_DESCRIPTOR desc;
};

STAILQ_HEAD(tcp_async_list, tcp_async);

/** A NIC: one listening socket on the host's TCP/IP stack. */
struct tcp_nic {
	pthread_mutex_t lock;
	pthread_cond_t conds[TCP_NB_CONDS]; /**< waiters on queues and CQs, by object id */
	pthread_cond_t cm_cond;             /**< VipConnectWait waiters */
	uint8_t slot;
	uint16_t gen;     /**< bumped at each open of the slot: old handles stay dead */
	bool open;
	bool ns_open;     /**< VipNSInit was called */
	struct via_idtab objs;
	struct via_idtab mrs;
	uint32_t nb_vi, nb_cq, nb_ptag, nb_conn, nb_linger;
	uint64_t registered_bytes;
	/** bumped when a region goes or changes: buffers in use are checked again */
	uint64_t mr_gen;
	int listen_fd, ep_fd, wake_fd;
	pthread_t thread;
	uint8_t addr[6];  /**< IPv4 address and TCP port, network order */
	TAILQ_HEAD(, tcp_conn) conns;
	TAILQ_HEAD(, tcp_linger) lingers;
	struct tcp_async_list errors;
	uint32_t nb_errors;
	VIP_ERROR_HANDLER err_handler; /**< NULL: the default, which logs */
	void *err_ctx;
	uint8_t scratch[65536]; /**< where discarded payloads go (progress thread) */
};

/* ---- handle.c ----------------------------------------------------------- */

extern uint8_t tcp_handle_tag;

/** The handle of @p obj (NULL: of the NIC itself). */
void *tcp_handle_of(const struct tcp_nic *nic, const struct tcp_obj *obj);
/** The handle of the object with id @p id of @p type, or NULL if it is gone. */
void *tcp_handle_by_id(struct tcp_nic *nic, uint32_t id, uint32_t type);
/**
 * Resolve @p handle of @p type and lock its NIC.
 * @return the NIC, locked, and *obj (unless TCP_OBJ_NIC); NULL if the
 *         handle names nothing live (nothing locked)
 */
struct tcp_nic *tcp_nic_enter(const void *handle, uint32_t type, void **obj);
/** Resolve @p handle, which must be of @p nic (locked, open). NULL: it is not. */
void *tcp_obj_in(struct tcp_nic *nic, const void *handle, uint32_t type);
void tcp_nic_leave(struct tcp_nic *nic);
/** Give @p obj an id of type @p type in nic->objs. @return 0, -ENOSPC, -ENOMEM */
int tcp_obj_add(struct tcp_nic *nic, struct tcp_obj *obj, uint32_t type);
void tcp_obj_del(struct tcp_nic *nic, struct tcp_obj *obj);
uint64_t tcp_now_ms(void);
/** The CLOCK_MONOTONIC ms at which @p timeout ends; UINT64_MAX for VIP_INFINITE. */
uint64_t tcp_deadline(VIP_ULONG timeout);
/** Sleep on @p cond until signalled or @p deadline. @return 0, -ETIMEDOUT */
int tcp_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline);
pthread_cond_t *tcp_cond_of(struct tcp_nic *nic, uint32_t id);

/* ---- nic.c -------------------------------------------------------------- */

struct tcp_nic *tcp_nic_slot(unsigned slot);
/** Log a line to stderr, when VIPL_TCP_DEBUG is set. */
void tcp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Queue an asynchronous error for the error handler (VIA §9.9.1). */
void tcp_async_error(struct tcp_nic *nic, VIP_ERROR_CODE code, VIP_RESOURCE_CODE res,
		     const struct tcp_vi *vi, VIP_DESCRIPTOR *desc, uint32_t op);

/* ---- progress.c --------------------------------------------------------- */

/** epoll data of the NIC's own descriptors; an object's is tcp_ep_key(its id). */
#define TCP_EP_LISTEN 1u
#define TCP_EP_WAKE 2u

void *tcp_progress_main(void *arg);
/** The epoll data of the object with id @p id. */
uint64_t tcp_ep_key(uint32_t id);
/** Wake the progress thread (an error to deliver, the NIC closing). */
void tcp_progress_wake(struct tcp_nic *nic);
/** Close @p fd once the peer has closed its end, or a while has passed. */
void tcp_linger_close(struct tcp_nic *nic, int fd);

/* ---- mr.c --------------------------------------------------------------- */

/**
 * The check of every memory access (VIA §3.2.2, §6.3.2): handle @p mh
 * names a region of the NIC that holds [va, va + len), of tag @p ptag,
 * allowing @p access.
 * @return 0, -ENOENT (no such region or range), -EACCES (tag or rights)
 */
int tcp_mr_check(struct tcp_nic *nic, VIP_MEM_HANDLE mh, uint64_t va, uint64_t len,
		 const struct tcp_ptag *ptag, uint32_t access);
struct tcp_ptag *tcp_ptag_in(struct tcp_nic *nic, VIP_PROTECTION_HANDLE handle);
/** Every region and tag of the NIC goes (VipCloseNic). */
void tcp_mr_fini(struct tcp_nic *nic);

/* ---- vi.c --------------------------------------------------------------- */

/**
 * The VI is Connected over stream @p fd: its sides start afresh.
 * @return 0, -errno (epoll_ctl: the stream cannot be watched)
 */
int tcp_vi_connected(struct tcp_vi *vi, int fd);
/**
 * The connection is broken (VIA §2.5.2, §5.4): the VI goes to the Error
 * state, its descriptors are flushed, CONN_LOST is reported. @p last, if
 * not NULL, is a frame (host order) for the peer, sent if the stream can
 * take it at once.
 */
void tcp_vi_break(struct tcp_vi *vi, const struct tcp_wire_hdr *last, const char *why);
/** The peer disconnected (DISC): tcp_vi_break without CONN_LOST (VIA §4.2: optional). */
void tcp_vi_hangup(struct tcp_vi *vi);
/** Close the VI's stream, if any, and flush its queues: VipDisconnect. */
void tcp_vi_disconnect(struct tcp_vi *vi);
/** Free every VI of the NIC (VipCloseNic). */
void tcp_vi_fini_all(struct tcp_nic *nic);
void tcp_vi_attr_to_wire(const struct tcp_vi *vi, struct tcp_wire_attr *w);
void tcp_vi_attr_from_wire(const struct tcp_wire_attr *w, VIP_VI_ATTRIBUTES *a);

/* ---- dp.c --------------------------------------------------------------- */

static inline struct tcp_wqe *
tcp_wq_at(struct tcp_wq *q, uint32_t pos)
{
	return &q->ring[pos & (q->cap - 1)];
}

/** Complete entry @p pos of @p q with @p status (DONE added), Length @p len, immediate @p imm. */
void tcp_wqe_complete(struct tcp_vi *vi, struct tcp_wq *q, uint32_t pos, uint32_t status,
		      uint32_t len, uint32_t imm);
/** Complete every entry of @p q not processed yet, and @p q's RDMA Reads, with @p status. */
void tcp_wq_flush(struct tcp_vi *vi, struct tcp_wq *q, uint32_t status);
/** The op bits of a completion of an entry posted with control op @p op on @p q. */
uint32_t tcp_op_status(const struct tcp_wq *q, uint8_t op);

/** A descriptor, checked (VIA §10): what it asks and the buffers it names. */
struct tcp_desc {
	uint8_t op;       /**< VIP_CONTROL_OP_* */
	uint16_t control;
	uint32_t imm;
	uint32_t length;  /**< CS.Length */
	uint64_t total;   /**< the data segments' lengths summed */
	VIP_ADDRESS_SEGMENT raddr;
	unsigned nb_segs; /**< data segments, in segs[] */
	uint32_t access;  /**< what they need: TCP_LOCAL_READ (gather) or TCP_LOCAL_WRITE (scatter) */
};

/**
 * Read and check the descriptor of entry @p pos of @p q (VIA §10.2-10.4,
 * §3.2.2): its format, its memory and its data segments', into @p d and
 * @p segs (TCP_MAX_SEGS entries; zero-length segments are left out).
 * @return 0, or the VIP_STATUS_* error bits it completes with
 */
uint32_t tcp_desc_read(struct tcp_vi *vi, struct tcp_wq *q, uint32_t pos, struct tcp_desc *d,
		       struct tcp_seg *segs);

/* ---- tx.c --------------------------------------------------------------- */

/** The next entry of @p q to process, after those that completed when posted. */
bool tcp_wq_peek(struct tcp_wq *q, uint32_t *pos);

/** Write what the VI has to send until the stream is full or nothing is left. */
void tcp_tx_push(struct tcp_vi *vi);
/** Queue an answer for the peer. @return 0, -ENOMEM, -ENOSPC (TCP_MAX_CTL owed) */
int tcp_tx_ctl(struct tcp_vi *vi, const struct tcp_wire_hdr *hdr);
/** Write @p hdr (host order) at once if the stream is between frames (best effort). */
void tcp_tx_last(struct tcp_vi *vi, const struct tcp_wire_hdr *hdr);
/** Forget what was being sent. */
void tcp_tx_reset(struct tcp_vi *vi);
/** Encode @p h (host order) into @p w (network order). */
void tcp_wire_hdr_encode(const struct tcp_wire_hdr *h, struct tcp_wire_hdr *w);
void tcp_wire_hdr_decode(const struct tcp_wire_hdr *w, struct tcp_wire_hdr *h);

/* ---- rx.c --------------------------------------------------------------- */

/** Read and act on what arrived on the VI's stream. */
void tcp_rx_pull(struct tcp_vi *vi);
void tcp_rx_reset(struct tcp_vi *vi);

/* ---- cm.c --------------------------------------------------------------- */

/** Read more of a requester's HELLO, or notice it gave up. */
void tcp_conn_input(struct tcp_nic *nic, struct tcp_conn *c);
/** Take a new stream from the listening socket. */
void tcp_conn_new(struct tcp_nic *nic, int fd);
void tcp_conn_free(struct tcp_nic *nic, struct tcp_conn *c);

/* ---- the VIPL calls (provider.c puts them in the ops table) ------------- */

VIP_RETURN tcp_open_nic(const VIP_CHAR *DeviceName, VIP_NIC_HANDLE *NicHandle);
VIP_RETURN tcp_close_nic(VIP_NIC_HANDLE NicHandle);
VIP_RETURN tcp_query_nic(VIP_NIC_HANDLE NicHandle, VIP_NIC_ATTRIBUTES *Attributes);
VIP_RETURN tcp_error_callback(VIP_NIC_HANDLE NicHandle, VIP_PVOID Context,
			      VIP_ERROR_HANDLER Handler);
VIP_RETURN tcp_ns_init(VIP_NIC_HANDLE NicHandle, VIP_PVOID NSInitInfo);
VIP_RETURN tcp_ns_get_host_by_name(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name,
				   VIP_NET_ADDRESS *Address, VIP_ULONG NameIndex);
VIP_RETURN tcp_ns_get_host_by_addr(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *Address,
				   VIP_CHAR *Name, VIP_ULONG *NameLen);
VIP_RETURN tcp_ns_shutdown(VIP_NIC_HANDLE NicHandle);

VIP_RETURN tcp_create_ptag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE *ProtectionTag);
VIP_RETURN tcp_destroy_ptag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE ProtectionTag);
VIP_RETURN tcp_register_mem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_ULONG Length,
			    VIP_MEM_ATTRIBUTES *MemAttribs, VIP_MEM_HANDLE *MemoryHandle);
VIP_RETURN tcp_deregister_mem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
			      VIP_MEM_HANDLE MemoryHandle);
VIP_RETURN tcp_query_mem(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle,
			 VIP_MEM_ATTRIBUTES *MemAttribs);
VIP_RETURN tcp_set_mem_attributes(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address,
				  VIP_MEM_HANDLE MemHandle, VIP_MEM_ATTRIBUTES *MemAttribs);

VIP_RETURN tcp_create_vi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs,
			 VIP_CQ_HANDLE SendCQHandle, VIP_CQ_HANDLE RecvCQHandle,
			 VIP_VI_HANDLE *ViHandle);
VIP_RETURN tcp_destroy_vi(VIP_VI_HANDLE ViHandle);
VIP_RETURN tcp_query_vi(VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State,
			VIP_VI_ATTRIBUTES *Attributes, VIP_BOOLEAN *SendQueueEmpty,
			VIP_BOOLEAN *RecvQueueEmpty);
VIP_RETURN tcp_set_vi_attributes(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *Attributes);

VIP_RETURN tcp_post_send(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
			 VIP_MEM_HANDLE MemoryHandle);
VIP_RETURN tcp_send_done(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN tcp_send_wait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout,
			 VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN tcp_post_recv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
			 VIP_MEM_HANDLE MemoryHandle);
VIP_RETURN tcp_recv_done(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN tcp_recv_wait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout,
			 VIP_DESCRIPTOR **DescriptorPtr);

VIP_RETURN tcp_create_cq(VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount, VIP_CQ_HANDLE *CQHandle);
VIP_RETURN tcp_destroy_cq(VIP_CQ_HANDLE CQHandle);
VIP_RETURN tcp_resize_cq(VIP_CQ_HANDLE CQHandle, VIP_ULONG EntryCount);
VIP_RETURN tcp_cq_done(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue);
VIP_RETURN tcp_cq_wait(VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout, VIP_VI_HANDLE *ViHandle,
		       VIP_BOOLEAN *RecvQueue);
/** A completion on a queue of @p cq: add its entry, wake its waiters. */
void tcp_cq_push(struct tcp_nic *nic, struct tcp_cq *cq, uint32_t vi_id, bool recv);
/** Free @p cq, whose work queues are gone (VipDestroyCQ, VipCloseNic). */
void tcp_cq_free(struct tcp_nic *nic, struct tcp_cq *cq);

VIP_RETURN tcp_connect_wait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr,
			    VIP_ULONG Timeout, VIP_NET_ADDRESS *RemoteAddr,
			    VIP_VI_ATTRIBUTES *RemoteViAttribs, VIP_CONN_HANDLE *ConnHandle);
VIP_RETURN tcp_connect_accept(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle);
VIP_RETURN tcp_connect_reject(VIP_CONN_HANDLE ConnHandle);
VIP_RETURN tcp_connect_request(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr,
			       VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout,
			       VIP_VI_ATTRIBUTES *RemoteViAttribs);
VIP_RETURN tcp_disconnect(VIP_VI_HANDLE ViHandle);

#endif /* VIPL_TCP_PROV_H */
