/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The upgrade image's parser (daemon/image.c; docs/design.md section 18):
 * a sample image of every record type parses; each of a list of defects -
 * a wrong length, an enum out of range, an id of no slot or of the wrong
 * generation bits, a reference to another session's object, an offset out
 * of its segment, ring indices past their capacity, a client's table of
 * regions whose windows are not its share file's, frames or held
 * completions missing, an fd named twice, another version - is refused
 * with -EINVAL (-EPROTO for a version), and every cut of the image too.
 *
 * With --seed FILE it also writes the sample as the fuzzer's seed
 * (tests/fuzz/corpus/image/seed-sample).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vipl.h>

#include "image.h"
#include "test_common.h"
#include "via_idtab.h"

/* One image's records, each an explicit struct the tests may spoil. */
struct sample {
	struct via_img_daemon dm;
	struct via_img_nic nic;
	struct via_img_table tab[VIA_IMG_T_COUNT];
	uint32_t slot_ids[VIA_IMG_T_COUNT];
	struct via_img_user user;
	struct via_img_session ses;
	struct via_img_extent ext;
	struct via_img_ptag ptag;
	struct via_img_pmem pmem;
	struct via_img_pmem view;           /* a window of the share file, the table's */
	struct via_img_tpt tpt;
	unsigned nb_tpt;                    /* TPT records written (1) */
	struct via_img_mr mr;
	struct via_img_cq cq;
	struct via_img_vi vi;
	struct via_img_seg vi_segs[2];      /* the receive's, then the send's */
	struct via_img_sq_pend sq;
	struct via_img_frame fr[2];
	uint8_t frame_bytes[100];
	struct via_img_cm_req req;
	struct via_img_cm_listener lis;
	struct via_img_reap reap;
	int32_t reap_fds[2];
	uint32_t version;
};

/* The index bits of a table of @p capacity, as viad's has them. */
static uint32_t
bits_for(uint32_t capacity)
{
	struct via_idtab t;
	uint32_t b = 0;

	if (via_idtab_init(&t, capacity) == 0) {
		b = t.idx_bits;
		via_idtab_fini(&t);
	}
	return b;
}

