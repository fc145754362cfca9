/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The upgrade image's parser (daemon/image.c; docs/design.md section 18) on
 * arbitrary images: a new viad reads the image its predecessor wrote, and
 * treats it as untrusted input.
 *
 * The input is the image. When its first byte is even, the harness first
 * makes its header right (magic, version, sizes, record count, checksum),
 * so that the mutations reach the records rather than stop at the
 * checksum; when odd, the input is parsed as it is.
 *
 * Properties: no memory error and no leak, whatever the input; on success,
 * every byte of every record the adopter reads (each record's payload,
 * every fd, segment list, frame and slot id) lies inside the image, and
 * what the parser promises holds: each table is there once, each VI's held
 * completions and frames follow it in number, every fd is named once.
 */
#include "fuzz_common.h"

#include <errno.h>

#include "image.h"

/* Read every byte of [p, p + len): ASan catches what lies outside the input. */
static uint64_t
touch(const void *p, size_t len)
{
	const volatile uint8_t *b = p;
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < len; i++)
		sum += b[i];
	return sum;
}

/* A record count and checksum that make @p buf (@p len bytes) reach the records. */
static void
fix_header(uint8_t *buf, size_t len)
{
	struct via_image_hdr h;
	struct via_image_rec r;
	size_t off = sizeof(h);
	uint32_t n = 0;

	memcpy(&h, buf, sizeof(h));
	h.magic = VIA_IMAGE_MAGIC;
	h.version = VIA_IMAGE_VERSION;
	h.header_size = sizeof(h);
	h.total_len = len;
	h.abi_version = VIA_ABI_VERSION;
	while (len - off >= sizeof(r)) {
		memcpy(&r, buf + off, sizeof(r));
		if (r.len > len - off - sizeof(r))
			break;
		off += sizeof(r) + r.len;
		n++;
	}
	h.nb_records = n;
	h.crc = 0;
	memcpy(buf, &h, sizeof(h));
	h.crc = via_image_crc(0, buf, len);
	memcpy(buf, &h, sizeof(h));
}

/* What the adopter reads, read: every record and what follows it. */
static void
walk(const struct via_image *img, const uint8_t *buf, size_t len)
{
	uint32_t t, i, k;

	for (t = 0; t < VIA_IMG_TYPE_COUNT; t++) {
		for (i = 0; i < img->nb_recs[t]; i++) {
			const uint8_t *p = img->recs[t][i].p;

			FUZZ_ASSERT(p >= buf && p + img->recs[t][i].len <= buf + len);
			touch(p, img->recs[t][i].len);
		}
	}
	FUZZ_ASSERT(img->nb_recs[VIA_IMG_DAEMON] == 1 && img->daemon != NULL);
	for (t = 0; t < VIA_IMG_T_COUNT; t++) {
		FUZZ_ASSERT(img->tables[t] != NULL);
		touch(img->slots[t], (size_t)img->tables[t]->nb_slots * 4);
	}
	for (i = 0; i < img->nb_recs[VIA_IMG_VI]; i++) {
		const struct via_img_vi *v = img->recs[VIA_IMG_VI][i].p;
		uint32_t nsq = v->sq_tail - v->sq_head, nfr = v->snd_nxt - v->snd_una;

		FUZZ_ASSERT(img->vi_sq_first[i] + nsq <= img->nb_recs[VIA_IMG_SQ_PEND]);
		FUZZ_ASSERT(img->vi_frame_first[i] + nfr <= img->nb_recs[VIA_IMG_FRAME]);
		for (k = 0; k < nfr; k++) {
			const struct via_img_frame *f =
				img->recs[VIA_IMG_FRAME][img->vi_frame_first[i] + k].p;

			FUZZ_ASSERT(f->vi == v->id && f->seq == v->snd_una + k);
			touch(f + 1, f->len);
		}
		for (k = 0; k < nsq; k++) {
			const struct via_img_sq_pend *q =
				img->recs[VIA_IMG_SQ_PEND][img->vi_sq_first[i] + k].p;

			FUZZ_ASSERT(q->vi == v->id);
			touch(q + 1, (size_t)q->nb_segs * sizeof(struct via_img_seg));
		}
		touch(v + 1, ((size_t)v->rx_nb_segs + v->tx_nb_segs) * sizeof(struct via_img_seg));
	}
	for (i = 1; i < img->nb_fds; i++)
		FUZZ_ASSERT(img->fds[i] > img->fds[i - 1]);
	if (img->reap != NULL)
		touch(img->reap_fds, (size_t)img->reap->count * 4);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct via_image img;
	const char *why = NULL;
	uint8_t *buf;
	int rc;

	if (size == 0)
		return 0;
	/* the image lies in its own buffer, exactly as long, 8-byte aligned */
	buf = malloc(size - 1 + 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data + 1, size - 1);
	if ((data[0] & 1) == 0 && size - 1 >= sizeof(struct via_image_hdr))
		fix_header(buf, size - 1);
	rc = via_image_parse(buf, size - 1, VIA_IMAGE_VERSION, &img, &why);
	if (rc == 0) {
		walk(&img, buf, size - 1);
		via_image_free(&img);
	} else {
		FUZZ_ASSERT(rc == -EINVAL || rc == -EPROTO || rc == -E2BIG || rc == -ENOMEM);
		FUZZ_ASSERT(why != NULL);
	}
	free(buf);
	return 0;
}
