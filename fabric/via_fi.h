/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The libfabric provider "via": FI_EP_RDM endpoints over VIA-DPDK.
 *
 * The provider is a VIPL application: it reaches viad only through the
 * calls of vipl.h, like any program linked with libvipl-dpdk; its buffers
 * are ordinary memory registered with VipRegisterMem. docs/design.md,
 * section 16, describes the protocol.
 *
 * Locking: one mutex per domain (vf_domain::lock) guards every object of
 * the domain (endpoints, connections, peers, requests, CQs, AVs, MRs). Every
 * libfabric entry point takes it; blocking VIPL calls (VipConnectWait,
 * VipConnectRequest, VipCQWait) are made without it. So the provider is
 * FI_THREAD_SAFE.
 *
 * Errors: internal functions return 0 or -errno (-FI_E* where libfabric
 * has its own code); the entry points return what libfabric expects.
 */
#ifndef VIA_FI_H
#define VIA_FI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <vipl.h>

#define VF_PROV_NAME    "via"
#define VF_FABRIC_NAME  "via"
#define VF_PROV_VERSION FI_VERSION(1, 0)

extern struct fi_provider vf_prov;

/* ---------------------------------------------------------------------- */
/* Intrusive doubly linked lists */

struct vf_list {
	struct vf_list *next, *prev;
};

static inline void
vf_list_init(struct vf_list *h)
{
	h->next = h->prev = h;
}

static inline bool
vf_list_empty(const struct vf_list *h)
{
	return h->next == h;
}

static inline void
vf_list_add_tail(struct vf_list *h, struct vf_list *e)
{
	e->prev = h->prev;
	e->next = h;
	h->prev->next = e;
	h->prev = e;
}

static inline void
vf_list_del(struct vf_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = e->prev = e;
}

#define vf_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define vf_list_first(h, type, member) \
	(vf_list_empty(h) ? NULL : vf_container_of((h)->next, type, member))

#define vf_list_for_each_safe(pos, tmp, h) \
	for ((pos) = (h)->next, (tmp) = (pos)->next; (pos) != (h); (pos) = (tmp), (tmp) = (pos)->next)

/* ---------------------------------------------------------------------- */
/* Names and the wire protocol */

/** Magic bytes that open every discriminator of the provider. */
#define VF_NAME_MAGIC0 'f'
#define VF_NAME_MAGIC1 'i'

/**
 * An endpoint's address (fi_getname, fi_av_insert): the NIC's MAC and the
 * VIA discriminator the endpoint listens on. The discriminator is bytes
 * 6..15: the magic, the process id and an endpoint number, so that it is
 * unique on its NIC.
 */
struct vf_name {
	uint8_t mac[6];
	uint8_t magic[2];
	uint32_t pid;
	uint32_t ep_id;
};

#define VF_DISC_OFF offsetof(struct vf_name, magic)
#define VF_DISC_LEN (sizeof(struct vf_name) - VF_DISC_OFF)

/** Message kinds (vf_hdr::op). */
enum vf_op {
	VF_OP_EAGER = 1, /**< first fragment of a message: header and data */
	VF_OP_FRAG,      /**< further fragment of the message before it */
	VF_OP_RTS,       /**< rendezvous: the receiver reads the data (vf_rts follows) */
	VF_OP_FIN,       /**< rendezvous done: data = cookie, len = status */
	VF_OP_CREDIT,    /**< credits only */
	VF_OP_WDATA,     /**< remote CQ data of an RMA write: len, data */
};

/** vf_hdr::flags */
#define VF_HF_TAGGED 0x01 /**< FI_TAGGED (else FI_MSG) */
#define VF_HF_DATA   0x02 /**< data is remote CQ data */

/**
 * Head of every VIA message of the provider. Fields are in the host's byte
 * order: both ends of a connection are x86-64 processes (docs/design.md,
 * section 16, limits).
 */
struct vf_hdr {
	uint8_t op;
	uint8_t flags;
	uint16_t credits; /**< receive descriptors posted again for the peer */
	uint32_t rsvd;
	uint64_t len;     /**< whole message length (EAGER, RTS), bytes (WDATA), status (FIN) */
	uint64_t tag;
	uint64_t data;    /**< remote CQ data, or the cookie (FIN) */
};

/** What follows the header of an RTS. */
struct vf_rts {
	uint64_t addr;    /**< the sender's buffer */
	uint64_t cookie;  /**< names the send in the FIN */
	uint32_t key;     /**< memory handle of the sender's buffer, RDMA Read enabled */
	uint32_t rsvd;
};

