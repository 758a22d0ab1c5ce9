/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The sluice authors
 *
 * mpart: reassembly of MPUB_PART fragments into one MPUB (see mpart.h for the rules).
 */
#include <stdint.h>
#include <string.h>

#include "bytes.h"
#include "err.h"
#include "mpart.h"

int
sl_mpart_init(struct sl_mpart *mp, const struct sl_mpart_conf *conf)
{
	uint32_t i;

	if (mp == NULL || conf == NULL || conf->per_source > SL_MPART_SLOTS)
		return -SL_E_INVAL;
	mp->per_source = conf->per_source != 0 ? conf->per_source : SL_MPART_PER_SOURCE;
	mp->expiry_ns = conf->expiry_ns != 0 ? conf->expiry_ns : SL_MPART_EXPIRY_NS;
	mp->nused = 0;
	memset(&mp->st, 0, sizeof(mp->st));
	for (i = 0; i < SL_MPART_SLOTS; i++)
		mp->slot[i].used = 0;
	return 0;
}

static void
slot_free(struct sl_mpart *mp, struct sl_mpart_slot *s)
{
	s->used = 0;
	mp->nused--;
}

void
sl_mpart_expire(struct sl_mpart *mp, uint64_t now_ns)
{
	uint32_t i;

	for (i = 0; i < SL_MPART_SLOTS && mp->nused > 0; i++) {
		struct sl_mpart_slot *s = &mp->slot[i];

		if (s->used && now_ns - s->t0_ns >= mp->expiry_ns) {
			slot_free(mp, s);
			mp->st.expired++;
		}
	}
}

void
sl_mpart_release(struct sl_mpart *mp, uint32_t handle)
{
	if (handle < SL_MPART_SLOTS && mp->slot[handle].used)
		slot_free(mp, &mp->slot[handle]);
}

/* The fragment's MPUB is the slot's: same prefix and shape. */
static int
same_mpub(const struct sl_mpart_slot *s, const struct sl_wire_mpart *f)
{
	return s->partition == f->partition && s->topic_len == f->topic_len &&
	       s->flags == f->flags && s->trace_id == f->trace_id && s->nfrag == f->nfrag &&
	       s->count == f->count && s->total_len == f->total_len &&
	       memcmp(s->buf + 4, f->topic, f->topic_len) == 0;
}

/* Start slot s with f's MPUB: its body prefix, as an MPUB body has it. */
static void
slot_start(struct sl_mpart *mp, struct sl_mpart_slot *s, uint64_t session, uint64_t seq,
	   uint32_t src_ip, const struct sl_wire_mpart *f, uint64_t now_ns)
{
	uint8_t *p = s->buf;

	s->used = 1;
	s->session = session;
	s->seq = seq;
	s->src_ip = src_ip;
	s->t0_ns = now_ns;
	s->partition = f->partition;
	s->topic_len = f->topic_len;
	s->flags = f->flags;
	s->trace_id = f->trace_id;
	s->nfrag = f->nfrag;
	s->count = f->count;
	s->total_len = f->total_len;
	s->have = 0;
	s->got = 0;
	sl_bytes_put_be16(p, f->partition);
	p[2] = f->topic_len;
	p[3] = f->flags;
	memcpy(p + 4, f->topic, f->topic_len);
	p += 4 + f->topic_len;
	if (f->flags & SL_WIRE_PUB_TRACE) {
		sl_bytes_put_be64(p, f->trace_id);
		p += 8;
	}
	sl_bytes_put_be16(p, f->count);
	p += 2;
	s->base = (uint32_t)(p - s->buf);
	mp->nused++;
	mp->st.started++;
}

/* The slot of (session, seq), a free one (*fresh), or NULL (pool full or the source at
 * its cap: *capped). Expires old slots on the way. */
static struct sl_mpart_slot *
slot_find(struct sl_mpart *mp, uint64_t session, uint64_t seq, uint32_t src_ip,
	  uint64_t now_ns, int *fresh)
{
	struct sl_mpart_slot *free_s = NULL;
	uint32_t i, from_src = 0;

	*fresh = 0;
	for (i = 0; i < SL_MPART_SLOTS; i++) {
		struct sl_mpart_slot *s = &mp->slot[i];

		if (s->used && now_ns - s->t0_ns >= mp->expiry_ns) {
			slot_free(mp, s);
			mp->st.expired++;
		}
		if (!s->used) {
			if (free_s == NULL)
				free_s = s;
			continue;
		}
		if (s->session == session && s->seq == seq && s->src_ip == src_ip)
			return s;
		if (s->src_ip == src_ip)
			from_src++;
	}
	if (free_s == NULL || from_src >= mp->per_source)
		return NULL;
	*fresh = 1;
	return free_s;
}

int
sl_mpart_add(struct sl_mpart *mp, uint64_t session, uint64_t seq, uint32_t src_ip,
	     const struct sl_wire_mpart *f, uint64_t now_ns, struct sl_wire_pub *out,
	     uint32_t *handle)
{
	struct sl_mpart_slot *s;
	uint32_t i, end;
	int fresh, rc;

	s = slot_find(mp, session, seq, src_ip, now_ns, &fresh);
	if (s == NULL) {
		mp->st.refused++;
		return -SL_E_FULL;
	}
	if (fresh)
		slot_start(mp, s, session, seq, src_ip, f, now_ns);
	else if (!same_mpub(s, f))
		goto bad;
	if (s->have & (1u << f->index)) {
		/* a retransmission is the same bytes at the same place */
		if (s->off[f->index] != f->off || s->len[f->index] != f->chunk_len ||
		    memcmp(s->buf + s->base + f->off, f->chunk, f->chunk_len) != 0)
			goto bad;
		mp->st.dups++;
		return SL_MPART_DUP;
	}
	end = f->off + f->chunk_len;	/* <= total_len: the decoder checked */
	for (i = 0; i < s->nfrag; i++)
		if ((s->have & (1u << i)) && f->off < s->off[i] + s->len[i] &&
		    s->off[i] < end)
			goto bad;	/* overlaps a held fragment */
	memcpy(s->buf + s->base + f->off, f->chunk, f->chunk_len);
	s->off[f->index] = f->off;
	s->len[f->index] = f->chunk_len;
	s->have |= (uint16_t)(1u << f->index);
	s->got += f->chunk_len;
	if (s->have != (uint16_t)((1u << s->nfrag) - 1))
		return SL_MPART_MORE;
	/* all there, disjoint and inside the area: they cover it when their sum is its size */
	if (s->got != s->total_len)
		goto bad;
	rc = sl_wire_decode_pub(s->buf, s->base + s->total_len, 1, out);
	if (rc != 0) {
		slot_free(mp, s);
		mp->st.malformed++;
		return rc;
	}
	*handle = (uint32_t)(s - mp->slot);
	mp->st.completed++;
	return SL_MPART_DONE;
bad:
	slot_free(mp, s);
	mp->st.malformed++;
	return -SL_E_MALFORMED;
}