static void
sample_init(struct sample *x)
{
	static const uint32_t caps[VIA_IMG_T_COUNT] = {
		[VIA_IMG_T_SESSIONS] = 256, [VIA_IMG_T_PTAGS] = 65536, [VIA_IMG_T_MRS] = 262144,
		[VIA_IMG_T_CQS] = 4096, [VIA_IMG_T_VIS] = 16384, [VIA_IMG_T_PMEMS] = 16384,
		[VIA_IMG_T_CM_REQS] = 4096,
	};
	const uint64_t seg = 32u << 20, errq = 64, cq_off = 1 << 20;
	unsigned t;

	memset(x, 0, sizeof(*x));
	x->version = VIA_IMAGE_VERSION;
	x->dm = (struct via_img_daemon){
		.nb_nics = 1, .max_desc_per_queue = 1024, .max_segments_per_desc = 252,
		.max_discriminator_len = 64, .max_cq_entries = 65536, .listen_fd = 10,
		.wake_fd = 11, .nb_user_res = 12,
	};
	x->nic = (struct via_img_nic){ .name = "via0", .mac = { 2, 0, 0, 0, 0, 1 }, .mtu = 1500 };
	for (t = 0; t < VIA_IMG_T_COUNT; t++) {
		x->tab[t] = (struct via_img_table){ .table = t, .capacity = caps[t], .nb_slots = 1 };
		/* slot 0 of generation 3 */
		x->slot_ids[t] = (3u << bits_for(caps[t])) | 1;
	}
	x->user = (struct via_img_user){ .uid = 1000 };
	x->ses = (struct via_img_session){
		.id = x->slot_ids[VIA_IMG_T_SESSIONS], .nic = 0, .sock = 20, .pidfd = 21,
		.seg_fd = 22, .share_fd = 23, .mem_fd = 24, .witness_fd = 25, .in_fd = -1,
		.pid = 4242, .uid = 1000, .gid = 1000, .deferred = 1, .opened = 1,
		.bell_off = 8192, .bell_words = 256, .errq_off = errq, .seg_len = seg,
		.nb_extents = 1,
	};
	x->ext = (struct via_img_extent){ .off = 4u << 20, .len = seg - (4u << 20) };
	x->ptag = (struct via_img_ptag){ .id = x->slot_ids[VIA_IMG_T_PTAGS], .session = x->ses.id };
	x->pmem = (struct via_img_pmem){
		.ref = 1, .session = x->ses.id, .id = x->slot_ids[VIA_IMG_T_PMEMS],
		.kind = VIA_IMG_PMEM_ALLOC, .fd = 30, .shmid = -1, .len = 2u << 20,
		.asked = 2u << 20, .client_va = UINT64_C(0x7f0000000000),
	};
	x->view = (struct via_img_pmem){
		.ref = 2, .session = x->ses.id, .kind = VIA_IMG_PMEM_SHARE, .fd = -1, .shmid = -1,
		.len = UINT64_C(1) << 30, .client_va = UINT64_C(1) << 30,
	};
	x->tpt = (struct via_img_tpt){ .session = x->ses.id, .capacity = 4096, .off = 3u << 20,
				       .nb_windows = 1, .window_ref = { x->view.ref } };
	x->nb_tpt = 1;
	x->mr = (struct via_img_mr){
		.handle = x->slot_ids[VIA_IMG_T_MRS], .session = x->ses.id, .ptag = x->ptag.id,
		.pmem_ref = 1, .addr = x->pmem.client_va + 64, .len = 4000,
		.page_base = x->pmem.client_va, .page_len = 4096, .writable = 1,
	};
	x->cq = (struct via_img_cq){
		.id = x->slot_ids[VIA_IMG_T_CQS], .session = x->ses.id, .capacity = 1024,
		.shm_off = cq_off, .shm_len = sizeof(struct via_shm_cq) + via_shm_cq_slots_size(1024),
		.slots_off = cq_off + sizeof(struct via_shm_cq),
		.ring = { .local = 10, .cached_peer = 5 },
	};
	x->vi = (struct via_img_vi){
		.id = x->slot_ids[VIA_IMG_T_VIS], .session = x->ses.id, .cookie = 7,
		.state = VIP_STATE_CONNECTED,
		.attr = { .reliability = VIP_SERVICE_RELIABLE_DELIVERY, .max_transfer = 65536,
			  .ptag = x->ptag.id },
		.cq = { x->cq.id, x->cq.id }, .wq_capacity = 1024,
		/* line entries with 64 bytes inline, two of four sends completed */
		.entry_size = 2 * VIA_WQE_LINE_SIZE, .completed = { 2, 0 },
		.shm_off = 2u << 20, .shm_len = via_shm_vi_size(1024, 2 * VIA_WQE_LINE_SIZE),
		.wq = { { .local = 4, .cached_peer = 9 }, { .local = 0, .cached_peer = 0 } },
		.conn_id = 0xabcdef, .remote_vi = 99, .frame_payload = 1452, .max_transfer = 65536,
		.remote_mac = { 2, 0, 0, 0, 0, 2 },
		.rx_state = 1, .rx_msg_id = 3, .rx_expected_off = 1452, .rx_capacity = 4096,
		.rx_nb_segs = 1,
		.win_size = 128, .snd_una = 5, .snd_nxt = 7, .rcv_nxt = 40, .rto_us = 1000,
		.sq_size = 128, .sq_head = 3, .sq_tail = 4,
		.ans_head = 2, .ans_tail = 3,
		.tx_active = 1, .tx_opcode = 1, .tx_nb_segs = 1, .tx_total = 9000, .tx_off = 2904,
	};
	x->vi_segs[0] = (struct via_img_seg){ .va = x->mr.addr, .len = 4000, .handle = x->mr.handle };
	x->vi_segs[1] = x->vi_segs[0];
	x->sq = (struct via_img_sq_pend){ .vi = x->vi.id, .wait = 0, .len = 64 };
	for (t = 0; t < 2; t++)
		x->fr[t] = (struct via_img_frame){ .vi = x->vi.id, .seq = 5 + t,
						   .len = sizeof(x->frame_bytes) };
	memset(x->frame_bytes, 0x5a, sizeof(x->frame_bytes));
	x->req = (struct via_img_cm_req){ .id = x->slot_ids[VIA_IMG_T_CM_REQS], .state = 0,
					  .remote_mac = { 2, 0, 0, 0, 0, 3 }, .remote_vi = 5,
					  .conn_id = 77, .expires_ms = 1000 };
	x->lis = (struct via_img_cm_listener){ .session = x->ses.id, .seq = 12,
					       .deadline_ms = UINT64_MAX,
					       .req = { .local = { .disc_len = 3 } } };
	x->reap = (struct via_img_reap){ .count = 2 };
	x->reap_fds[0] = 40;
	x->reap_fds[1] = 41;
}