/** Credits a new connection starts with on each side, before the first
 *  CREDIT message grants the rest of the peer's receive descriptors. */
#define VF_INIT_CREDITS 4
/** Credits a message must leave: data messages keep 2 back for a FIN and
 *  a CREDIT, a FIN keeps 1 back for a CREDIT, so credits always flow. */
#define VF_CREDITS_DATA 3
#define VF_CREDITS_FIN  2
#define VF_CREDITS_CTRL 1

/** Largest inject (fi_tx_attr::inject_size): copied when posted. */
#define VF_INJECT_MAX 4096
/** Operations outstanding per direction (fi_tx_attr/fi_rx_attr::size). */
#define VF_QUEUE_SIZE 4096

/* ---------------------------------------------------------------------- */
/* Objects */

struct vf_domain;
struct vf_ep;
struct vf_cq;
struct vf_av;
struct vf_conn;
struct vf_peer;

/** Tunables (fi_param: FI_VIA_*). */
struct vf_params {
	size_t eager_max;        /**< largest message sent eagerly */
	unsigned rx_depth;       /**< receive descriptors per connection */
	unsigned tx_depth;       /**< send slots per connection */
	unsigned connect_ms;     /**< how long to keep trying to reach a peer */
	size_t mr_cache_bytes;   /**< registrations kept for rendezvous, 0: none */
	unsigned yield_polls;    /**< empty CQ reads before each further one yields */
	const char *nic;         /**< VIA NIC when the app names no domain */
};

struct vf_fabric {
	struct fid_fabric fid;
};

/** A registration of user memory for the rendezvous (cached or not). */
struct vf_reg {
	struct vf_list link;     /**< cache LRU */
	uint8_t *addr;           /**< page-aligned range registered */
	size_t len;
	VIP_MEM_HANDLE mh;
	unsigned refs;
	bool cached;             /**< kept after its last user, and validated */
};

/**
 * A viad session (VipOpenNic). Each domain opens its own, except one opened
 * from the fi_info of a connection request (FI_CONNREQ): it shares the
 * passive endpoint's, since VipConnectAccept takes a request of the session
 * it accepts a VI of.
 */
struct vf_session {
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES attr;
	uint8_t mac[6];
	unsigned refs;           /**< domains and passive endpoints on it */
};

struct vf_domain {
	struct fid_domain fid;
	pthread_mutex_t lock;
	uint32_t api_version;
	struct vf_session *sess;
	VIP_NIC_HANDLE nic;      /**< sess->nic */
	VIP_NIC_ATTRIBUTES attr;
	uint8_t mac[6];
	VIP_PROTECTION_HANDLE ptag;
	struct vf_params p;
	struct vf_list mrs;                  /**< vf_mr, for local RMA to self */
	struct vf_list cache;                /**< vf_reg, least recently used first */
	size_t cache_bytes;
	int pagemap_fd;                      /**< /proc/self/pagemap, -1 without */
	unsigned refs;                       /**< endpoints, CQs, AVs, MRs open */
};

struct vf_mr {
	struct fid_mr mr;
	struct vf_domain *dom;
	struct vf_list link;
	uint8_t *addr;
	size_t len;
	uint64_t access;
	VIP_MEM_HANDLE mh;
};

/** One address vector entry. */
struct vf_av_entry {
	struct vf_name name;
	bool used;
	uint64_t hnext;          /**< next index + 1 in its hash chain, 0 ends */
};

struct vf_av {
	struct fid_av av;
	struct vf_domain *dom;
	enum fi_av_type type;
	struct vf_av_entry *e;
	size_t count, cap;
	uint64_t *hash;          /**< bucket -> first index + 1 */
	size_t hash_size;        /**< power of two */
	uint64_t gen;            /**< bumped at every insert and remove */
	unsigned eps;            /**< endpoints bound */
};

/** A completion, as libfabric's widest format plus the source. */
struct vf_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
};

struct vf_cq_err {
	struct vf_list link;
	struct fi_cq_err_entry e;
};

struct vf_cq {
	struct fid_cq cq;
	struct vf_domain *dom;
	enum fi_cq_format format;
	struct vf_cqe *ring;
	size_t cap, head, count;  /**< grows: never overruns */
	struct vf_list errs;
	struct vf_ep *eps[8];     /**< endpoints bound, progressed by reads */
	unsigned neps;
	bool signaled;
	unsigned empty_reads;     /**< reads in a row that found nothing */
};

