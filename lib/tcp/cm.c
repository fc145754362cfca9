/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection management (VIA §4, §5, §9.4): one TCP stream per connection.
 *
 * VipConnectRequest connects a stream to the remote NIC address (its
 * listening socket), sends HELLO (the requester's address, the address it
 * asks for, its VI's attributes) and waits, up to its Timeout, for ACCEPT
 * or REJECT. The server's progress thread takes the stream, reads the
 * HELLO and keeps the request until a VipConnectWait whose discriminator
 * matches takes it (a request may come before the wait: it waits as long
 * as its requester does), then VipConnectAccept answers ACCEPT and hands
 * the stream to the VI, or VipConnectReject answers REJECT. A requester
 * that gives up closes its stream, which the server sees: the request is
 * dropped, or VipConnectAccept answers VIP_TIMEOUT.
 *
 * A stream belongs to one connection and dies with it, so frames of an
 * extinct connection can never reach a new one (VIA §4.1, §4.2).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_prov.h"

/* a HELLO must be in this long after its stream is */
#define HELLO_MS 10000u

_Static_assert(sizeof(((struct tcp_conn *)0)->in) ==
	       sizeof(struct tcp_wire_hdr) + sizeof(struct tcp_wire_hello),
	       "a HELLO frame is read as one block");

/* An address as a call takes it: host 0 or 6 bytes (@p need_host: 6), discriminator fits. */
static bool
addr_ok(const VIP_NET_ADDRESS *a, bool need_host)
{
	return a != NULL && (a->HostAddressLen == 6 || (!need_host && a->HostAddressLen == 0)) &&
	       a->DiscriminatorLen <= TCP_WIRE_MAX_DISC;
}

static void
addr_to_wire(const uint8_t host[6], const VIP_NET_ADDRESS *a, struct tcp_wire_addr *w)
{
	memset(w, 0, sizeof(*w));
	memcpy(w->host, host, 6);
	w->disc_len = (uint8_t)a->DiscriminatorLen;
	memcpy(w->disc, a->HostAddress + a->HostAddressLen, a->DiscriminatorLen);
}

static void
set_nodelay(int fd)
{
	int one = 1;

	/* frames are whole messages: no waiting to coalesce them */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- server side ---------------------------------------------------------- */

void
tcp_conn_new(struct tcp_nic *nic, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct tcp_conn *c;

	c = nic->nb_conn < TCP_BACKLOG ? calloc(1, sizeof(*c)) : NULL;
	if (c == NULL || tcp_obj_add(nic, &c->obj, TCP_OBJ_CONN) != 0) {
		/* the requester sees its stream end unanswered: VIP_ERROR_RESOURCE */
		free(c);
		close(fd);
		return;
	}
	ev.data.u64 = tcp_ep_key(c->obj.id);
	if (epoll_ctl(nic->ep_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		tcp_obj_del(nic, &c->obj);
		free(c);
		close(fd);
		return;
	}
	set_nodelay(fd);
	c->fd = fd;
	c->state = TCP_CONN_HELLO;
	c->deadline_ms = tcp_now_ms() + HELLO_MS;
	TAILQ_INSERT_TAIL(&nic->conns, c, link);
	nic->nb_conn++;
}

void
tcp_conn_free(struct tcp_nic *nic, struct tcp_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	TAILQ_REMOVE(&nic->conns, c, link);
	tcp_obj_del(nic, &c->obj);
	nic->nb_conn--;
	free(c);
}

/* Whether a whole HELLO frame in c->in is one this provider sends. */
static bool
hello_ok(const struct tcp_conn *c)
{
	const struct tcp_wire_hello *h = &c->in.hello;

	return c->in.hdr.type == TCP_WIRE_HELLO && c->in.hdr.flags == 0 &&
	       be32toh(c->in.hdr.len) == sizeof(*h) && be32toh(h->magic) == TCP_WIRE_MAGIC &&
	       be16toh(h->version) == TCP_WIRE_VERSION && h->src.disc_len <= TCP_WIRE_MAX_DISC &&
	       h->dst.disc_len <= TCP_WIRE_MAX_DISC;
}

void
tcp_conn_input(struct tcp_nic *nic, struct tcp_conn *c)
{
	ssize_t n;

	if (c->state == TCP_CONN_HELLO) {
		n = recv(c->fd, (uint8_t *)&c->in + c->got, sizeof(c->in) - c->got, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n > 0)
			c->got += (size_t)n;
		if (n <= 0 || (c->got >= sizeof(c->in.hdr) &&
			       (c->in.hdr.type != TCP_WIRE_HELLO ||
				be32toh(c->in.hdr.len) != sizeof(c->in.hello)))) {
			tcp_conn_free(nic, c);
			return;
		}
		if (c->got < sizeof(c->in))
			return;
		if (!hello_ok(c)) {
			tcp_conn_free(nic, c);
			return;
		}
		c->state = TCP_CONN_READY;
		pthread_cond_broadcast(&nic->cm_cond);
		return;
	}
	/*
	 * A requester sends nothing after its HELLO until it is answered:
	 * this is the end of its stream (it gave up: VIA §9.4.4 timeout), or
	 * bytes of something else. Either way the request is dead; one that
	 * VipConnectWait handed out stays for VipConnectAccept to answer
	 * VIP_TIMEOUT, or VipConnectReject.
	 */
	if (!c->claimed) {
		tcp_conn_free(nic, c);
		return;
	}
	close(c->fd);
	c->fd = -1;
	c->state = TCP_CONN_GONE;
}

VIP_RETURN
tcp_connect_wait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout,
		 VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
		 VIP_CONN_HANDLE *ConnHandle)
{
	uint64_t deadline = tcp_deadline(Timeout);
	struct tcp_nic *nic;
	struct tcp_conn *c;

	if (!addr_ok(LocalAddr, false) || RemoteAddr == NULL || RemoteViAttribs == NULL ||
	    ConnHandle == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	for (;;) {
		/* VIA §9.4.1: a request for this NIC whose discriminator is
		 * LocalAddr's; the oldest first */
		TAILQ_FOREACH(c, &nic->conns, link) {
			const struct tcp_wire_addr *dst = &c->in.hello.dst;

			if (c->state == TCP_CONN_READY && !c->claimed &&
			    dst->disc_len == LocalAddr->DiscriminatorLen &&
			    memcmp(dst->disc, LocalAddr->HostAddress + LocalAddr->HostAddressLen,
				   dst->disc_len) == 0)
				break;
		}
		if (c != NULL)
			break;
		if (tcp_now_ms() >= deadline) {
			tcp_nic_leave(nic);
			return VIP_TIMEOUT;
		}
		tcp_cond_wait(&nic->cm_cond, &nic->lock, deadline);
		/* the NIC may have been closed meanwhile */
		if (tcp_obj_in(nic, NicHandle, TCP_OBJ_NIC) == NULL) {
			tcp_nic_leave(nic);
			return VIP_INVALID_PARAMETER;
		}
	}
	c->claimed = true;
	RemoteAddr->HostAddressLen = 6;
	RemoteAddr->DiscriminatorLen = c->in.hello.src.disc_len;
	memcpy(RemoteAddr->HostAddress, c->in.hello.src.host, 6);
	memcpy(RemoteAddr->HostAddress + 6, c->in.hello.src.disc, c->in.hello.src.disc_len);
	tcp_vi_attr_from_wire(&c->in.hello.attr, RemoteViAttribs);
	*ConnHandle = tcp_handle_of(nic, &c->obj);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

/* Write an answer frame (ACCEPT, REJECT) whole. @return 0, -errno */
static int
answer(int fd, uint8_t type, const struct tcp_vi *vi)
{
	struct {
		struct tcp_wire_hdr hdr;
		struct tcp_wire_answer body;
	} f;
	struct tcp_wire_hdr h = { .type = type, .len = sizeof(f.body) };
	ssize_t n;

	memset(&f, 0, sizeof(f));
	tcp_wire_hdr_encode(&h, &f.hdr);
	f.body.magic = htobe32(TCP_WIRE_MAGIC);
	f.body.version = htobe16(TCP_WIRE_VERSION);
	if (vi != NULL)
		tcp_vi_attr_to_wire(vi, &f.body.attr);
	/* the stream's first bytes from this end: its buffer has room */
	n = send(fd, &f, sizeof(f), MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	return (size_t)n == sizeof(f) ? 0 : -EIO;
}

VIP_RETURN
tcp_connect_accept(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle)
{
	VIP_VI_ATTRIBUTES remote;
	struct tcp_nic *nic;
	struct tcp_conn *c;
	struct tcp_vi *vi;
	int fd, rc;

	nic = tcp_nic_enter(ConnHandle, TCP_OBJ_CONN, (void **)&c);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	vi = tcp_obj_in(nic, ViHandle, TCP_OBJ_VI);
	if (vi == NULL || !c->claimed) {
		tcp_nic_leave(nic);
		return VIP_INVALID_PARAMETER;
	}
	if (vi->state != VIP_STATE_IDLE) {
		tcp_nic_leave(nic);
		return VIP_INVALID_STATE;
	}
	if (c->state == TCP_CONN_GONE) {
		/* the requester gave up before the accept */
		tcp_conn_free(nic, c);
		tcp_nic_leave(nic);
		return VIP_TIMEOUT;
	}
	/* VIA §4.1, §9.4.2: the levels match, the providers agree on the MTU
	 * (the same on both ends), the QoS too; on a conflict the request
	 * stays valid and nothing is sent */
	tcp_vi_attr_from_wire(&c->in.hello.attr, &remote);
	rc = remote.ReliabilityLevel != vi->reliability ? -EPROTONOSUPPORT
	     : remote.MaxTransferSize != vi->max_transfer ? -EMSGSIZE
	     : remote.QoS != vi->qos ? -EDOM : 0;
	if (rc != 0) {
		tcp_nic_leave(nic);
		return via_vip_return(rc);
	}
	/* VIA §5.2: Connect Pending until the accept is done, which it is
	 * within this call (the answer is written now) */
	rc = answer(c->fd, TCP_WIRE_ACCEPT, vi);
	if (rc != 0) {
		/* the stream is gone: the requester gave up */
		tcp_conn_free(nic, c);
		tcp_nic_leave(nic);
		return VIP_TIMEOUT;
	}
	fd = c->fd;
	c->fd = -1;
	tcp_conn_free(nic, c);
	rc = tcp_vi_connected(vi, fd);
	if (rc != 0)
		close(fd);
	tcp_nic_leave(nic);
	return via_vip_return(rc);
}

VIP_RETURN
tcp_connect_reject(VIP_CONN_HANDLE ConnHandle)
{
	struct tcp_nic *nic;
	struct tcp_conn *c;

	nic = tcp_nic_enter(ConnHandle, TCP_OBJ_CONN, (void **)&c);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (!c->claimed) {
		tcp_nic_leave(nic);
		return VIP_INVALID_PARAMETER;
	}
	/* VIA §9.4.3: the requester is told; its call returns VIP_REJECT */
	if (c->fd >= 0) {
		int rc = answer(c->fd, TCP_WIRE_REJECT, NULL);

		if (rc != 0)
			tcp_log("a rejection could not be sent: %s", strerror(-rc));
		tcp_linger_close(nic, c->fd);
		c->fd = -1;
	}
	tcp_conn_free(nic, c);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

/* ---- requester side ------------------------------------------------------- */

/* Wait for @p events on @p fd until @p deadline. @return 0, -ETIMEDOUT, -errno */
static int
wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int rc;

	for (;;) {
		uint64_t now = tcp_now_ms();
		int ms = deadline == UINT64_MAX ? -1
			 : now >= deadline ? 0
			 : deadline - now > INT32_MAX ? INT32_MAX : (int)(deadline - now);

		rc = poll(&p, 1, ms);
		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Write @p len bytes by @p deadline. @return 0, -errno */
static int
write_all(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const uint8_t *p = buf;
	ssize_t n;
	int rc;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Read exactly @p len bytes by @p deadline: no byte of what follows. @return 0, -errno */
static int
read_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;
	ssize_t n;
	int rc;

	while (len > 0) {
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		/* the server dropped the request unanswered (its backlog is
		 * full, its NIC closed) or VipDisconnect shut the stream */
		if (n == 0)
			return -ECONNRESET;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/*
 * Connect @p fd to @p host (a NIC address), send @p hello and read the
 * answer. @return 0 and the answer's header (host order) and body, or
 * -ETIMEDOUT, -EHOSTUNREACH (nothing listens there), -errno
 */
static int
handshake(int fd, const uint8_t host[6], const void *hello, size_t hello_len, uint64_t deadline,
	  struct tcp_wire_hdr *hdr, struct tcp_wire_answer *body)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(int);
	int rc, err = 0;

	memcpy(&sa.sin_addr, host, 4);
	memcpy(&sa.sin_port, host + 4, 2);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (errno != EINPROGRESS)
			return errno == ECONNREFUSED ? -EHOSTUNREACH : -errno;
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc != 0)
			return rc;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) != 0)
			return -errno;
		/* §4.1: "not reachable": no NIC listens at that address */
		if (err == ECONNREFUSED)
			return -EHOSTUNREACH;
		if (err != 0)
			return -err;
	}
	set_nodelay(fd);
	rc = write_all(fd, hello, hello_len, deadline);
	if (rc == 0)
		rc = read_all(fd, hdr, sizeof(*hdr), deadline);
	if (rc != 0)
		return rc;
	tcp_wire_hdr_decode(hdr, hdr);
	if ((hdr->type != TCP_WIRE_ACCEPT && hdr->type != TCP_WIRE_REJECT) ||
	    hdr->len != sizeof(*body))
		return -EPROTO;
	rc = read_all(fd, body, sizeof(*body), deadline);
	if (rc != 0)
		return rc;
	if (be32toh(body->magic) != TCP_WIRE_MAGIC || be16toh(body->version) != TCP_WIRE_VERSION)
		return -EPROTO;
	return 0;
}

VIP_RETURN
tcp_connect_request(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
		    VIP_ULONG Timeout, VIP_VI_ATTRIBUTES *RemoteViAttribs)
{
	uint64_t deadline = tcp_deadline(Timeout);
	struct {
		struct tcp_wire_hdr hdr;
		struct tcp_wire_hello body;
	} hello;
	struct tcp_wire_hdr h = { .type = TCP_WIRE_HELLO, .len = sizeof(hello.body) };
	struct tcp_wire_answer ans;
	struct tcp_wire_hdr ah;
	VIP_VI_ATTRIBUTES remote;
	uint8_t host[6];
	struct tcp_nic *nic;
	struct tcp_vi *vi;
	int fd, rc;

	if (!addr_ok(LocalAddr, false) || !addr_ok(RemoteAddr, true) || RemoteViAttribs == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (vi->state != VIP_STATE_IDLE) {
		tcp_nic_leave(nic);
		return VIP_INVALID_STATE;
	}
	/* VIA §9.4.4: "Specifying a timeout value of zero is invalid and will
	 * result in an immediate timeout error" */
	if (Timeout == 0) {
		tcp_nic_leave(nic);
		return VIP_TIMEOUT;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		tcp_nic_leave(nic);
		return VIP_ERROR_RESOURCE;
	}
	memset(&hello, 0, sizeof(hello));
	tcp_wire_hdr_encode(&h, &hello.hdr);
	hello.body.magic = htobe32(TCP_WIRE_MAGIC);
	hello.body.version = htobe16(TCP_WIRE_VERSION);
	addr_to_wire(nic->addr, LocalAddr, &hello.body.src);
	addr_to_wire(RemoteAddr->HostAddress, RemoteAddr, &hello.body.dst);
	tcp_vi_attr_to_wire(vi, &hello.body.attr);
	memcpy(host, RemoteAddr->HostAddress, 6);
	/* VIA §5.2: Connect Pending for the length of the handshake, done
	 * without the lock; VipDisconnect shuts cm_fd to abort it */
	vi->state = VIP_STATE_CONNECT_PENDING;
	vi->cm_fd = fd;
	tcp_nic_leave(nic);

	rc = handshake(fd, host, &hello, sizeof(hello), deadline, &ah, &ans);

	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL) {
		/* the VI was destroyed or the NIC closed meanwhile */
		close(fd);
		return VIP_INVALID_PARAMETER;
	}
	if (vi->state != VIP_STATE_CONNECT_PENDING || vi->cm_fd != fd) {
		/* VipDisconnect aborted it (the VI is Idle, maybe requesting again) */
		close(fd);
		tcp_nic_leave(nic);
		return VIP_ERROR_RESOURCE;
	}
	vi->cm_fd = -1;
	if (rc == 0 && ah.type == TCP_WIRE_REJECT)
		rc = -ECONNREFUSED;
	if (rc == 0) {
		/* the server checked the attributes; a server that did not is not this provider */
		tcp_vi_attr_from_wire(&ans.attr, &remote);
		if (remote.ReliabilityLevel != vi->reliability ||
		    remote.MaxTransferSize != vi->max_transfer || remote.QoS != vi->qos)
			rc = -EPROTO;
	}
	if (rc == 0)
		rc = tcp_vi_connected(vi, fd);
	if (rc != 0) {
		/* VIA §5.2: a timeout or rejection returns the VI to Idle */
		vi->state = VIP_STATE_IDLE;
		close(fd);
		tcp_nic_leave(nic);
		return via_vip_return(rc);
	}
	*RemoteViAttribs = remote;
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_disconnect(VIP_VI_HANDLE ViHandle)
{
	struct tcp_nic *nic;
	struct tcp_vi *vi;

	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	/* VIA §9.4.5, §5: from any state to Idle, every descriptor flushed
	 * (on an Idle VI, those posted to its receive queue, §5.1) */
	tcp_vi_disconnect(vi);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}