/* The image of @p x: malloc'd, *@p len bytes. */
static uint8_t *
sample_build(const struct sample *x, size_t *len)
{
	struct via_image_hdr h = { .version = x->version, .rollback_fd = 3, .admin_fd = -1,
				   .abi_version = VIA_ABI_VERSION, .pid = 1, .upgrades = 1 };
	struct via_image_buf ib;
	unsigned t;

	via_image_begin(&ib);
	via_image_append(&ib, VIA_IMG_DAEMON, &x->dm, sizeof(x->dm), NULL, 0);
	via_image_append(&ib, VIA_IMG_NIC, &x->nic, sizeof(x->nic), NULL, 0);
	for (t = 0; t < VIA_IMG_T_COUNT; t++)
		via_image_append(&ib, VIA_IMG_TABLE, &x->tab[t], sizeof(x->tab[t]), &x->slot_ids[t],
				 4);
	via_image_append(&ib, VIA_IMG_USER, &x->user, sizeof(x->user), NULL, 0);
	via_image_append(&ib, VIA_IMG_SESSION, &x->ses, sizeof(x->ses), &x->ext, sizeof(x->ext));
	via_image_append(&ib, VIA_IMG_PTAG, &x->ptag, sizeof(x->ptag), NULL, 0);
	via_image_append(&ib, VIA_IMG_PMEM, &x->pmem, sizeof(x->pmem), NULL, 0);
	via_image_append(&ib, VIA_IMG_PMEM, &x->view, sizeof(x->view), NULL, 0);
	for (t = 0; t < x->nb_tpt; t++)
		via_image_append(&ib, VIA_IMG_TPT, &x->tpt, sizeof(x->tpt), NULL, 0);
	via_image_append(&ib, VIA_IMG_MR, &x->mr, sizeof(x->mr), NULL, 0);
	via_image_append(&ib, VIA_IMG_CQ, &x->cq, sizeof(x->cq), NULL, 0);
	via_image_append(&ib, VIA_IMG_VI, &x->vi, sizeof(x->vi), x->vi_segs, sizeof(x->vi_segs));
	via_image_append(&ib, VIA_IMG_SQ_PEND, &x->sq, sizeof(x->sq), NULL, 0);
	for (t = 0; t < 2; t++)
		via_image_append(&ib, VIA_IMG_FRAME, &x->fr[t], sizeof(x->fr[t]), x->frame_bytes,
				 sizeof(x->frame_bytes));
	via_image_append(&ib, VIA_IMG_CM_REQ, &x->req, sizeof(x->req), NULL, 0);
	via_image_append(&ib, VIA_IMG_CM_LISTENER, &x->lis, sizeof(x->lis), NULL, 0);
	via_image_append(&ib, VIA_IMG_REAP, &x->reap, sizeof(x->reap), x->reap_fds,
			 sizeof(x->reap_fds));
	if (via_image_finish(&ib, &h) != 0) {
		via_image_buf_free(&ib);
		return NULL;
	}
	free(ib.fds);
	*len = ib.len;
	return ib.p;
}