struct vf_eq_event {
	struct vf_list link;
	uint32_t event;
	bool error;               /**< buf holds a struct fi_eq_err_entry */
	size_t len;
	uint8_t buf[];
};

struct vf_eq {
	struct fid_eq eq;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct vf_list events;
};

/** A passive endpoint (FI_EP_MSG): listens on its name, reports FI_CONNREQ. */
struct vf_pep {
	struct fid_pep pep;
	struct fi_info *info;
	struct vf_session *sess;
	struct vf_eq *eq;
	struct vf_name name;
	pthread_t listener;
	bool listening;
	bool stopping;            /**< tells the listener to end (atomic) */
};

/** A connection request of a passive endpoint: fi_info::handle of FI_CONNREQ. */
struct vf_connreq {
	struct fid fid;           /**< FI_CLASS_CONNREQ */
	struct vf_pep *pep;
	VIP_CONN_HANDLE ch;
	VIP_VI_ATTRIBUTES rattr;
	struct vf_name peer;
};

/** Kinds of user request. */
enum vf_req_type {
	VF_REQ_SEND,
	VF_REQ_RECV,
	VF_REQ_READ,
	VF_REQ_WRITE,
};

/**
 * One operation posted by the application. Sends, reads and writes wait in
 * their peer's txq until posted whole, then are counted by the VIA
 * descriptors still out (inflight); a rendezvous send then waits in the
 * peer's rndv list for its FIN. Receives wait in a posted queue until a
 * message matches, then fill from the connection.
 */
struct vf_req {
	struct vf_list link;
	enum vf_req_type type;
	struct vf_ep *ep;
	struct vf_peer *peer;
	void *context;
	uint64_t cq_flags;        /**< flags of the completion entry */
	uint64_t op_flags;        /**< FI_COMPLETION, FI_INJECT, FI_REMOTE_CQ_DATA ... */
	uint8_t *buf;
	size_t len;
	struct vf_mr *mr;         /**< the app's registration of buf (desc), or NULL */
	struct vf_reg *reg;       /**< the provider's (rendezvous), or NULL */
	uint64_t tag, ignore, data;
	fi_addr_t src;            /**< receive: FI_ADDR_UNSPEC or the source wanted */
	uint64_t raddr;           /**< RMA / rendezvous: the remote buffer */
	uint32_t rkey;
	uint64_t cookie;          /**< rendezvous send: its id; receive: the sender's */
	size_t posted;            /**< bytes handed to VIA */
	size_t rlen;              /**< receive: bytes to take (buffer and message) */
	size_t mlen;              /**< receive: the message's length */
	unsigned inflight;        /**< VIA descriptors not completed */
	int err;                  /**< first error (positive FI_E*), 0 */
	bool rndv;                /**< send by rendezvous */
	bool started;             /**< send: its first message is posted */
	bool bounce;              /**< rendezvous receive: reads land in slots */
	bool wdata_sent;          /**< write: the WDATA message is posted */
	bool done_posting;        /**< removed from the txq / the reads */
	uint8_t *owned;           /**< a copy of an inject's data */
	struct vf_conn *conn;     /**< receive: where its rendezvous reads go */
	fi_addr_t msg_src;        /**< receive: the sender's address, if known */
};

/** A message that arrived before its receive was posted. */
struct vf_unexp {
	struct vf_list link;
	struct vf_peer *peer;
	bool has_data;
	bool rndv;
	bool complete;            /**< eager: every fragment has arrived */
	bool claimed;             /**< FI_CLAIM'ed by a peek */
	bool discard;             /**< FI_DISCARD'ed while still arriving */
	uint64_t tag, data;
	size_t len;
	uint8_t *buf;             /**< eager data (len bytes) */
	struct vf_rts rts;        /**< rendezvous */
	struct vf_req *req;       /**< receive waiting for the rest of it */
};

/** A send slot: a descriptor and a bounce buffer of one VIA message. */
struct vf_slot {
	VIP_DESCRIPTOR *desc;
	uint8_t *buf;
	struct vf_req *req;       /**< the request it serves, or NULL (control) */
	size_t off, len;          /**< the request's bytes it carries */
	bool bounce_in;           /**< RDMA Read into buf: copy out at completion */
	struct vf_slot *next;     /**< free list */
};

/** A FIN waiting for a slot and credits. */
struct vf_fin {
	struct vf_list link;
	uint64_t cookie;
	uint64_t status;
};

enum vf_conn_state {
	VF_CONN_CONNECTING,
	VF_CONN_UP,
	VF_CONN_DOWN,
};

