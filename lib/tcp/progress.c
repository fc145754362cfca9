/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NIC's progress thread: the "VI NIC" of this provider (VIA §2.1.2,
 * §6.3). It sleeps in epoll_wait on the listening socket, every stream and
 * an eventfd, and wakes only when one of them has something: no CPU is
 * used while nothing moves. For each batch of events it takes the NIC's
 * lock, reads frames (rx.c), carries on writes the socket could not take
 * at once (tx.c), takes connection requests (cm.c), and finishes closing
 * streams. Then, without the lock, it calls the consumer's error handler
 * with the asynchronous errors of the batch (VIA §9.9.1: "not guaranteed
 * to run in the context of the calling thread").
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_prov.h"

/* a closing stream is drained this long at most */
#define LINGER_MS 2000u
#define MAX_EVENTS 64

static const char *const error_names[] = {
	[VIP_ERROR_POST_DESC] = "VIP_ERROR_POST_DESC",
	[VIP_ERROR_CONN_LOST] = "VIP_ERROR_CONN_LOST",
	[VIP_ERROR_RECVQ_EMPTY] = "VIP_ERROR_RECVQ_EMPTY",
	[VIP_ERROR_VI_OVERRUN] = "VIP_ERROR_VI_OVERRUN",
	[VIP_ERROR_RDMAW_PROT] = "VIP_ERROR_RDMAW_PROT",
	[VIP_ERROR_RDMAW_DATA] = "VIP_ERROR_RDMAW_DATA",
	[VIP_ERROR_RDMAW_ABORT] = "VIP_ERROR_RDMAW_ABORT",
	[VIP_ERROR_RDMAR_PROT] = "VIP_ERROR_RDMAR_PROT",
	[VIP_ERROR_COMP_PROT] = "VIP_ERROR_COMP_PROT",
	[VIP_ERROR_RDMA_TRANSPORT] = "VIP_ERROR_RDMA_TRANSPORT",
	[VIP_ERROR_CATASTROPHIC] = "VIP_ERROR_CATASTROPHIC",
};

uint64_t
tcp_ep_key(uint32_t id)
{
	/* above the NIC's own keys (TCP_EP_LISTEN, TCP_EP_WAKE) */
	return (1ull << 32) | id;
}

void
tcp_progress_wake(struct tcp_nic *nic)
{
	eventfd_write(nic->wake_fd, 1);
}

/* VIA §9.9.1: with no handler registered, the error is logged. */
static void
default_handler(VIP_ERROR_DESCRIPTOR *e)
{
	fprintf(stderr, "vipl-tcp: asynchronous error %s (VI %p, descriptor %p, op 0x%lx)\n",
		(unsigned)e->ErrorCode < sizeof(error_names) / sizeof(error_names[0])
			? error_names[e->ErrorCode] : "?",
		e->ViHandle, (void *)e->DescriptorPtr, e->OpCode);
}

/* ---- closing streams ----------------------------------------------------- */

static void
linger_free(struct tcp_nic *nic, struct tcp_linger *l)
{
	TAILQ_REMOVE(&nic->lingers, l, link);
	close(l->fd);
	tcp_obj_del(nic, &l->obj);
	nic->nb_linger--;
	free(l);
}

/*
 * Our end is shut: the peer reads all we sent, then the end of the stream.
 * Closing the socket while the peer's frames are still unread would reset
 * the connection, and a reset can make the peer lose what we sent last
 * (the NAK that tells it why), so the socket is read to its end first.
 */
void
tcp_linger_close(struct tcp_nic *nic, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct tcp_linger *l;

	shutdown(fd, SHUT_WR);
	l = nic->nb_linger < TCP_MAX_LINGER ? calloc(1, sizeof(*l)) : NULL;
	if (l == NULL || tcp_obj_add(nic, &l->obj, TCP_OBJ_LINGER) != 0) {
		free(l);
		close(fd);
		return;
	}
	ev.data.u64 = tcp_ep_key(l->obj.id);
	if (epoll_ctl(nic->ep_fd, EPOLL_CTL_MOD, fd, &ev) != 0 &&
	    epoll_ctl(nic->ep_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		tcp_obj_del(nic, &l->obj);
		free(l);
		close(fd);
		return;
	}
	l->fd = fd;
	l->deadline_ms = tcp_now_ms() + LINGER_MS;
	TAILQ_INSERT_TAIL(&nic->lingers, l, link);
	nic->nb_linger++;
}

static void
linger_input(struct tcp_nic *nic, struct tcp_linger *l)
{
	ssize_t n;
	int turns;

	for (turns = 0; turns < 16; turns++) {
		n = recv(l->fd, nic->scratch, sizeof(nic->scratch), MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		/* the end, or the peer reset it */
		linger_free(nic, l);
		return;
	}
}

/* ---- the loop ------------------------------------------------------------- */

/* Take the streams the listening socket has for us. */
static void
listen_input(struct tcp_nic *nic)
{
	int fd;

	while ((fd = accept4(nic->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
		tcp_conn_new(nic, fd);
}

static void
dispatch(struct tcp_nic *nic, const struct epoll_event *ev)
{
	struct tcp_obj *obj;

	if (ev->data.u64 == TCP_EP_LISTEN) {
		listen_input(nic);
		return;
	}
	if (ev->data.u64 == TCP_EP_WAKE) {
		eventfd_t v;

		eventfd_read(nic->wake_fd, &v);
		return;
	}
	/* an object of an earlier event of the batch may be gone */
	obj = via_idtab_lookup(&nic->objs, (uint32_t)ev->data.u64);
	if (obj == NULL)
		return;
	switch (obj->type) {
	case TCP_OBJ_VI: {
		struct tcp_vi *vi = (struct tcp_vi *)obj;

		if (vi->state == VIP_STATE_CONNECTED &&
		    (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
			tcp_rx_pull(vi);
		if (vi->state == VIP_STATE_CONNECTED && (ev->events & EPOLLOUT))
			tcp_tx_push(vi);
		break;
	}
	case TCP_OBJ_CONN:
		tcp_conn_input(nic, (struct tcp_conn *)obj);
		break;
	case TCP_OBJ_LINGER:
		linger_input(nic, (struct tcp_linger *)obj);
		break;
	default:
		break;
	}
}

/* Drop what ran out of time. @return epoll_wait's timeout until the next deadline */
static int
timers(struct tcp_nic *nic)
{
	uint64_t now = tcp_now_ms(), next = UINT64_MAX;
	struct tcp_linger *l, *ln;
	struct tcp_conn *c, *cn;

	for (l = TAILQ_FIRST(&nic->lingers); l != NULL; l = ln) {
		ln = TAILQ_NEXT(l, link);
		if (l->deadline_ms <= now)
			linger_free(nic, l);
		else if (l->deadline_ms < next)
			next = l->deadline_ms;
	}
	for (c = TAILQ_FIRST(&nic->conns); c != NULL; c = cn) {
		cn = TAILQ_NEXT(c, link);
		if (c->state != TCP_CONN_HELLO)
			continue;
		if (c->deadline_ms <= now)
			tcp_conn_free(nic, c);
		else if (c->deadline_ms < next)
			next = c->deadline_ms;
	}
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

/* Call the error handler with each error queued, outside the lock. */
static void
deliver(struct tcp_async_list *list, VIP_ERROR_HANDLER handler, void *ctx)
{
	struct tcp_async *e;

	while ((e = STAILQ_FIRST(list)) != NULL) {
		STAILQ_REMOVE_HEAD(list, link);
		if (handler != NULL)
			handler(ctx, &e->desc);
		else
			default_handler(&e->desc);
		free(e);
	}
}

void *
tcp_progress_main(void *arg)
{
	struct tcp_nic *nic = arg;
	struct epoll_event evs[MAX_EVENTS];
	int timeout = -1, n, i;

	for (;;) {
		struct tcp_async_list errors = STAILQ_HEAD_INITIALIZER(errors);
		VIP_ERROR_HANDLER handler;
		void *ctx;

		n = epoll_wait(nic->ep_fd, evs, MAX_EVENTS, timeout);
		pthread_mutex_lock(&nic->lock);
		if (!nic->open) {
			pthread_mutex_unlock(&nic->lock);
			break;
		}
		for (i = 0; i < n; i++)
			dispatch(nic, &evs[i]);
		timeout = timers(nic);
		STAILQ_CONCAT(&errors, &nic->errors);
		nic->nb_errors = 0;
		handler = nic->err_handler;
		ctx = nic->err_ctx;
		pthread_mutex_unlock(&nic->lock);
		deliver(&errors, handler, ctx);
	}
	return NULL;
}