/* Parse the image of @p x. @return what the parser said */
static int
sample_parse(const struct sample *x, const char **why)
{
	struct via_image img;
	size_t len;
	uint8_t *p = sample_build(x, &len);
	int rc;

	if (p == NULL)
		return -ENOMEM;
	rc = via_image_parse(p, len, VIA_IMAGE_VERSION, &img, why);
	if (rc == 0)
		via_image_free(&img);
	free(p);
	return rc;
}

/* One defect and what the parser must say. */
struct defect {
	const char *what;
	void (*spoil)(struct sample *x);
	int rc;
};

#define SPOIL(name, body) static void name(struct sample *x) { body; }
SPOIL(bad_version, x->version = VIA_IMAGE_VERSION + 1)
SPOIL(no_nics, x->dm.nb_nics = 0)
SPOIL(two_nics, x->dm.nb_nics = 2)
SPOIL(slot_of_other_index, x->slot_ids[VIA_IMG_T_VIS] += 1)
SPOIL(table_twice, x->tab[VIA_IMG_T_CQS].table = VIA_IMG_T_VIS)
SPOIL(session_of_no_user, x->user.uid = 1001)
SPOIL(session_nic, x->ses.nic = 1)
SPOIL(session_seg_small, x->ses.seg_len = 4096)
SPOIL(session_errq_out, x->ses.errq_off = x->ses.seg_len - 64)
SPOIL(session_bells_out, x->ses.bell_words = 1 << 20)
SPOIL(session_errq_indices, x->ses.errq.local = 1000)
SPOIL(session_extent_out, x->ext.len += 64)
SPOIL(session_partial_request, (x->ses.in_got = 30, x->ses.in_hdr.len = 513))
SPOIL(session_no_sock, x->ses.sock = -1)
SPOIL(fd_twice, x->ses.mem_fd = x->ses.seg_fd)
SPOIL(reap_fd_twice, x->reap_fds[1] = x->dm.wake_fd)
SPOIL(ptag_of_no_session, x->ptag.session += 1 << 9)
SPOIL(pmem_kind, x->pmem.kind = VIA_IMG_PMEM_KIND_COUNT)
SPOIL(pmem_ref, x->pmem.ref = 2)
SPOIL(tpt_twice, x->nb_tpt = 2)
SPOIL(tpt_of_no_session, x->tpt.session += 1 << 9)
SPOIL(tpt_out, x->tpt.off = x->ses.seg_len - 4096)
SPOIL(tpt_capacity, x->tpt.capacity = 1000)
SPOIL(tpt_windows, x->tpt.nb_windows = VIA_TPT_WINDOWS + 1)
SPOIL(tpt_window_past_count, x->tpt.window_ref[1] = x->view.ref)
SPOIL(tpt_window_twice, (x->tpt.nb_windows = 2, x->tpt.window_ref[1] = x->view.ref))
SPOIL(tpt_window_of_no_memory, x->tpt.window_ref[0] = 3)
SPOIL(tpt_window_an_allocation, x->tpt.window_ref[0] = x->pmem.ref)
SPOIL(mr_out_of_pmem, x->mr.addr = x->pmem.client_va + x->pmem.len)
SPOIL(mr_pages, x->mr.page_base += 1)
SPOIL(mr_ptag_other, x->mr.ptag = 5)
SPOIL(cq_capacity, x->cq.capacity = 1000)
SPOIL(cq_slots_out, x->cq.slots_off = x->ses.seg_len - 64)
SPOIL(cq_indices, x->cq.ring.local = 5000)
SPOIL(vi_state, x->vi.state = 9)
SPOIL(vi_reliability, x->vi.attr.reliability = 3)
SPOIL(vi_bell, x->vi.bell = 256 * 64)
SPOIL(vi_cq, x->vi.cq[1] = 12345)
SPOIL(vi_layout, x->vi.shm_off = x->ses.seg_len - 4096)
SPOIL(vi_wq_indices, x->vi.wq[0].cached_peer = x->vi.wq[0].local + 2000)
SPOIL(vi_frame_payload, x->vi.frame_payload = 1500)
SPOIL(vi_rx_segs, x->vi.rx_nb_segs = 300)
SPOIL(vi_window, x->vi.snd_nxt = x->vi.snd_una + 200)
SPOIL(vi_frames_missing, x->vi.snd_nxt = 8)
SPOIL(vi_sq_missing, x->vi.sq_tail = 5)
SPOIL(vi_answers, x->vi.ans_tail = x->vi.ans_head + 17)
SPOIL(vi_tx_off, x->vi.tx_off = x->vi.tx_total + 1)
SPOIL(vi_reply_op, x->vi.reply_op = VIA_CTL_OPEN)
SPOIL(vi_entry_size, x->vi.entry_size = 100)
SPOIL(vi_entries_layout, x->vi.shm_len = via_shm_vi_size(1024, sizeof(struct via_wqe)))
SPOIL(vi_completed, x->vi.completed[0] = 5)
SPOIL(frame_seq, x->fr[1].seq = 9)
SPOIL(frame_short, x->fr[0].len = 10)
SPOIL(sq_wait, x->sq.wait = 7)
SPOIL(req_state, x->req.state = 6)
SPOIL(req_nic, x->req.nic = 3)
SPOIL(listener_disc, x->lis.req.filter.disc_len = 65)
SPOIL(deferred_count, x->ses.deferred = 2)
SPOIL(user_res, x->dm.nb_user_res = 17)
#undef SPOIL