/**
 * A VI connected (or being connected) to one peer endpoint, with its
 * memory: tx_depth send slots and rx_depth receive buffers, each of the
 * VI's MaxTransferSize, in one registered region.
 */
struct vf_conn {
	struct vf_list link;      /**< peer's conns */
	struct vf_ep *ep;
	struct vf_peer *peer;
	struct vf_conn *hnext;    /**< ep's VI hash */
	VIP_VI_HANDLE vi;
	enum vf_conn_state state;
	uint8_t *mem;
	size_t mem_len;
	VIP_MEM_HANDLE mh;
	size_t mts;               /**< the VI's MaxTransferSize: slot and buffer size */
	struct vf_slot *slots;
	struct vf_slot *free_slots;
	unsigned nslots, slots_free;
	VIP_DESCRIPTOR *rx_desc;
	uint8_t *rx_buf;
	unsigned nrx;
	unsigned rx_posted;       /**< receive descriptors on the VI */
	int credits;              /**< messages we may still send */
	unsigned owed;            /**< receives posted again, not yet told */
	struct vf_list fins;      /**< vf_fin */
	struct vf_list reads;     /**< receives with rendezvous reads to post */
	/* the message being received in fragments */
	struct vf_req *rx_req;
	struct vf_unexp *rx_ux;
	size_t rx_off, rx_len;
};

/** A remote endpoint this endpoint talks to. */
struct vf_peer {
	struct vf_ep *ep;
	struct vf_list link;      /**< ep's peers */
	struct vf_peer *hnext;    /**< ep's name hash */
	struct vf_list cjob;      /**< connector queue */
	struct vf_name name;
	bool self;
	fi_addr_t addr;           /**< in the ep's AV, FI_ADDR_NOTAVAIL if not */
	uint64_t addr_gen;        /**< AV generation addr was looked up in */
	struct vf_conn *tx;       /**< the connection our messages take */
	struct vf_list conns;
	struct vf_conn *pending;  /**< the connector's VI, not connected yet */
	bool connecting;
	uint64_t deadline_ms;     /**< give up connecting then */
	struct vf_list txq;       /**< vf_req to post, in order */
	struct vf_list rndv;      /**< rendezvous sends waiting for their FIN */
};

#define VF_PEER_HASH 256
#define VF_VI_HASH   256

struct vf_ep {
	struct fid_ep ep;
	struct vf_domain *dom;
	struct vf_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct vf_av *av;
	uint64_t caps;
	uint64_t tx_op_flags, rx_op_flags;
	bool enabled, stopping;
	struct vf_name name;
	VIP_CQ_HANDLE vcq;
	unsigned cq_waiters;      /**< threads in VipCQWait on vcq (fi_cq_sread) */
	unsigned vcq_entries;     /**< capacity of vcq */
	unsigned vcq_need;        /**< descriptors of every VI: what vcq must hold */
	struct vf_list posted[2]; /**< receives: [0] FI_MSG, [1] FI_TAGGED */
	struct vf_list unexp[2];
	struct vf_list peers;
	struct vf_peer *peer_hash[VF_PEER_HASH];
	struct vf_conn *vi_hash[VF_VI_HASH];
	struct vf_peer **addr_peer; /**< fi_addr -> peer, filled on use */
	size_t addr_peer_len;
	uint64_t addr_peer_gen;
	struct vf_peer *self;
	uint64_t next_cookie;
	size_t tx_count, rx_count;   /**< requests outstanding */
	struct vf_list *req_pool;    /**< freed requests, linked by link.next */
	unsigned req_pool_len;
	size_t tx_size, rx_size;     /**< their limits (fi_tx_attr/rx_attr size) */
	/* FI_EP_MSG: one peer, connected by fi_connect or fi_accept */
	bool msg;
	struct vf_eq *eq;         /**< connection events */
	struct vf_peer *msg_peer;
	struct vf_connreq *connreq; /**< fi_accept takes it */
	bool msg_connected;
	/* the connection threads */
	pthread_t listener, connector;
	bool listens, connects;
	pthread_cond_t cjob_cond;
	struct vf_list cjobs;
};

/* ---------------------------------------------------------------------- */
/* Functions shared between the files */

/* via_fi.c: provider, getinfo, fabric, EQ */
uint64_t vf_now_ms(void);
int vf_vip_errno(VIP_RETURN rc);
const struct vf_params *vf_params(void);
int vf_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int vf_no_control(struct fid *fid, int command, void *arg);
int vf_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);
int vf_no_tostr(const struct fid *fid, char *buf, size_t len);
int vf_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context);
/* via_fi_ep.c: options, of which the provider has none (-FI_ENOPROTOOPT) */
int vf_no_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen);
int vf_no_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen);

