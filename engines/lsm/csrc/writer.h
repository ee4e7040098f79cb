/*
 * The output of a flush or merge: entries in key order encoded as data blocks of `step`
 * entries (block.encode's layout), each stored plain, zlib-compressed or as an LZ4 block,
 * checksummed, and written with pwrite at the file position the blocks go to; the index
 * columns (offsets, lengths, crcs, raw lengths) and a copy of each block's first key
 * are kept for the segment's index. Called with the GIL released: C memory only.
 */
#ifndef LSM_WRITER_H
#define LSM_WRITER_H

#include "entry.h"

typedef struct {
    unsigned char *p;
    size_t len, cap;
} Buf;

/* Grows b to hold `extra` more bytes (doubling, from 64 KiB); -1 out of memory. */
int buf_grow(Buf *b, size_t extra);

/* Room for `extra` more bytes in b; -1 out of memory. Inline: the common case (room
 * enough) is a comparison, once per entry of a merge. */
static inline int
buf_reserve(Buf *b, size_t extra)
{
    return b->len + extra <= b->cap ? 0 : buf_grow(b, extra);
}

typedef struct Writer Writer;

struct Writer {
    int fd;
    int level;                    /* zlib level of the blocks written; 0: stored plain; -1: LZ4 */
    uint64_t pos;                 /* file position of out.p[0] */
    Buf out;                      /* encoded blocks not yet written */
    Buf scratch;                  /* a block before it is compressed */
    Buf idx_off, idx_len, idx_crc, idx_raw;
    Buf lastk;                    /* the last key written, copied */
    Buf grave;                    /* (pointer, length) of decompressed source blocks that
                                     entries of the block being filled point into */
    Entry *firsts;                /* first key of every block: klen, and vlen = its offset in fkeys */
    Buf fkeys;                    /* the first keys' bytes, copied: a merge may have released
                                     the source pages they came from (seg_drop_behind) */
    size_t nfirsts, capfirsts;
    Entry *pend;                  /* the block being filled */
    uint32_t npend, step;
    Entry last;
    int has_last;
    long long entries, live;
    int err;                      /* errno of a failed write; -1: out of memory */
};

/* A compressed source moved past a decompressed block: free it now, or keep it until the
 * block being filled is encoded if one of its entries points into it. 0, or -1 out of
 * memory. */
int w_retire(Writer *w, unsigned char *old, size_t len);

/* Frees the decompressed source blocks w_retire kept. */
void w_bury(Writer *w);

/* Writes the encoded blocks not yet written; -1 with w->err set. */
int w_flush(Writer *w);

/* Encodes the pending entries as one block (block.encode's layout); -1 with w->err set. */
int w_block(Writer *w);

/* Adds e (the next key in order) to the block being filled, encoding it when full; -1
 * with w->err set. Inline: a merge calls it once per entry. */
static inline int
w_add(Writer *w, const Entry *e)
{
    if (buf_reserve(&w->lastk, (size_t)e->klen + 1) < 0) {
        w->err = -1;
        return -1;
    }
    memcpy(w->lastk.p, e->k, (size_t)e->klen);
    w->lastk.len = (size_t)e->klen;
    w->pend[w->npend++] = *e;
    w->last = *e;
    w->has_last = 1;
    if (w->npend == w->step)
        return w_block(w);
    return 0;
}

#endif