static const struct defect defects[] = {
	{ "another version", bad_version, -EPROTO },
	{ "no NIC", no_nics, -EINVAL },
	{ "a NIC record missing", two_nics, -EINVAL },
	{ "a slot id whose index is another slot's", slot_of_other_index, -EINVAL },
	{ "a table twice", table_twice, -EINVAL },
	{ "a session of no user", session_of_no_user, -EINVAL },
	{ "a session on no NIC", session_nic, -EINVAL },
	{ "a segment smaller than what is in it", session_seg_small, -EINVAL },
	{ "an error queue out of the segment", session_errq_out, -EINVAL },
	{ "doorbells out of the segment", session_bells_out, -EINVAL },
	{ "error queue indices past its capacity", session_errq_indices, -EINVAL },
	{ "a free extent out of the segment", session_extent_out, -EINVAL },
	{ "a partly read request longer than a body", session_partial_request, -EINVAL },
	{ "a session without a socket", session_no_sock, -EINVAL },
	{ "one fd named twice", fd_twice, -EINVAL },
	{ "a reaped fd named twice", reap_fd_twice, -EINVAL },
	{ "a tag of no session", ptag_of_no_session, -EINVAL },
	{ "memory of no kind", pmem_kind, -EINVAL },
	{ "memory numbered out of order", pmem_ref, -EINVAL },
	{ "a session's table of regions twice", tpt_twice, -EINVAL },
	{ "a table of regions of no session", tpt_of_no_session, -EINVAL },
	{ "a table of regions out of the segment", tpt_out, -EINVAL },
	{ "a table of regions not a power of two", tpt_capacity, -EINVAL },
	{ "more windows than VIA_TPT_WINDOWS", tpt_windows, -EINVAL },
	{ "a window past the table's count", tpt_window_past_count, -EINVAL },
	{ "one view two windows of a table", tpt_window_twice, -EINVAL },
	{ "a window of no memory record", tpt_window_of_no_memory, -EINVAL },
	{ "a window that is an allocation", tpt_window_an_allocation, -EINVAL },
	{ "a region outside its memory", mr_out_of_pmem, -EINVAL },
	{ "a region's pages not around it", mr_pages, -EINVAL },
	{ "a region's tag of no session of its", mr_ptag_other, -EINVAL },
	{ "a CQ not a power of two", cq_capacity, -EINVAL },
	{ "a CQ's slots out of the segment", cq_slots_out, -EINVAL },
	{ "a CQ's indices past its capacity", cq_indices, -EINVAL },
	{ "a VI state of none", vi_state, -EINVAL },
	{ "two reliability levels", vi_reliability, -EINVAL },
	{ "a doorbell past the session's", vi_bell, -EINVAL },
	{ "a VI's CQ of none", vi_cq, -EINVAL },
	{ "a VI out of the segment", vi_layout, -EINVAL },
	{ "work queue indices past the capacity", vi_wq_indices, -EINVAL },
	{ "a frame payload larger than the port's", vi_frame_payload, -EINVAL },
	{ "more segments than max_segments_per_desc", vi_rx_segs, -EINVAL },
	{ "more frames in flight than the window", vi_window, -EINVAL },
	{ "an unacknowledged frame missing", vi_frames_missing, -EINVAL },
	{ "a held completion missing", vi_sq_missing, -EINVAL },
	{ "more RDMA Read answers than VIA_MAX_READS", vi_answers, -EINVAL },
	{ "a message framed past its end", vi_tx_off, -EINVAL },
	{ "a deferred reply of an op never deferred", vi_reply_op, -EINVAL },
	{ "ring entries of no size viad knows", vi_entry_size, -EINVAL },
	{ "line entries in a VI laid out for 16-byte ones", vi_entries_layout, -EINVAL },
	{ "more completions written than entries taken", vi_completed, -EINVAL },
	{ "frames out of sequence", frame_seq, -EINVAL },
	{ "a frame shorter than its headers", frame_short, -EINVAL },
	{ "a held completion waiting for nothing known", sq_wait, -EINVAL },
	{ "a request of no state", req_state, -EINVAL },
	{ "a request on no NIC", req_nic, -EINVAL },
	{ "a filter discriminator too long", listener_disc, -EINVAL },
	{ "a deferred count that is not the session's", deferred_count, -EINVAL },
	{ "more per-user resources than the format has", user_res, -EINVAL },
};