/* via_fi_addr.c */
int vf_service_parse(const char *service, uint32_t *id);
int vf_name_resolve(VIP_NIC_HANDLE nic, const uint8_t own_mac[6], const char *node,
		    const char *service, struct vf_name *out);
bool vf_name_valid(const void *addr, size_t len);
/** A name of its own for an endpoint that binds no service: its pid and a
 *  fresh number. */
void vf_name_fresh(struct vf_name *n, const uint8_t mac[6]);

/* via_fi_cm.c: sessions, passive endpoints, connection events */
int vf_session_open(const char *nic, struct vf_session **out);
void vf_session_put(struct vf_session *s);
struct vf_session *vf_session_of_info(const struct fi_info *info);
int vf_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
		  void *context);
void vf_eq_event(struct vf_eq *q, uint32_t event, fid_t fid, struct fi_info *info);
void vf_eq_error(struct vf_eq *q, fid_t fid, void *context, int err);
void vf_connreq_free(struct vf_connreq *cr);

/* via_fi_domain.c */
int vf_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		   void *context);
int vf_reg_get(struct vf_domain *d, const void *buf, size_t len, struct vf_reg **out);
void vf_cache_purge(struct vf_domain *d, const void *addr, size_t len);
bool vf_on_own_stack(const void *buf, size_t len);
void vf_reg_put(struct vf_domain *d, struct vf_reg *r);
struct vf_mr *vf_mr_find(struct vf_domain *d, uint32_t key);
struct vf_mr *vf_mr_from_desc(void *desc, const void *buf, size_t len);
int vf_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
	       void *context);
fi_addr_t vf_av_find(struct vf_av *av, const struct vf_name *name);
const struct vf_name *vf_av_name(struct vf_av *av, fi_addr_t addr);

/* via_fi_cq.c */
int vf_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
	       void *context);
int vf_cq_push(struct vf_cq *cq, const struct fi_cq_tagged_entry *e, fi_addr_t src);
int vf_cq_push_err(struct vf_cq *cq, const struct fi_cq_err_entry *e);

/* via_fi_ep.c */
int vf_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
	       void *context);
void vf_req_complete(struct vf_req *r);
void vf_req_free(struct vf_req *r);
fi_addr_t vf_peer_addr(struct vf_ep *ep, struct vf_peer *p);
struct vf_req *vf_match_posted(struct vf_ep *ep, bool tagged, struct vf_peer *src, uint64_t tag);
void vf_ux_free(struct vf_unexp *ux);

/* via_fi_conn.c */
struct vf_peer *vf_peer_get(struct vf_ep *ep, const struct vf_name *name);
int vf_conn_start_threads(struct vf_ep *ep);
void vf_conn_stop(struct vf_ep *ep);
void vf_connect_kick(struct vf_peer *p);
struct vf_conn *vf_conn_lookup(struct vf_ep *ep, VIP_VI_HANDLE vi);
void vf_conn_down(struct vf_conn *c, int err);
void vf_conn_broken(struct vf_conn *c);
int vf_accept_conn(struct vf_ep *ep, VIP_CONN_HANDLE ch, const struct vf_name *name,
		   const VIP_VI_ATTRIBUTES *rattr);
void vf_msg_shutdown(struct vf_ep *ep);

/* via_fi_proto.c */
void vf_progress(struct vf_ep *ep);
void vf_progress_one(struct vf_ep *ep, VIP_VI_HANDLE vi, VIP_BOOLEAN recvq);
void vf_peer_push(struct vf_peer *p);
bool vf_inject_now(struct vf_peer *p, const void *buf, size_t len, uint64_t tag, uint64_t data,
		   uint64_t flags, bool tagged);
void vf_conn_push(struct vf_conn *c);
void vf_conn_up(struct vf_conn *c);
int vf_conn_post_rx(struct vf_conn *c, unsigned i);
void vf_rndv_start(struct vf_req *r, struct vf_peer *p, struct vf_conn *c,
		   const struct vf_rts *rts);
void vf_req_check(struct vf_req *r);
void vf_slot_put(struct vf_conn *c, struct vf_slot *s);
void vf_ux_drop(struct vf_unexp *ux);
void vf_self_send(struct vf_req *r);
void vf_self_rma(struct vf_req *r);
void vf_ux_deliver(struct vf_req *r, struct vf_unexp *ux);

#endif /* VIA_FI_H */
