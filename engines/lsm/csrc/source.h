/*
 * The sources of a flush or merge, read in key order: a frozen memtable (a dict of bytes
 * to bytes or None, its entries taken and sorted) or a segment (its mapped file and index
 * columns: each block's crc32 tested, decompressed when stored compressed, and its
 * bounds checked before an entry of it is read). A damaged block is reported in a Fail
 * (raised as BlockCorrupt by write_blocks).
 */
#ifndef LSM_SOURCE_H
#define LSM_SOURCE_H

#include "coding.h"
#include "entry.h"
#include "writer.h"

typedef struct {
    int is_seg;
    /* memtable: its dict (a reference held), then its entries, sorted */
    PyObject *dict;
    Entry *ents;
    Py_ssize_t nents, at;
    /* segment */
    Py_buffer buf, offs, lens, crcs, rawl;
    int compressed;               /* blocks stored compressed; rawl their lengths */
    int lz4;                      /* compressed as LZ4 blocks (else zlib) */
    unsigned char *dbuf;          /* the current block decompressed (compressed sources) */
    size_t dlen;
    Writer *w;                    /* where a decompressed block goes when the source moves on */
    int drop;                     /* a file mapping: release pages behind the merge */
    size_t dropped;               /* bytes of buf released so far (page multiple) */
    Py_ssize_t nblocks, blk;      /* next block to load */
    const unsigned char *b;       /* current block */
    uint32_t n, width, i;         /* entries in it, key width, next entry */
    const unsigned char *kends, *vends, *flags, *keys, *vals;
    /* head */
    Entry head;
    int has_head;
} Source;

typedef struct {
    const char *reason;
    Py_ssize_t source, block;
} Fail;

/* Released at once behind a merge's read position: a few syscalls per segment. */
#define DROP_CHUNK ((size_t)8 << 20)

/* 1 when [addr, addr + len) lies inside one shared mapping of a file, else 0 (source.c
 * says why a merge asks). */
int shared_file_mapping(const void *addr, size_t len);

/* Takes a dict source's entries into s->ents, with the GIL released (source.c says why
 * that is safe): NULL, or why the source was refused, "type" or "changed". */
const char *memtable_entries(Source *s);

/* Loads segment block s->blk (its checksum tested, decompressed, its bounds checked); 0,
 * or -1 on damage (fail filled). */
int seg_load(Source *s, Py_ssize_t si, Fail *fail);

/* Advances source number si to its next entry (has_head = 0 when exhausted); -1 on a
 * damaged block (fail filled). Inline: a merge calls it once per entry. */
static inline int
src_next(Source *s, Py_ssize_t si, Fail *fail)
{
    if (!s->is_seg) {
        if (s->at < s->nents) {
            s->head = s->ents[s->at++];
            s->has_head = 1;
        }
        else
            s->has_head = 0;
        return 0;
    }
    if (s->b == NULL || s->i >= s->n) {
        if (s->blk >= s->nblocks) {
            s->has_head = 0;
            return 0;
        }
        if (seg_load(s, si, fail) < 0)
            return -1;
    }
    uint32_t j = s->i++;
    Entry *h = &s->head;
    if (s->width) {
        h->k = s->keys + (size_t)j * s->width;
        h->klen = s->width;
    }
    else {
        uint32_t a = j ? rd32(s->kends + 4 * (j - 1)) : 0;
        h->k = s->keys + a;
        h->klen = rd32(s->kends + 4 * j) - a;
    }
    uint32_t va = j ? rd32(s->vends + 4 * (j - 1)) : 0;
    h->v = s->vals + va;
    h->vlen = rd32(s->vends + 4 * j) - va;
    h->tomb = s->flags[j] != 0;
    if (h->tomb)
        h->vlen = 0;
    s->has_head = 1;
    return 0;
}

#endif