/* Every cut of the image, and every byte flipped in its header. */
static void
cuts_and_flips(const struct sample *x)
{
	struct via_image img;
	const char *why;
	size_t len, cut;
	uint8_t *p = sample_build(x, &len);
	unsigned i, refused = 0;

	if (p == NULL)
		return;
	for (cut = 0; cut < len; cut += 8)
		refused += via_image_parse(p, cut, VIA_IMAGE_VERSION, &img, &why) == -EINVAL;
	CHECK_EQ(refused, (len + 7) / 8);
	for (i = 0; i < len; i += 61) {
		p[i] ^= 0x10;
		CHECK_RC(via_image_parse(p, len, VIA_IMAGE_VERSION, &img, &why) != 0 ? -EINVAL : 0,
			 -EINVAL);
		p[i] ^= 0x10;
	}
	free(p);
}

int
main(int argc, char **argv)
{
	struct sample x;
	const char *why = NULL;
	unsigned i;

	sample_init(&x);
	CHECK_RC(sample_parse(&x, &why), 0);
	if (why != NULL)
		fprintf(stderr, "the sample refused: %s\n", why);
	if (argc == 3 && strcmp(argv[1], "--seed") == 0) {
		size_t len;
		uint8_t *p = sample_build(&x, &len);
		FILE *f = fopen(argv[2], "w");

		/* fuzz_image's input: a mode byte (0: the header made right), the image */
		CHECK(p != NULL && f != NULL && fputc(0, f) == 0 && fwrite(p, 1, len, f) == len);
		if (f != NULL)
			fclose(f);
		free(p);
	}
	for (i = 0; i < sizeof(defects) / sizeof(defects[0]); i++) {
		int rc;

		sample_init(&x);
		defects[i].spoil(&x);
		why = NULL;
		rc = sample_parse(&x, &why);
		test_checks++;
		if (getenv("VERBOSE") != NULL)
			printf("%s: %s\n", defects[i].what, why != NULL ? why : "accepted");
		if (rc != defects[i].rc) {
			test_failures++;
			fprintf(stderr, "FAIL %s: %d (%s), want %d\n", defects[i].what, rc,
				why != NULL ? why : "accepted", defects[i].rc);
		}
	}
	sample_init(&x);
	cuts_and_flips(&x);
	printf("%u checks, %u failed\n", test_checks, test_failures);
	return test_failures != 0;
}
