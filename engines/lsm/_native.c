/*
 * asyncbench.engines.lsm._native: the LSM's flush and merge write loop in C.
 *
 * Import it through engines/lsm/native.py, never directly: that module falls back to the
 * pure-Python path (merging_iterator.merge into SegmentWriter.add) when this is not built.
 *
 * write_blocks(fd, pos, sources, step, drop_tombstones[, level]) merges sorted sources (newest
 * first: a memtable's dict, or a segment's (buffer, offsets, lengths, crcs[, file_mapping[,
 * raw_lengths]]): with file_mapping true, pages behind the read position are released,
 * seg_drop_behind; with raw_lengths, the blocks are compressed and decompress to those lengths:
 * zlib format, or LZ4 blocks with a true 7th item) and writes the result as data blocks of `step` entries at byte `pos` of `fd`,
 * byte for byte what block.encode_many / SegmentWriter.add write for the same entries
 * (tests/test_lsm_native.py); with level 1..9, each block compressed at that zlib level
 * (segment format 3), with level -1 each an LZ4 block (format 4), as SegmentWriter stores
 * it (tests/test_lsm_compression.py).
 *
 * LZ4 comes from the system's liblz4.so.1, opened at import with dlopen (lz4_load): the
 * library is on every Debian-like system (apt, systemd and zstd depend on it) but its
 * headers are not, and a build that needed them would lose the whole compiled path where
 * they are missing. The three functions used are LZ4's stable ABI. Without the library,
 * LZ4 is False (LZ4_MISSING says why) and the Python side writes zlib (format 3) instead.
 * Why: profiled, a stabilization spent ~40 % reading memtables in key order and ~40 %
 * encoding blocks in Python, RocksDB's in C++. Here the only work under the GIL is taking
 * the dict's entries (one pass, references held) and building the index's bytes at the end;
 * sorting, decoding source blocks (checksums tested, bounds checked), merging, encoding,
 * crc32 and pwrite run with the GIL released, so a flush or merge in a worker thread uses
 * the second core while the event loop serves the foreground.
 *
 * Safety of the released GIL: a memtable given here is frozen (never written again) and
 * each of its keys and values is held by a reference taken under the GIL; a segment's
 * buffer is held through the buffer protocol (an mmap cannot be closed while exported).
 *
 * Returns (first_keys_region: bytes, offsets: bytes of u64, lengths: bytes of u32,
 * crcs: bytes of u32, last_key: bytes | None, entries, live, end_pos, raw_lengths: bytes of
 * u32): the region is the index's first keys as encode_index writes them (region_bytes),
 * lengths and crcs are of the stored bytes, raw_lengths of the blocks decompressed.
 *
 * A compressed source block is decompressed into a buffer of its own. Entries point into
 * it until they are encoded, so when the source moves on, its previous buffer is freed at
 * once unless an entry of the block being filled points into it; then it waits in the
 * writer's `grave` until that block is encoded (at most `step` of them). The last key
 * written is copied (its order check outlives its source block).
 * A damaged source block raises BlockCorrupt(source_index, block_index, reason).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static PyObject *BlockCorrupt;

/* --- LZ4, from the system library -------------------------------------------------------- */

typedef int (*lz4_compress_fn)(const char *src, char *dst, int src_size, int dst_capacity);
typedef int (*lz4_decompress_fn)(const char *src, char *dst, int compressed_size, int dst_capacity);
typedef int (*lz4_bound_fn)(int input_size);
typedef int (*lz4_partial_fn)(const char *src, char *dst, int compressed_size, int target, int dst_capacity);
static lz4_compress_fn lz4_compress;     /* LZ4_compress_default (acceleration 1) */
static lz4_decompress_fn lz4_decompress; /* LZ4_decompress_safe: bounds-checked on bad input */
static lz4_bound_fn lz4_bound;           /* LZ4_compressBound */
static lz4_partial_fn lz4_partial;       /* LZ4_decompress_safe_partial (optional): a block's head only */
static char lz4_missing[256];            /* why LZ4 is unavailable; empty when loaded */

static void
lz4_load(void)
{
    void *h = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(lz4_missing, sizeof(lz4_missing), "%s", e ? e : "liblz4.so.1 not found");
        return;
    }
    lz4_compress = (lz4_compress_fn)dlsym(h, "LZ4_compress_default");
    lz4_decompress = (lz4_decompress_fn)dlsym(h, "LZ4_decompress_safe");
    lz4_bound = (lz4_bound_fn)dlsym(h, "LZ4_compressBound");
    lz4_partial = (lz4_partial_fn)dlsym(h, "LZ4_decompress_safe_partial");
    if (lz4_compress == NULL || lz4_decompress == NULL || lz4_bound == NULL) {
        lz4_compress = NULL;
        lz4_decompress = NULL;
        lz4_bound = NULL;
        snprintf(lz4_missing, sizeof(lz4_missing), "liblz4.so.1 lacks LZ4_compress_default, "
                 "LZ4_decompress_safe or LZ4_compressBound");
    }
}

/* A block's stored bytes decompressed into d (raw bytes): zlib, or LZ4 when lz4 is set.
 * 0: done; else what is wrong with them. */
static const char *
unpack_block(int lz4, const unsigned char *b, uint32_t len, unsigned char *d, uint32_t raw)
{
    if (lz4) {
        if (lz4_decompress == NULL)
            return "is LZ4 and liblz4 is not loaded";
        if (len > INT32_MAX || raw > INT32_MAX)
            return "too large for LZ4";
        int got = lz4_decompress((const char *)b, (char *)d, (int)len, (int)raw);
        if (got < 0)
            return "does not decompress";
        return (uint32_t)got == raw ? NULL : "decompresses to another length";
    }
    uLongf got = raw;
    int zr = uncompress(d, &got, b, len);
    if (zr != Z_OK)
        return "does not decompress";
    return got == raw ? NULL : "decompresses to another length";
}

typedef struct Writer Writer;
static int w_retire(Writer *w, unsigned char *old, size_t len);

/* zlib inflates at most about 1032:1: a recorded length beyond this is damage, refused
 * before anything is allocated for it. */
#define MAX_INFLATE(stored) (1032ULL * (uint64_t)(stored) + 64)

typedef struct {
    const unsigned char *k;
    Py_ssize_t klen;
    const unsigned char *v;
    Py_ssize_t vlen;
    int tomb;
} Entry;

static int
key_cmp(const unsigned char *a, Py_ssize_t alen, const unsigned char *b, Py_ssize_t blen)
{
    Py_ssize_t m = alen < blen ? alen : blen;
    int c = memcmp(a, b, (size_t)m);
    if (c)
        return c;
    return (alen > blen) - (alen < blen);
}

/* --- sorting a memtable's entries: a byte-wise radix sort ------------------------------
 *
 * Why: a flush sorts its memtable's keys, and perf of an index tree's flush (200_000 keys
 * at 200k profiles) put most of it in qsort's memcmp calls: the workload's index keys
 * share long prefixes (a created-at key starts with 7 zeros, a country/status key with
 * `CC|status|`), so every comparison walks them again. A most-significant-byte radix
 * sort (American flag sort, in place) reads each key byte about once per level; buckets
 * of at most RADIX_SMALL entries are finished by insertion sort from the bytes they
 * share, and below RADIX_DEPTH bytes (a stack bound for long keys) by qsort. Keys are
 * distinct (a dict's), so the order is the one key_cmp gives. */
#define RADIX_SMALL 24
#define RADIX_DEPTH 64

static int
entry_cmp(const void *x, const void *y)
{
    const Entry *a = x, *b = y;
    return key_cmp(a->k, a->klen, b->k, b->klen);
}

/* bucket of e at byte d: 0 for a key that ends before d, else the byte + 1 */
static inline int
radix_bucket(const Entry *e, Py_ssize_t d)
{
    return d < e->klen ? (int)e->k[d] + 1 : 0;
}

/* Whether n entries are in increasing key order already (the profiles tree's memtable
 * after an insert of increasing ids): then the flush does not sort. */
static int
entries_sorted(const Entry *e, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++)
        if (key_cmp(e[i - 1].k, e[i - 1].klen, e[i].k, e[i].klen) >= 0)
            return 0;
    return 1;
}

static void
radix_sort(Entry *a, Py_ssize_t n, Py_ssize_t d)
{
    if (n <= RADIX_SMALL) { /* every key here has the same first d bytes */
        for (Py_ssize_t i = 1; i < n; i++) {
            Entry t = a[i];
            Py_ssize_t j = i;
            while (j > 0 && key_cmp(t.k + d, t.klen - d, a[j - 1].k + d, a[j - 1].klen - d) < 0) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = t;
        }
        return;
    }
    if (d >= RADIX_DEPTH) {
        qsort(a, (size_t)n, sizeof(Entry), entry_cmp);
        return;
    }
    Py_ssize_t count[257] = {0}, next[257], end[257];
    for (Py_ssize_t i = 0; i < n; i++)
        count[radix_bucket(&a[i], d)]++;
    Py_ssize_t at = 0;
    for (int b = 0; b < 257; b++) {
        next[b] = at;
        at += count[b];
        end[b] = at;
    }
    for (int b = 0; b < 257; b++) { /* move each entry into its bucket, cycle by cycle */
        while (next[b] < end[b]) {
            Entry t = a[next[b]];
            int tb = radix_bucket(&t, d);
            while (tb != b) {
                Entry u = a[next[tb]];
                a[next[tb]++] = t;
                t = u;
                tb = radix_bucket(&t, d);
            }
            a[next[b]++] = t;
        }
    }
    for (int b = 1; b < 257; b++) /* bucket 0 holds at most one key: they are distinct */
        if (count[b] > 1)
            radix_sort(a + (end[b] - count[b]), count[b], d + 1);
}

static inline uint32_t
rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* n little-endian end offsets never decrease (a block's keys or values, each ending where
 * the next starts); the last one, the bytes they span, in *last. -1 when out of order. */
static int
ends_in_order(const unsigned char *ends, uint32_t n, uint32_t *last)
{
    uint32_t prev = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t e = rd32(ends + 4 * j);
        if (e < prev)
            return -1;
        prev = e;
    }
    *last = prev;
    return 0;
}

static inline void
wr32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* --- sources ------------------------------------------------------------------------- */

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

/* A source marked as a file mapping (a 5th tuple item, true): the pages before `upto`
 * (its next block's offset) leave this process's RSS (madvise MADV_DONTNEED). Why: a full
 * merge reads every source whole, and the mapped pages it touched stayed resident until
 * the sources were closed at the commit, so a stabilization's merge held the old and the
 * new data at once: at 2M profiles the file-backed RSS peaked at 1.72x the store (issue
 * 40 item 3). Safe only for a shared mapping of a file, which the caller vouches for
 * and shared_file_mapping() checks: the pages stay in the page cache and any later touch
 * (an Entry still pointing there, a read on the event loop) faults the same bytes back
 * in. On anonymous memory it would zero them. */
static void
seg_drop_behind(Source *s, uint64_t upto)
{
#ifdef MADV_DONTNEED
    static size_t page = 0;
    if (page == 0) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    size_t end = (size_t)upto & ~(page - 1);
    if (end >= s->dropped + DROP_CHUNK) {
        (void)madvise((char *)s->buf.buf + s->dropped, end - s->dropped, MADV_DONTNEED);
        s->dropped = end;
    }
#else
    (void)s;
    (void)upto;
#endif
}

/* 1 when [addr, addr + len) lies inside one shared mapping of a file (a line of
 * /proc/self/maps with an 's' permission and an inode), else 0. Why: the release above
 * zeroes the pages of anonymous or private memory, and a page-aligned start does not
 * prove a mapping (a large bytes object's data is page-aligned about once in 256
 * allocations: CI met one). Read once per source larger than DROP_CHUNK, before a merge:
 * a few hundred lines, about 0.3 ms. */
static int
shared_file_mapping(const void *addr, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return 0;
    uintptr_t a = (uintptr_t)addr, found = 0;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi, inode;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s %*s %*s %lu", &lo, &hi, perms, &inode) != 4)
            continue;
        if (a >= lo && a < hi) {
            found = a + len <= hi && perms[3] == 's' && inode != 0;
            break;
        }
    }
    fclose(f);
    return (int)found;
}

/* Load segment block s->blk; 0 on success, -1 on damage (fail filled). */
static int
seg_load(Source *s, Py_ssize_t si, Fail *fail)
{
    Py_ssize_t i = s->blk;
    uint64_t off;
    uint32_t len, crc;
    memcpy(&off, (const char *)s->offs.buf + 8 * i, 8);
    memcpy(&len, (const char *)s->lens.buf + 4 * i, 4);
    memcpy(&crc, (const char *)s->crcs.buf + 4 * i, 4);
    fail->source = si;
    fail->block = i;
    if (off > (uint64_t)s->buf.len || len > (uint64_t)s->buf.len - off || len < 4) {
        fail->reason = "block outside the file";
        return -1;
    }
    if (s->drop)
        seg_drop_behind(s, off);
    const unsigned char *b = (const unsigned char *)s->buf.buf + off;
    if ((uint32_t)crc32(0L, b, len) != crc) {
        fail->reason = "checksum mismatch";
        return -1;
    }
    if (s->compressed) {
        uint32_t raw;
        memcpy(&raw, (const char *)s->rawl.buf + 4 * i, 4);
        if (raw < 4 || (uint64_t)raw > MAX_INFLATE(len)) {
            fail->reason = "recorded decompressed length impossible";
            return -1;
        }
        unsigned char *d = malloc(raw);
        if (d == NULL) {
            fail->reason = "out of memory decompressing it";
            return -1;
        }
        const char *bad = unpack_block(s->lz4, b, len, d, raw);
        if (bad != NULL) {
            free(d);
            fail->reason = bad;
            return -1;
        }
        if (s->dbuf != NULL && w_retire(s->w, s->dbuf, s->dlen) < 0) {
            free(d);
            fail->reason = "out of memory decompressing it";
            return -1;
        }
        s->dbuf = d;
        s->dlen = raw;
        b = d;
        len = raw;
    }
    uint32_t n = (uint32_t)b[0] | ((uint32_t)b[1] << 8);
    uint32_t w = (uint32_t)b[2] | ((uint32_t)b[3] << 8);
    uint64_t kbytes, need;
    if (n == 0) {
        fail->reason = "empty block";
        return -1;
    }
    if (w) {
        need = 4 + 5ULL * n + (uint64_t)n * w;
        if (need > len) {
            fail->reason = "block shorter than its keys";
            return -1;
        }
        s->kends = NULL;
        s->vends = b + 4;
        s->flags = b + 4 + 4 * n;
        s->keys = b + 4 + 5 * n;
        kbytes = (uint64_t)n * w;
    }
    else {
        need = 4 + 9ULL * n;
        if (need > len) {
            fail->reason = "block shorter than its offsets";
            return -1;
        }
        s->kends = b + 4;
        s->vends = b + 4 + 4 * n;
        s->flags = b + 4 + 8 * n;
        s->keys = b + 4 + 9 * n;
        uint32_t klast;
        if (ends_in_order(s->kends, n, &klast) < 0) {
            fail->reason = "key offsets out of order";
            return -1;
        }
        kbytes = klast;
        need += kbytes;
    }
    uint32_t prev;
    if (ends_in_order(s->vends, n, &prev) < 0) {
        fail->reason = "value offsets out of order";
        return -1;
    }
    if (need + prev > len) {
        fail->reason = "block shorter than its values";
        return -1;
    }
    s->vals = s->keys + kbytes;
    s->b = b;
    s->n = n;
    s->width = w;
    s->i = 0;
    s->blk = i + 1;
    return 0;
}

/* Advance a source to its next entry (has_head = 0 when exhausted). */
static int
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

/* --- output -------------------------------------------------------------------------- */

typedef struct {
    unsigned char *p;
    size_t len, cap;
} Buf;

static int
buf_reserve(Buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + extra)
        cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (p == NULL)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

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

typedef struct {
    unsigned char *p;
    size_t len;
} Grave;

/* A compressed source moved past a decompressed block: free it now, or keep it until the
 * block being filled is encoded if one of its entries points into it. */
static int
w_retire(Writer *w, unsigned char *old, size_t len)
{
    uintptr_t lo = (uintptr_t)old, hi = lo + len; /* integers: the entries point into other objects */
    for (uint32_t j = 0; j < w->npend; j++) {
        uintptr_t k = (uintptr_t)w->pend[j].k, v = (uintptr_t)w->pend[j].v;
        if ((k >= lo && k < hi) || (v != 0 && v >= lo && v < hi)) {
            if (buf_reserve(&w->grave, sizeof(Grave)) < 0)
                return -1;
            Grave g = {old, len};
            memcpy(w->grave.p + w->grave.len, &g, sizeof(Grave));
            w->grave.len += sizeof(Grave);
            return 0;
        }
    }
    free(old);
    return 0;
}

static void
w_bury(Writer *w)
{
    for (size_t at = 0; at < w->grave.len; at += sizeof(Grave)) {
        Grave g;
        memcpy(&g, w->grave.p + at, sizeof(Grave));
        free(g.p);
    }
    w->grave.len = 0;
}

static int
w_flush(Writer *w)
{
    size_t done = 0;
    while (done < w->out.len) {
        ssize_t r = pwrite(w->fd, w->out.p + done, w->out.len - done, (off_t)(w->pos + done));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            w->err = errno;
            return -1;
        }
        done += (size_t)r;
    }
    w->pos += w->out.len;
    w->out.len = 0;
    return 0;
}

/* Encode the pending entries as one block (block.encode's layout). */
static int
w_block(Writer *w)
{
    uint32_t n = w->npend;
    if (n == 0)
        return 0;
    Entry *e = w->pend;
    Py_ssize_t width = e[0].klen;
    int fixed = width > 0 && width < 0x10000;
    size_t kbytes = 0, vbytes = 0;
    for (uint32_t j = 0; j < n; j++) {
        if (e[j].klen != width)
            fixed = 0;
        kbytes += (size_t)e[j].klen;
        vbytes += (size_t)e[j].vlen;
    }
    size_t size = 4 + (fixed ? 5 : 9) * (size_t)n + kbytes + vbytes;
    if (kbytes > 0xFFFFFFFFu || vbytes > 0xFFFFFFFFu || size > 0xFFFFFFFFu ||
        (w->level < 0 && size > 0x7E000000u)) { /* LZ4_MAX_INPUT_SIZE */
        w->err = EFBIG;
        return -1;
    }
    size_t room = w->level > 0 ? (size_t)compressBound((uLong)size)
                  : w->level < 0 ? (size_t)lz4_bound((int)size) : size;
    if (buf_reserve(&w->out, room) < 0 || buf_reserve(&w->idx_off, 8) < 0 ||
        buf_reserve(&w->idx_len, 4) < 0 || buf_reserve(&w->idx_crc, 4) < 0 ||
        buf_reserve(&w->idx_raw, 4) < 0 || buf_reserve(&w->fkeys, (size_t)e[0].klen) < 0 ||
        (w->level && buf_reserve(&w->scratch, size) < 0)) {
        w->err = -1;
        return -1;
    }
    if (w->nfirsts == w->capfirsts) {
        size_t cap = w->capfirsts ? 2 * w->capfirsts : 1024;
        Entry *f = realloc(w->firsts, cap * sizeof(Entry));
        if (f == NULL) {
            w->err = -1;
            return -1;
        }
        w->firsts = f;
        w->capfirsts = cap;
    }
    unsigned char *b = w->level ? w->scratch.p : w->out.p + w->out.len, *p = b;
    p[0] = (unsigned char)n;
    p[1] = (unsigned char)(n >> 8);
    p[2] = (unsigned char)(fixed ? width : 0);
    p[3] = (unsigned char)(fixed ? width >> 8 : 0);
    p += 4;
    uint32_t acc = 0;
    if (!fixed) {
        for (uint32_t j = 0; j < n; j++, p += 4)
            wr32(p, acc += (uint32_t)e[j].klen);
    }
    acc = 0;
    for (uint32_t j = 0; j < n; j++, p += 4)
        wr32(p, acc += (uint32_t)e[j].vlen);
    long long dead = 0;
    for (uint32_t j = 0; j < n; j++) {
        *p++ = (unsigned char)(e[j].tomb ? 1 : 0);
        dead += e[j].tomb;
    }
    for (uint32_t j = 0; j < n; j++) {
        memcpy(p, e[j].k, (size_t)e[j].klen);
        p += e[j].klen;
    }
    for (uint32_t j = 0; j < n; j++) {
        if (e[j].vlen)
            memcpy(p, e[j].v, (size_t)e[j].vlen);
        p += e[j].vlen;
    }
    uint64_t off = w->pos + w->out.len;
    uLongf stored = (uLongf)size;
    if (w->level > 0) {
        stored = (uLongf)room;
        if (compress2(w->out.p + w->out.len, &stored, b, (uLong)size, w->level) != Z_OK) {
            w->err = -1;
            return -1;
        }
    } else if (w->level < 0) {
        int got = lz4_compress((const char *)b, (char *)w->out.p + w->out.len, (int)size, (int)room);
        if (got <= 0) {
            w->err = -1;
            return -1;
        }
        stored = (uLongf)got;
    }
    uint32_t raw32 = (uint32_t)size, len32 = (uint32_t)stored;
    uint32_t crc = (uint32_t)crc32(0L, w->out.p + w->out.len, (uInt)stored);
    memcpy(w->idx_raw.p + w->idx_raw.len, &raw32, 4);
    w->idx_raw.len += 4;
    memcpy(w->idx_off.p + w->idx_off.len, &off, 8);
    w->idx_off.len += 8;
    memcpy(w->idx_len.p + w->idx_len.len, &len32, 4);
    w->idx_len.len += 4;
    memcpy(w->idx_crc.p + w->idx_crc.len, &crc, 4);
    w->idx_crc.len += 4;
    Entry *fk = &w->firsts[w->nfirsts++];
    fk->k = NULL;
    fk->klen = e[0].klen;
    fk->vlen = (Py_ssize_t)w->fkeys.len;
    if (e[0].klen) {
        memcpy(w->fkeys.p + w->fkeys.len, e[0].k, (size_t)e[0].klen);
        w->fkeys.len += (size_t)e[0].klen;
    }
    w->out.len += (size_t)stored;
    w->entries += n;
    w->live += n - dead;
    w->npend = 0;
    w_bury(w);
    if (w->out.len >= (1 << 20))
        return w_flush(w);
    return 0;
}

static int
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

/* --- write_blocks -------------------------------------------------------------------- */

static int
get_buffer(PyObject *o, Py_buffer *view, const char *what, Py_ssize_t itemsize)
{
    if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) < 0)
        return -1;
    if (itemsize && view->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: length %zd is not a multiple of %zd", what, view->len, itemsize);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

/* --- the first-key region of a segment index ------------------------------------------
 *
 * The bytes segment_writer.encode_index writes before the index's columns: u32 width,
 * u32 kind, then the first keys fixed (kind 1: all one width), padded with zeros to the
 * widest (kind 2: none empty, none ending in a zero byte) or mixed (kind 0: u32 end of
 * each, then the keys). Built from a list of bytes (first_keys_region, the Python
 * writer's) or from a merge's own copy of its first keys (write_blocks): the merge used
 * to hand back one bytes object per block (625_000 for a 10M-entry tree) for this to
 * read again, all made, read and freed under the GIL while the event loop waited.
 */
typedef struct {
    PyObject *list;              /* a list of bytes (checked by the caller), or NULL: */
    const unsigned char *base;   /* the keys copied one after another, */
    const Entry *spans;          /* key i at base + spans[i].vlen, spans[i].klen long */
    Py_ssize_t n;
} FirstKeys;

static inline const char *
fk_at(const FirstKeys *f, Py_ssize_t i, Py_ssize_t *len)
{
    if (f->list != NULL) {
        PyObject *k = PyList_GET_ITEM(f->list, i);
        *len = PyBytes_GET_SIZE(k);
        return PyBytes_AS_STRING(k);
    }
    *len = f->spans[i].klen;
    return (const char *)f->base + f->spans[i].vlen;
}

/* The region's kind and width and its size in bytes; -1 with *why set if it cannot be
 * written. Reads only: callable with the GIL released. */
static Py_ssize_t
region_layout(const FirstKeys *f, uint32_t *kind, Py_ssize_t *width, const char **why)
{
    Py_ssize_t minw = PY_SSIZE_T_MAX, maxw = 0, total = 0, w;
    int empty = 0, zero_end = 0;
    for (Py_ssize_t i = 0; i < f->n; i++) {
        const char *k = fk_at(f, i, &w);
        if (w > 0xFFFFFFFFL) {
            *why = "first_keys_region: a first key of 4 GiB or more";
            return -1;
        }
        minw = w < minw ? w : minw;
        maxw = w > maxw ? w : maxw;
        total += w;
        if (w == 0)
            empty = 1;
        else if (k[w - 1] == 0)
            zero_end = 1;
    }
    /* the layouts of encode_index, in its order of preference */
    *kind = (maxw && minw == maxw) ? 1u : (maxw && !empty && !zero_end) ? 2u : 0u;
    if (total > 0xFFFFFFFFL && *kind == 0) {
        *why = "first_keys_region: first keys of 4 GiB or more";
        return -1;
    }
    *width = maxw;
    return 8 + (*kind == 0 ? 4 * f->n + total : f->n * maxw);
}

/* Write the region region_layout measured at p. Reads only (see region_layout). */
static void
region_put(const FirstKeys *f, uint32_t kind, Py_ssize_t maxw, unsigned char *p)
{
    Py_ssize_t w;
    uint32_t head[2] = {kind == 0 ? 0u : (uint32_t)maxw, kind};
    for (int h = 0; h < 2; h++)
        for (int b = 0; b < 4; b++)
            *p++ = (unsigned char)(head[h] >> (8 * b));
    if (kind == 0) {
        uint32_t end = 0;
        for (Py_ssize_t i = 0; i < f->n; i++) {
            (void)fk_at(f, i, &w);
            end += (uint32_t)w;
            for (int b = 0; b < 4; b++)
                *p++ = (unsigned char)(end >> (8 * b));
        }
    }
    for (Py_ssize_t i = 0; i < f->n; i++) {
        const char *k = fk_at(f, i, &w);
        memcpy(p, k, (size_t)w);
        p += w;
        if (kind == 2 && w < maxw) {
            memset(p, 0, (size_t)(maxw - w));
            p += maxw - w;
        }
    }
}

/* The region as a new bytes object: measured and written with the GIL released (the
 * keys are the caller's own: a list nothing else holds, or the merge's copy). */
static PyObject *
region_bytes(const FirstKeys *f)
{
    uint32_t kind;
    Py_ssize_t width, size;
    const char *why = NULL;
    Py_BEGIN_ALLOW_THREADS
    size = region_layout(f, &kind, &width, &why);
    Py_END_ALLOW_THREADS
    if (size < 0) {
        PyErr_SetString(PyExc_OverflowError, why);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    region_put(f, kind, width, (unsigned char *)PyBytes_AS_STRING(out));
    Py_END_ALLOW_THREADS
    return out;
}

/* The entries of a dict source (``s->dict``, ``s->nents`` its size when the call
 * began), called with the GIL released: PyDict_Next only reads the dict's table and
 * returns borrowed references, and a bytes object's size and data never change, so
 * the walk touches no reference count and allocates nothing. The caller holds a
 * reference on the dict; the contract (a frozen memtable) is that no thread writes it
 * during the call. NULL, or why the source was refused: "type" (a key that is not
 * bytes, a value neither bytes nor None) or "changed" (its size moved). */
static const char *
memtable_entries(Source *s)
{
    Py_ssize_t ppos = 0, m = 0, n = s->nents;
    PyObject *key, *val;
    while (PyDict_Next(s->dict, &ppos, &key, &val)) {
        if (m >= n)
            return "changed";
        if (!PyBytes_Check(key) || (val != Py_None && !PyBytes_Check(val)))
            return "type";
        Entry *e = &s->ents[m++];
        e->k = (const unsigned char *)PyBytes_AS_STRING(key);
        e->klen = PyBytes_GET_SIZE(key);
        e->tomb = val == Py_None;
        e->v = e->tomb ? NULL : (const unsigned char *)PyBytes_AS_STRING(val);
        e->vlen = e->tomb ? 0 : PyBytes_GET_SIZE(val);
    }
    if (m != n)
        return "changed";
    return NULL;
}

static PyObject *
write_blocks(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "write_blocks(fd, pos, sources, step, drop_tombstones[, level])");
        return NULL;
    }
    long level = 0;
    if (nargs == 6) {
        level = PyLong_AsLong(args[5]);
        if (level == -1 && PyErr_Occurred())
            return NULL;
        if (level < -1 || level > 9) {
            PyErr_SetString(PyExc_ValueError, "level must be in -1..9 (0: blocks stored plain; -1: LZ4)");
            return NULL;
        }
        if (level == -1 && lz4_compress == NULL) {
            PyErr_Format(PyExc_RuntimeError, "LZ4 is not available: %s", lz4_missing);
            return NULL;
        }
    }
    long fdl = PyLong_AsLong(args[0]);
    if (fdl == -1 && PyErr_Occurred())
        return NULL;
    if (fdl < 0 || fdl > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "fd out of range");
        return NULL;
    }
    int fd = (int)fdl;
    unsigned long long pos = PyLong_AsUnsignedLongLong(args[1]);
    if (pos == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    PyObject *srcs = args[2];
    if (!PyList_Check(srcs)) {
        PyErr_SetString(PyExc_TypeError, "sources must be a list");
        return NULL;
    }
    long step = PyLong_AsLong(args[3]);
    if (step == -1 && PyErr_Occurred())
        return NULL;
    if (step < 1 || step > 0xFFFF) {
        PyErr_SetString(PyExc_ValueError, "step must be in 1..65535");
        return NULL;
    }
    int drop = PyObject_IsTrue(args[4]);
    if (drop < 0)
        return NULL;

    Py_ssize_t k = PyList_GET_SIZE(srcs);
    PyObject *result = NULL;
    Source *S = PyMem_Calloc(k ? (size_t)k : 1, sizeof(Source));
    Writer w;
    memset(&w, 0, sizeof(w));
    Fail fail = {NULL, 0, 0};
    if (S == NULL)
        return PyErr_NoMemory();
    w.fd = fd;
    w.level = (int)level;
    w.pos = pos;
    w.step = (uint32_t)step;
    w.pend = PyMem_Malloc((size_t)step * sizeof(Entry));
    if (w.pend == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t si = 0; si < k; si++) {
        PyObject *o = PyList_GET_ITEM(srcs, si);
        Source *s = &S[si];
        if (PyDict_CheckExact(o)) {
            /* A frozen memtable: walked below with the GIL released (the walk only reads
             * the dict and its bytes objects, and nothing writes a frozen memtable), so
             * the event loop runs beside the walk. One reference on the dict keeps every
             * key and value alive: the walk used to take one on each of them and drop
             * them all at the end, about 16 ms of a 250_000-entry flush under the GIL. */
            Py_ssize_t n = PyDict_GET_SIZE(o);
            s->ents = malloc((n ? (size_t)n : 1) * sizeof(Entry));
            if (s->ents == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            s->dict = Py_NewRef(o);
            s->nents = n;
        }
        else if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) >= 4 && PyTuple_GET_SIZE(o) <= 7) {
            s->is_seg = 1;
            s->w = &w;
            if (get_buffer(PyTuple_GET_ITEM(o, 0), &s->buf, "segment", 0) < 0 ||
                get_buffer(PyTuple_GET_ITEM(o, 1), &s->offs, "offsets", 8) < 0 ||
                get_buffer(PyTuple_GET_ITEM(o, 2), &s->lens, "lengths", 4) < 0 ||
                get_buffer(PyTuple_GET_ITEM(o, 3), &s->crcs, "crcs", 4) < 0)
                goto done;
            if (PyTuple_GET_SIZE(o) >= 6) {
                if (get_buffer(PyTuple_GET_ITEM(o, 5), &s->rawl, "raw lengths", 4) < 0)
                    goto done;
                s->compressed = 1;
            }
            if (PyTuple_GET_SIZE(o) == 7) {
                int lz4 = PyObject_IsTrue(PyTuple_GET_ITEM(o, 6));
                if (lz4 < 0)
                    goto done;
                s->lz4 = lz4;
            }
            if (PyTuple_GET_SIZE(o) >= 5) {
                int drop = PyObject_IsTrue(PyTuple_GET_ITEM(o, 4));
                if (drop < 0)
                    goto done;
                long page = sysconf(_SC_PAGESIZE);
                /* a mapping's own start is page-aligned, and it must be a shared mapping
                 * of a file: anything else is left alone */
                s->drop = drop && page > 0 && ((uintptr_t)s->buf.buf % (uintptr_t)page) == 0 &&
                          (size_t)s->buf.len > DROP_CHUNK && /* else nothing to release */
                          shared_file_mapping(s->buf.buf, (size_t)s->buf.len);
            }
            s->nblocks = s->offs.len / 8;
            if (s->lens.len / 4 != s->nblocks || s->crcs.len / 4 != s->nblocks ||
                (s->compressed && s->rawl.len / 4 != s->nblocks)) {
                PyErr_SetString(PyExc_ValueError, "segment index columns differ in length");
                goto done;
            }
        }
        else {
            PyErr_SetString(PyExc_TypeError,
                            "a source is a dict or a (buffer, offsets, lengths, crcs[, file_mapping[, raw_lengths[, lz4]]]) tuple");
            goto done;
        }
    }

    int failed = 0;
    const char *bad_dict = NULL; /* a dict source that is not a memtable of bytes */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t si = 0; si < k && bad_dict == NULL; si++)
        if (S[si].dict != NULL)
            bad_dict = memtable_entries(&S[si]);
    if (bad_dict != NULL)
        failed = 3;
    for (Py_ssize_t si = 0; si < k && !failed; si++) {
        Source *s = &S[si];
        if (!s->is_seg && s->nents > 1 && !entries_sorted(s->ents, s->nents))
            radix_sort(s->ents, s->nents, 0);
        if (src_next(s, si, &fail) < 0)
            failed = 1;
    }
    while (!failed) {
        /* the smallest head; on equal keys the newest (lowest index) wins */
        Py_ssize_t best = -1;
        for (Py_ssize_t si = 0; si < k; si++) {
            if (!S[si].has_head)
                continue;
            if (best < 0 || key_cmp(S[si].head.k, S[si].head.klen, S[best].head.k, S[best].head.klen) < 0)
                best = si;
        }
        if (best < 0)
            break;
        /* added before the sources move on: a compressed source's block buffer is
           kept for the entries of the block being filled, and e is not one yet */
        Entry e = S[best].head;
        if (!(drop && e.tomb)) {
            if (w.has_last && key_cmp(e.k, e.klen, w.lastk.p, (Py_ssize_t)w.lastk.len) <= 0) {
                fail.reason = "keys out of order";
                fail.source = best;
                fail.block = S[best].is_seg ? S[best].blk - 1 : -1;
                failed = 1;
                break;
            }
            if (w_add(&w, &e) < 0) {
                failed = 2;
                break;
            }
        }
        /* The other sources holding e's key first, the winner last: e points into the
           winner's block, which its advance may free (a compressed source's buffer, when
           nothing pending points into it), so e's key is compared only before that. */
        for (Py_ssize_t si = 0; si < k && !failed; si++) {
            if (si != best && S[si].has_head && key_cmp(S[si].head.k, S[si].head.klen, e.k, e.klen) == 0) {
                if (src_next(&S[si], si, &fail) < 0)
                    failed = 1;
            }
        }
        if (!failed && src_next(&S[best], best, &fail) < 0)
            failed = 1;
        if (failed)
            break;
    }
    if (!failed && (w_block(&w) < 0 || w_flush(&w) < 0))
        failed = 2;
    Py_END_ALLOW_THREADS

    if (failed == 3) {
        PyErr_SetString(strcmp(bad_dict, "changed") == 0 ? PyExc_RuntimeError : PyExc_TypeError,
                        strcmp(bad_dict, "changed") == 0 ? "memtable changed during a flush"
                                                         : "memtable keys must be bytes, values bytes or None");
        goto done;
    }
    if (failed == 1) {
        PyObject *exc = Py_BuildValue("(nns)", fail.source, fail.block, fail.reason);
        if (exc != NULL) {
            PyErr_SetObject(BlockCorrupt, exc);
            Py_DECREF(exc);
        }
        goto done;
    }
    if (failed == 2) {
        if (w.err == -1)
            PyErr_NoMemory();
        else {
            errno = w.err;
            PyErr_SetFromErrno(PyExc_OSError);
        }
        goto done;
    }
    {
        FirstKeys fk = {.base = w.fkeys.p, .spans = w.firsts, .n = (Py_ssize_t)w.nfirsts};
        PyObject *firsts = region_bytes(&fk);
        if (firsts == NULL)
            goto done;
        PyObject *last = w.has_last ? PyBytes_FromStringAndSize((const char *)w.lastk.p, (Py_ssize_t)w.lastk.len)
                                    : Py_NewRef(Py_None);
        /* "y#" makes None of a NULL pointer: an empty result still gives bytes */
        result = Py_BuildValue("(Ny#y#y#NLLKy#)", firsts, w.idx_off.p ? (const char *)w.idx_off.p : "",
                               (Py_ssize_t)w.idx_off.len, w.idx_len.p ? (const char *)w.idx_len.p : "",
                               (Py_ssize_t)w.idx_len.len, w.idx_crc.p ? (const char *)w.idx_crc.p : "",
                               (Py_ssize_t)w.idx_crc.len, last, w.entries,
                               w.live, (unsigned long long)w.pos,
                               w.idx_raw.p ? (const char *)w.idx_raw.p : "", (Py_ssize_t)w.idx_raw.len);
    }

done:
    for (Py_ssize_t si = 0; si < k; si++) {
        Source *s = &S[si];
        free(s->ents);
        Py_XDECREF(s->dict);
        if (s->buf.obj)
            PyBuffer_Release(&s->buf);
        if (s->offs.obj)
            PyBuffer_Release(&s->offs);
        if (s->lens.obj)
            PyBuffer_Release(&s->lens);
        if (s->crcs.obj)
            PyBuffer_Release(&s->crcs);
        if (s->rawl.obj)
            PyBuffer_Release(&s->rawl);
        free(s->dbuf);
    }
    w_bury(&w);
    free(w.grave.p);
    free(w.scratch.p);
    free(w.idx_raw.p);
    free(w.lastk.p);
    PyMem_Free(S);
    PyMem_Free(w.pend);
    free(w.out.p);
    free(w.idx_off.p);
    free(w.idx_len.p);
    free(w.idx_crc.p);
    free(w.firsts);
    free(w.fkeys.p);
    return result;
}


/* --- KeyColumn: a segment's first keys, read in place ------------------------------------ */

/*
 * KeyColumn(data, start, n, width, padded): the n first keys of a segment index, each
 * `width` bytes at data[start + i*width] (padded: right-padded with zero bytes, which are
 * not part of the key). Why: at open, a list of one bytes object per block cost most of a
 * 2M reopen (625_000 objects); this holds the index's one buffer (bytes, or the IndexMap
 * the reader checked it in) and makes a key only when asked for one. bisect_left /
 * bisect_right compare in place (memcmp), so a lookup's bisect allocates nothing. Sequence
 * protocol: len, [i], [a:b] (a list), ==. `data` is any buffer: held, it cannot be resized
 * or closed (Python refuses that while a buffer is exported).
 */
typedef struct {
    PyObject_HEAD
    Py_buffer data; /* held from new to dealloc */
    const unsigned char *base;
    Py_ssize_t n, width;
    int padded;
    /* built by a lookup's first search (kc_find): the length of the prefix all keys share,
     * and each key's next 8 bytes after it as a big-endian number (zero-padded) */
    Py_ssize_t common;
    uint64_t *windows;
} KeyColumn;

static inline Py_ssize_t
kc_len(const KeyColumn *c, Py_ssize_t i)
{
    const unsigned char *p = c->base + i * c->width;
    Py_ssize_t len = c->width;
    if (c->padded)
        while (len > 0 && p[len - 1] == 0)
            len--;
    return len;
}

/* the 8 bytes of p[at:at+8] (zero past len) as a big-endian number */
static inline uint64_t
kc_window(const unsigned char *p, Py_ssize_t len, Py_ssize_t at)
{
    uint64_t w = 0;
    for (Py_ssize_t j = at; j < at + 8; j++)
        w = (w << 8) | (j < len ? p[j] : 0);
    return w;
}

/* Build c->windows (and c->common); -1 without memory (the caller bisects the keys). */
static int
kc_build_windows(KeyColumn *c)
{
    Py_ssize_t n = c->n, w = c->width, common = 0;
    if (n == 0)
        return -1;
    Py_ssize_t la = kc_len(c, 0), lb = kc_len(c, n - 1), m = la < lb ? la : lb;
    const unsigned char *a = c->base, *b = c->base + (n - 1) * w;
    while (common < m && a[common] == b[common])
        common++; /* sorted: a prefix of the first and the last key is every key's */
    uint64_t *win = PyMem_RawMalloc((size_t)n * sizeof(uint64_t));
    if (win == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        win[i] = kc_window(c->base + i * w, w, common); /* padding is zero bytes already */
    c->common = common;
    c->windows = win;
    return 0;
}

/* bisect_right of key k over all n first keys: the first i whose key is > k. Why the
 * windows: a point lookup bisects a column of up to 625_000 keys (10M profiles), whose
 * last probes each miss the CPU's caches; a column of 8-byte numbers holds 8 of them in
 * a cache line (a 20-digit id: 3) and compares without a memcmp call. Keys whose windows
 * are equal to k's are then compared whole. */
static Py_ssize_t
kc_find(KeyColumn *c, const unsigned char *k, Py_ssize_t klen)
{
    Py_ssize_t lo = 0, hi = c->n;
    if (c->windows == NULL && c->n >= 64)
        (void)kc_build_windows(c);
    if (c->windows != NULL && klen >= c->common && memcmp(k, c->base, (size_t)c->common) == 0) {
        uint64_t kw = kc_window(k, klen, c->common);
        const uint64_t *win = c->windows;
        Py_ssize_t a = 0, b = c->n;
        while (a < b) { /* the first window >= kw */
            Py_ssize_t mid = a + (b - a) / 2;
            if (win[mid] < kw)
                a = mid + 1;
            else
                b = mid;
        }
        lo = a;
        for (b = c->n; a < b;) { /* the first window > kw: [lo, hi) are equal to k's */
            Py_ssize_t mid = a + (b - a) / 2;
            if (win[mid] <= kw)
                a = mid + 1;
            else
                b = mid;
        }
        hi = a;
    }
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (key_cmp(k, klen, c->base + mid * c->width, kc_len(c, mid)) < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static PyObject *
KeyColumn_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *data;
    Py_ssize_t start, n, width;
    int padded;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "KeyColumn takes positional arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "Onnnp", &data, &start, &n, &width, &padded))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (start < 0 || n < 0 || width < 1 || start > view.len || (n && (view.len - start) / n < width)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "KeyColumn: keys outside the data");
        return NULL;
    }
    KeyColumn *c = (KeyColumn *)type->tp_alloc(type, 0);
    if (c == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    c->data = view;
    c->base = (const unsigned char *)view.buf + start;
    c->n = n;
    c->width = width;
    c->padded = padded;
    return (PyObject *)c;
}

static void
KeyColumn_dealloc(KeyColumn *c)
{
    PyMem_RawFree(c->windows);
    if (c->data.obj != NULL)
        PyBuffer_Release(&c->data);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static Py_ssize_t
KeyColumn_length(KeyColumn *c)
{
    return c->n;
}

static PyObject *
KeyColumn_item(KeyColumn *c, Py_ssize_t i)
{
    if (i < 0 || i >= c->n) {
        PyErr_SetString(PyExc_IndexError, "KeyColumn index out of range");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)c->base + i * c->width, kc_len(c, i));
}

static PyObject *
KeyColumn_subscript(KeyColumn *c, PyObject *key)
{
    if (PySlice_Check(key)) {
        Py_ssize_t start, stop, step, len;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0)
            return NULL;
        len = PySlice_AdjustIndices(c->n, &start, &stop, step);
        PyObject *out = PyList_New(len);
        if (out == NULL)
            return NULL;
        for (Py_ssize_t j = 0, i = start; j < len; j++, i += step) {
            PyObject *k = KeyColumn_item(c, i);
            if (k == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            PyList_SET_ITEM(out, j, k);
        }
        return out;
    }
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0)
        i += c->n;
    return KeyColumn_item(c, i);
}

/* bisect over [lo, hi): the first i whose key is > probe (right) or >= probe (left) */
static PyObject *
kc_bisect(KeyColumn *c, PyObject *const *args, Py_ssize_t nargs, int right)
{
    if (nargs < 1 || nargs > 3 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "bisect(key: bytes, lo=0, hi=len)");
        return NULL;
    }
    Py_ssize_t lo = 0, hi = c->n;
    if (nargs > 1 && (lo = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if (nargs > 2 && (hi = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if (lo < 0)
        lo = 0;
    if (hi > c->n)
        hi = c->n;
    const unsigned char *k = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t klen = PyBytes_GET_SIZE(args[0]);
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        int cmp = key_cmp(k, klen, c->base + mid * c->width, kc_len(c, mid));
        if (right ? cmp < 0 : cmp <= 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return PyLong_FromSsize_t(lo);
}

static PyObject *
KeyColumn_bisect_right(KeyColumn *c, PyObject *const *args, Py_ssize_t nargs)
{
    return kc_bisect(c, args, nargs, 1);
}

static PyObject *
KeyColumn_bisect_left(KeyColumn *c, PyObject *const *args, Py_ssize_t nargs)
{
    return kc_bisect(c, args, nargs, 0);
}

static PyObject *
KeyColumn_richcompare(KeyColumn *c, PyObject *other, int op)
{
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *all = PySlice_New(NULL, NULL, NULL);
    if (all == NULL)
        return NULL;
    PyObject *mine = KeyColumn_subscript(c, all);
    Py_DECREF(all);
    if (mine == NULL)
        return NULL;
    PyObject *theirs = PySequence_Check(other) && !PyBytes_Check(other) ? PySequence_List(other) : NULL;
    if (theirs == NULL) {
        PyErr_Clear();
        Py_DECREF(mine);
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *r = PyObject_RichCompare(mine, theirs, op);
    Py_DECREF(mine);
    Py_DECREF(theirs);
    return r;
}

static PyMethodDef KeyColumn_methods[] = {
    {"bisect_right", (PyCFunction)(void (*)(void))KeyColumn_bisect_right, METH_FASTCALL,
     "bisect_right(key, lo=0, hi=len): as bisect.bisect_right over the keys"},
    {"bisect_left", (PyCFunction)(void (*)(void))KeyColumn_bisect_left, METH_FASTCALL,
     "bisect_left(key, lo=0, hi=len): as bisect.bisect_left over the keys"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods KeyColumn_as_sequence = {
    .sq_length = (lenfunc)KeyColumn_length,
    .sq_item = (ssizeargfunc)KeyColumn_item,
};

static PyMappingMethods KeyColumn_as_mapping = {
    .mp_length = (lenfunc)KeyColumn_length,
    .mp_subscript = (binaryfunc)KeyColumn_subscript,
};

static PyTypeObject KeyColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "asyncbench.engines.lsm._native.KeyColumn",
    .tp_basicsize = sizeof(KeyColumn),
    .tp_dealloc = (destructor)KeyColumn_dealloc,
    .tp_as_sequence = &KeyColumn_as_sequence,
    .tp_as_mapping = &KeyColumn_as_mapping,
    .tp_richcompare = (richcmpfunc)KeyColumn_richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A segment index's fixed-width first keys, read in place (see _native.c).",
    .tp_methods = KeyColumn_methods,
    .tp_new = KeyColumn_new,
};

/* --- IndexMap: a segment's block index, mapped ----------------------------------------- */

/*
 * IndexMap(fd, offset, length): bytes [offset, offset + length) of the file `fd` names,
 * mapped read-only, as a read-only buffer; unmapped when the object is freed (it cannot
 * be while a buffer of it is held: a KeyColumn over it, a memoryview). Keeps no file
 * descriptor (mmap.mmap keeps a dup of one per mapping).
 *
 * Why: the reader checked a segment's index in a copy (os.pread into a new bytes object),
 * and the first keys stayed in that copy. At 10M profiles the five indexes are ~150 MB,
 * and on the shared VM most of a reopen went to faulting in and zeroing the copies' fresh
 * pages, not to reading: the mapping's pages are the page cache's own, mapped 16 at a
 * time. The reader tests the index's crc32 over this mapping (as it did over the copy)
 * before it uses any of it, copies the columns it indexes by (offsets, lengths, crcs)
 * into arrays as before, and keeps only the first keys here: read in place, as the data
 * blocks are read in place from the segment's own mapping.
 */
typedef struct {
    PyObject_HEAD
    void *map;        /* the mapping, from the page boundary at or below `offset` */
    size_t map_len;   /* its length */
    Py_ssize_t skip;  /* offset - the page boundary */
    Py_ssize_t len;   /* the buffer's length */
    PyObject *weakreflist; /* weak references (held_files.py waits for the unmapping) */
} IndexMap;

static PyObject *
IndexMap_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    int fd;
    long long offset, length;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "IndexMap takes positional arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "iLL", &fd, &offset, &length))
        return NULL;
    if (offset < 0 || length < 0 || (unsigned long long)length > (unsigned long long)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_ValueError, "IndexMap: offset and length must be non-negative");
        return NULL;
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    long long skip = offset % page;
    IndexMap *m = (IndexMap *)type->tp_alloc(type, 0);
    if (m == NULL)
        return NULL;
    m->skip = (Py_ssize_t)skip;
    m->len = (Py_ssize_t)length;
    m->map_len = (size_t)(skip + length);
    if (m->map_len == 0) /* mmap refuses length 0: an empty buffer needs no mapping */
        return (PyObject *)m;
    void *p;
    Py_BEGIN_ALLOW_THREADS
    p = mmap(NULL, m->map_len, PROT_READ, MAP_SHARED, fd, (off_t)(offset - skip));
    Py_END_ALLOW_THREADS
    if (p == MAP_FAILED) {
        m->map_len = 0;
        Py_DECREF(m);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    m->map = p;
    return (PyObject *)m;
}

static void
IndexMap_dealloc(IndexMap *m)
{
    if (m->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)m);
    if (m->map != NULL) {
        Py_BEGIN_ALLOW_THREADS /* (as mmap.mmap's dealloc: nothing else can reach it now) */
        munmap(m->map, m->map_len);
        Py_END_ALLOW_THREADS
    }
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static int
IndexMap_getbuffer(IndexMap *m, Py_buffer *view, int flags)
{
    static char empty[1];
    char *buf = m->map != NULL ? (char *)m->map + m->skip : empty;
    return PyBuffer_FillInfo(view, (PyObject *)m, buf, m->len, 1, flags);
}

static Py_ssize_t
IndexMap_length(IndexMap *m)
{
    return m->len;
}

static PyBufferProcs IndexMap_as_buffer = {
    .bf_getbuffer = (getbufferproc)IndexMap_getbuffer,
};

static PySequenceMethods IndexMap_as_sequence = {
    .sq_length = (lenfunc)IndexMap_length,
};

static PyTypeObject IndexMapType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "asyncbench.engines.lsm._native.IndexMap",
    .tp_basicsize = sizeof(IndexMap),
    .tp_weaklistoffset = offsetof(IndexMap, weakreflist),
    .tp_dealloc = (destructor)IndexMap_dealloc,
    .tp_as_buffer = &IndexMap_as_buffer,
    .tp_as_sequence = &IndexMap_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A segment's block index mapped read-only, as a buffer (see _native.c).",
    .tp_new = IndexMap_new,
};

/* --- FixedLookup: a segment's point lookup --------------------------------------------
 *
 * FixedLookup(mm, offsets, shape_ids, shapes, first_keys, min_key, last_key, cache,
 * tombstone, fallback): called with a key, does what segment_reader._lookup's `get` does
 * for a block of fixed-width keys, in one C call: the value cache's two generations, the
 * key range, the bisect over the first keys (a KeyColumn, compared in place), the
 * block's remembered shape, a bisect over the block's keys, and the value
 * sliced out of the mapping (or `tombstone`); then the value is cached, rotating the
 * generations as GenerationalCache.getter does. Why: a 50-row query is 50 of these, and
 * the Python closure spent most of its time in interpreter work around two C-level
 * calls. Whatever this does not handle goes to `fallback` (the Python closure, which
 * caches too): a block whose checksum has not been tested yet (shape id 0: the closure
 * tests it and learns the shape), a block of mixed-width keys, a key that is not bytes,
 * or a block whose numbers point outside the mapping. The mapping is taken as a buffer
 * for the call only, so closing it is not blocked and a closed one raises as the
 * closure's read does.
 */
/*
 * A compressed segment (format 3 or 4): FixedLookup(..., learn, lengths, crcs,
 * raw_lengths, lz4). Its blocks cannot be searched in place, so a lookup decompresses the
 * one block it needs straight from the mapping into a buffer of its own and searches that
 * as a mapped block; the first read of a block tests its crc32 and decompresses it whole
 * (as a plain block is tested once per open), later ones decompress only its head. Why
 * the mapping and not pread (which this did first, to keep the pages out of the RSS):
 * at 8M keys a pread'ed get cost about 0.5 us more (a syscall and a copy of the block,
 * docs/lsm.md); the mapped pages count in the RSS as file-backed, reclaimable pages,
 * reported apart from the engine's own. A block whose numbers point outside the mapping,
 * a checksum, a stream or a shape that does not fit goes to `fallback`, the Python
 * lookup, which reads the block again and raises CorruptSegment naming file and offset;
 * a closed mapping raises ValueError as the closure's read does. Scans of a compressed
 * segment are left to the Python cursor (scan -> None).
 */
/* An array of unsigned ints ('H', 'I' or 'Q') read through a buffer held from col_hold
 * to col_release; len 0 and held 0: not given (Py_None). */
typedef struct {
    Py_buffer b;
    Py_ssize_t len;
    int held;
} UintColumn;

static int
col_hold(UintColumn *c, PyObject *arr)
{
    if (arr == Py_None)
        return 0;
    if (PyObject_GetBuffer(arr, &c->b, PyBUF_FORMAT) < 0)
        return -1;
    c->held = 1;
    if (c->b.itemsize != 2 && c->b.itemsize != 4 && c->b.itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "FixedLookup: unexpected array item size");
        return -1;
    }
    c->len = c->b.len / c->b.itemsize;
    return 0;
}

static void
col_release(UintColumn *c)
{
    if (c->held) {
        c->held = 0;
        PyBuffer_Release(&c->b);
    }
}

typedef struct {
    PyObject_HEAD
    PyObject *mm, *offsets, *shape_ids, *shapes, *first_keys, *min_key, *last_key, *cache, *tombstone,
        *fallback, *learn, *lengths, *crcs, *raw_lengths;
    /* the index columns' buffers, held for the lookup's life (the columns are never resized;
     * a block's learned shape id is written in place): a get took up to four a call */
    UintColumn c_offsets, c_shape_ids, c_lengths, c_crcs, c_raw_lengths;
    unsigned char *checked;     /* per block of a compressed segment: 1 once read whole and tested */
    Py_ssize_t nblocks;
    int packed;                 /* a compressed segment */
    int lz4;
    unsigned char *dbuf;        /* a compressed block decompressed */
    size_t dcap;
    Py_ssize_t off_young, off_old, off_half; /* the value cache's slots (cache_slot), or -1 */
    unsigned long long calls;   /* gets and scans so far: the engine releases the mapped pages of a
                                 * segment whose count stood still (SegmentReader.release_if_idle) */
    vectorcallfunc vectorcall;
} FixedLookup;

static PyObject *str_young, *str_old, *str_half;

/* The value cache's generations and half (GenerationalCache's __slots__) are read and
 * written in place at their offsets when its type holds them as writable object slots
 * (found once, at construction), else through getattr. Why: a get that misses the cache
 * looked up four attributes, about 60 ns of a 10M query's 1 us get; at 10M nearly every
 * get misses (375M of them in the three query phases). */
static Py_ssize_t
cache_slot(PyObject *cache, PyObject *name)
{
    PyObject *d = PyObject_GetAttr((PyObject *)Py_TYPE(cache), name);
    if (d == NULL) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t off = -1;
    if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY))
            off = m->offset;
    }
    Py_DECREF(d);
    return off;
}

/* a new reference to the cache's attribute `name` (slot at `off`, or -1: getattr) */
static PyObject *
cache_get(PyObject *cache, Py_ssize_t off, PyObject *name)
{
    if (off < 0)
        return PyObject_GetAttr(cache, name);
    PyObject *v = *(PyObject **)((char *)cache + off);
    if (v == NULL) {
        PyErr_SetObject(PyExc_AttributeError, name);
        return NULL;
    }
    return Py_NewRef(v);
}

static int
cache_set(PyObject *cache, Py_ssize_t off, PyObject *name, PyObject *v)
{
    if (off < 0)
        return PyObject_SetAttr(cache, name, v);
    PyObject **p = (PyObject **)((char *)cache + off);
    PyObject *prev = *p;
    *p = Py_NewRef(v);
    Py_XDECREF(prev);
    return 0;
}

static PyObject *FixedLookup_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static PyObject *
FixedLookup_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *mm, *offsets, *shape_ids, *shapes, *first_keys, *min_key, *last_key, *cache, *tombstone, *fallback,
        *learn = Py_None, *lengths = Py_None, *crcs = Py_None, *raw_lengths = Py_None;
    int lz4 = 0;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "FixedLookup takes positional arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOO!O!SSOOO|OOOOp", &mm, &offsets, &shape_ids, &PyList_Type, &shapes,
                          &KeyColumnType, &first_keys, &min_key, &last_key, &cache, &tombstone, &fallback, &learn,
                          &lengths, &crcs, &raw_lengths, &lz4))
        return NULL;
    int packed = lengths != Py_None;
    if (packed && (crcs == Py_None || raw_lengths == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "FixedLookup: a compressed segment's lengths need crcs and raw_lengths");
        return NULL;
    }
    if (packed && lz4 && lz4_decompress == NULL) {
        PyErr_Format(PyExc_RuntimeError, "LZ4 is not available: %s", lz4_missing);
        return NULL;
    }
    if (!PyCallable_Check(fallback) || (learn != Py_None && !PyCallable_Check(learn))) {
        PyErr_SetString(PyExc_TypeError, "FixedLookup: fallback (and learn, when given) must be callable");
        return NULL;
    }
    FixedLookup *f = (FixedLookup *)type->tp_alloc(type, 0);
    if (f == NULL)
        return NULL;
    f->mm = Py_NewRef(mm);
    f->offsets = Py_NewRef(offsets);
    f->shape_ids = Py_NewRef(shape_ids);
    f->shapes = Py_NewRef(shapes);
    f->first_keys = Py_NewRef(first_keys);
    f->min_key = Py_NewRef(min_key);
    f->last_key = Py_NewRef(last_key);
    f->cache = Py_NewRef(cache);
    f->off_young = cache_slot(cache, str_young);
    f->off_old = cache_slot(cache, str_old);
    f->off_half = cache_slot(cache, str_half);
    f->tombstone = Py_NewRef(tombstone);
    f->fallback = Py_NewRef(fallback);
    f->learn = Py_NewRef(learn);
    f->packed = packed;
    if (f->packed) {
        Py_ssize_t nb = PyObject_Length(offsets);
        f->nblocks = nb;
        f->checked = nb >= 0 ? calloc((size_t)nb + 1, 1) : NULL;
        if (f->checked == NULL) {
            Py_DECREF(f);
            return nb < 0 ? NULL : PyErr_NoMemory();
        }
    }
    f->lengths = Py_NewRef(lengths);
    f->crcs = Py_NewRef(crcs);
    f->raw_lengths = Py_NewRef(raw_lengths);
    f->lz4 = lz4;
    f->vectorcall = FixedLookup_vectorcall;
    if (col_hold(&f->c_offsets, offsets) < 0 || col_hold(&f->c_shape_ids, shape_ids) < 0 ||
        col_hold(&f->c_lengths, lengths) < 0 || col_hold(&f->c_crcs, crcs) < 0 ||
        col_hold(&f->c_raw_lengths, raw_lengths) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    return (PyObject *)f;
}

static int
FixedLookup_traverse(FixedLookup *f, visitproc visit, void *arg)
{
    Py_VISIT(f->mm);
    Py_VISIT(f->offsets);
    Py_VISIT(f->shape_ids);
    Py_VISIT(f->shapes);
    Py_VISIT(f->first_keys);
    Py_VISIT(f->min_key);
    Py_VISIT(f->last_key);
    Py_VISIT(f->cache);
    Py_VISIT(f->tombstone);
    Py_VISIT(f->fallback);
    Py_VISIT(f->learn);
    Py_VISIT(f->lengths);
    Py_VISIT(f->crcs);
    Py_VISIT(f->raw_lengths);
    return 0;
}

static int
FixedLookup_clear(FixedLookup *f)
{
    col_release(&f->c_offsets);
    col_release(&f->c_shape_ids);
    col_release(&f->c_lengths);
    col_release(&f->c_crcs);
    col_release(&f->c_raw_lengths);
    Py_CLEAR(f->mm);
    Py_CLEAR(f->offsets);
    Py_CLEAR(f->shape_ids);
    Py_CLEAR(f->shapes);
    Py_CLEAR(f->first_keys);
    Py_CLEAR(f->min_key);
    Py_CLEAR(f->last_key);
    Py_CLEAR(f->cache);
    Py_CLEAR(f->tombstone);
    Py_CLEAR(f->fallback);
    Py_CLEAR(f->learn);
    Py_CLEAR(f->lengths);
    Py_CLEAR(f->crcs);
    Py_CLEAR(f->raw_lengths);
    return 0;
}

static void
FixedLookup_dealloc(FixedLookup *f)
{
    PyObject_GC_UnTrack(f);
    FixedLookup_clear(f);
    free(f->checked);
    free(f->dbuf);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

/* item i of a held column; -1 with an error set */
static int
fl_uint(const UintColumn *c, Py_ssize_t i, unsigned long long *out)
{
    if (!c->held || i < 0 || i >= c->len) {
        PyErr_SetString(PyExc_IndexError, "FixedLookup: block index out of range");
        return -1;
    }
    if (c->b.itemsize == 2)
        *out = ((const uint16_t *)c->b.buf)[i];
    else if (c->b.itemsize == 8)
        *out = ((const uint64_t *)c->b.buf)[i];
    else
        *out = ((const uint32_t *)c->b.buf)[i];
    return 0;
}

/* The index of key k among the n keys of `width` bytes at `keys` (a block's keys: in
 * order, each once), or -1. A bisect with memcmp on key boundaries: a block's keys share
 * long prefixes (the profiles' 20-digit ids start with a dozen zeros), and memmem over
 * the key area tried a match at nearly every byte of it: 20 % of a point read at 8M
 * keys went there. */
static Py_ssize_t
fl_match(const unsigned char *keys, Py_ssize_t n, Py_ssize_t width, const unsigned char *k)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        int c = memcmp(keys + mid * width, k, (size_t)width);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The search of a fixed-width block at o of base (size bytes, bounds already checked by
 * the caller): the key's index (fl_match), then its flag and value. Shared by the mapped
 * and the compressed lookup. */
static PyObject *
fl_find(FixedLookup *f, const unsigned char *base, Py_ssize_t size, Py_ssize_t o, Py_ssize_t n, Py_ssize_t width,
        Py_ssize_t ve, Py_ssize_t fl, Py_ssize_t ks, const unsigned char *k, int *fall)
{
    Py_ssize_t kb = o + ks, ke = kb + n * width;
    Py_ssize_t j = fl_match(base + kb, n, width, k);
    if (j < 0)
        Py_RETURN_NONE;
    if (base[o + fl + j])
        return Py_NewRef(f->tombstone);
    Py_ssize_t a = j ? (Py_ssize_t)rd32(base + o + ve + 4 * (j - 1)) : 0;
    Py_ssize_t b = (Py_ssize_t)rd32(base + o + ve + 4 * j);
    if (b < a || ke + b > size) {
        *fall = 1;
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)base + ke + a, b - a);
}

static int
fl_reserve(unsigned char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    unsigned char *q = realloc(*p, need);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    *cap = need;
    return 0;
}

/* LZ4 a block's first `target` bytes at least (from its start, `src`, its `len` stored
 * bytes); -1 if it does not give them */
static int
fl_head(FixedLookup *f, const unsigned char *src, int len, int raw, Py_ssize_t target)
{
    if (target > raw)
        return -1;
    int got = lz4_partial((const char *)src, (char *)f->dbuf, len, (int)target, raw);
    return got >= target ? got : -1;
}

/* A block read before (its crc32 tested and the whole of it decompressed to its recorded
 * length then, as a plain block is tested once per open): only as much of it is
 * decompressed as the search needs, the header, the keys, then the values up to the
 * one asked for: on a profiles block, about half of it on average. */
static PyObject *
fl_search_head(FixedLookup *f, const unsigned char *src, int len, int raw, const unsigned char *k, Py_ssize_t klen,
               int *fall)
{
    int got = fl_head(f, src, len, raw, 4);
    if (got < 0) {
        *fall = 1;
        return NULL;
    }
    const unsigned char *b = f->dbuf;
    Py_ssize_t n = (Py_ssize_t)(b[0] | (b[1] << 8)), width = (Py_ssize_t)(b[2] | (b[3] << 8));
    Py_ssize_t ve = 4, fl = 4 + 4 * n, ks = 4 + 5 * n, ke = ks + n * width;
    if (!width || n == 0 || ke > raw) {
        *fall = 1;
        return NULL;
    }
    if (klen != width)
        Py_RETURN_NONE;
    if (got < ke && (got = fl_head(f, src, len, raw, ke)) < 0) {
        *fall = 1;
        return NULL;
    }
    Py_ssize_t j = fl_match(b + ks, n, width, k);
    if (j < 0)
        Py_RETURN_NONE;
    if (b[fl + j])
        return Py_NewRef(f->tombstone);
    Py_ssize_t va = j ? (Py_ssize_t)rd32(b + ve + 4 * (j - 1)) : 0;
    Py_ssize_t vb = (Py_ssize_t)rd32(b + ve + 4 * j);
    if (vb < va || ke + vb > raw) {
        *fall = 1;
        return NULL;
    }
    if (got < ke + vb && (got = fl_head(f, src, len, raw, ke + vb)) < 0) {
        *fall = 1;
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)b + ke + va, vb - va);
}

/* A compressed segment's block i, stored at `src` (in the mapping), checked,
 * decompressed and searched (see the comment above FixedLookup). The first read of a block
 * tests its crc32 and decompresses it whole; later ones decompress only its head
 * (fl_search_head). */
static PyObject *
fl_search_stored(FixedLookup *f, Py_ssize_t i, const unsigned char *src, unsigned long long len,
                 unsigned long long crc, unsigned long long raw, const unsigned char *k, Py_ssize_t klen, int *fall)
{
    if (i < f->nblocks && f->checked[i] && f->lz4 && lz4_partial != NULL)
        return fl_search_head(f, src, (int)len, (int)raw, k, klen, fall);
    if ((uint32_t)crc32(0L, src, (uInt)len) != (uint32_t)crc ||
        unpack_block(f->lz4, src, (uint32_t)len, f->dbuf, (uint32_t)raw) != NULL) {
        *fall = 1;
        return NULL;
    }
    if (i < f->nblocks)
        f->checked[i] = 1;
    const unsigned char *b = f->dbuf;
    Py_ssize_t n = (Py_ssize_t)(b[0] | (b[1] << 8)), width = (Py_ssize_t)(b[2] | (b[3] << 8));
    Py_ssize_t size = (Py_ssize_t)raw, ve = 4, fl = 4 + 4 * n, ks = 4 + 5 * n; /* block.shape(n, width) */
    if (!width || n == 0 || ks + n * width > size) {
        *fall = 1; /* mixed-width keys (or a shape that does not fit): the Python path */
        return NULL;
    }
    if (klen != width)
        Py_RETURN_NONE;
    return fl_find(f, b, size, 0, n, width, ve, fl, ks, k, fall);
}

/* A compressed segment's block i found in the mapping (held for the call only, so closing
 * it is not blocked and a closed one raises) and searched by fl_search_stored. */
static PyObject *
fl_search_packed(FixedLookup *f, Py_ssize_t i, const unsigned char *k, Py_ssize_t klen, int *fall)
{
    unsigned long long off, len, crc, raw;
    if (fl_uint(&f->c_offsets, i, &off) < 0 || fl_uint(&f->c_lengths, i, &len) < 0 || fl_uint(&f->c_crcs, i, &crc) < 0 ||
        fl_uint(&f->c_raw_lengths, i, &raw) < 0)
        return NULL;
    if (len < 1 || raw < 4 || raw > MAX_INFLATE(len) || len > INT32_MAX || raw > INT32_MAX) {
        *fall = 1;
        return NULL;
    }
    if (fl_reserve(&f->dbuf, &f->dcap, (size_t)raw) < 0)
        return NULL;
    Py_buffer mb;
    if (PyObject_GetBuffer(f->mm, &mb, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = NULL;
    if (off > (unsigned long long)mb.len || len > (unsigned long long)mb.len - off)
        *fall = 1; /* the index points outside the file: the Python path says where */
    else
        out = fl_search_stored(f, i, (const unsigned char *)mb.buf + off, len, crc, raw, k, klen, fall);
    PyBuffer_Release(&mb);
    return out;
}

/* the value of key in its block, tombstone, Py_None (absent), or NULL: with *fall set
 * when the Python path has to decide, else with an error set */
static PyObject *
fl_search(FixedLookup *f, PyObject *key, int *fall)
{
    const unsigned char *k = (const unsigned char *)PyBytes_AS_STRING(key);
    Py_ssize_t klen = PyBytes_GET_SIZE(key);
    if (key_cmp(k, klen, (const unsigned char *)PyBytes_AS_STRING(f->last_key), PyBytes_GET_SIZE(f->last_key)) > 0 ||
        key_cmp(k, klen, (const unsigned char *)PyBytes_AS_STRING(f->min_key), PyBytes_GET_SIZE(f->min_key)) < 0)
        Py_RETURN_NONE;
    Py_ssize_t i = kc_find((KeyColumn *)f->first_keys, k, klen) - 1;
    if (i < 0)
        Py_RETURN_NONE;
    if (f->packed)
        return fl_search_packed(f, i, k, klen, fall);
    unsigned long long sid, off;
    if (fl_uint(&f->c_shape_ids, i, &sid) < 0)
        return NULL;
    if (sid == 0 || sid >= (unsigned long long)PyList_GET_SIZE(f->shapes)) {
        *fall = 1;
        return NULL;
    }
    PyObject *shp = PyList_GET_ITEM(f->shapes, (Py_ssize_t)sid);
    if (!PyTuple_Check(shp) || PyTuple_GET_SIZE(shp) != 6) {
        *fall = 1;
        return NULL;
    }
    Py_ssize_t v[6];
    for (int j = 0; j < 6; j++) {
        v[j] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shp, j));
        if (v[j] == -1 && PyErr_Occurred())
            return NULL;
    }
    Py_ssize_t n = v[0], width = v[1], ve = v[3], fl = v[4], ks = v[5];
    if (!width) {
        *fall = 1;
        return NULL;
    }
    if (klen != width)
        Py_RETURN_NONE;
    if (fl_uint(&f->c_offsets, i, &off) < 0)
        return NULL;
    Py_buffer mb;
    if (PyObject_GetBuffer(f->mm, &mb, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *base = (const unsigned char *)mb.buf;
    Py_ssize_t size = mb.len, o = (Py_ssize_t)off;
    Py_ssize_t kb = o + ks, ke = kb + n * width;
    PyObject *out = NULL;
    if (n < 0 || o < 0 || kb < 0 || ke > size || o + fl + n > size || o + ve + 4 * n > size) {
        *fall = 1;
        goto done;
    }
    out = fl_find(f, base, size, o, n, width, ve, fl, ks, k, fall);
done:
    PyBuffer_Release(&mb);
    return out;
}

static PyObject *
FixedLookup_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FixedLookup *f = (FixedLookup *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "FixedLookup(key) takes one positional argument");
        return NULL;
    }
    f->calls++;
    PyObject *key = args[0];
    if (!PyBytes_CheckExact(key))
        return PyObject_CallOneArg(f->fallback, key);
    PyObject *young = cache_get(f->cache, f->off_young, str_young);
    if (young == NULL)
        return NULL;
    if (!PyDict_CheckExact(young)) {
        Py_DECREF(young);
        return PyObject_CallOneArg(f->fallback, key);
    }
    PyObject *v = PyDict_GetItemWithError(young, key); /* borrowed */
    Py_DECREF(young);
    if (v != NULL && v != Py_None)
        return Py_NewRef(v);
    if (PyErr_Occurred())
        return NULL;
    PyObject *old = cache_get(f->cache, f->off_old, str_old);
    if (old == NULL)
        return NULL;
    if (!PyDict_CheckExact(old)) {
        Py_DECREF(old);
        return PyObject_CallOneArg(f->fallback, key);
    }
    v = PyDict_GetItemWithError(old, key);
    Py_XINCREF(v);
    Py_DECREF(old);
    if (v == Py_None)
        Py_CLEAR(v);
    if (v == NULL) {
        if (PyErr_Occurred())
            return NULL;
        int fall = 0;
        v = fl_search(f, key, &fall);
        if (v == NULL)
            return fall && !PyErr_Occurred() ? PyObject_CallOneArg(f->fallback, key) : NULL;
        if (v == Py_None)
            return v;
    }
    /* cache it (a hit in the old generation moves to the young one) */
    PyObject *h = cache_get(f->cache, f->off_half, str_half);
    if (h == NULL)
        goto fail;
    Py_ssize_t half = PyLong_AsSsize_t(h);
    Py_DECREF(h);
    if (half == -1 && PyErr_Occurred())
        goto fail;
    if (half) {
        young = cache_get(f->cache, f->off_young, str_young);
        if (young == NULL)
            goto fail;
        if (PyDict_CheckExact(young) && PyDict_GET_SIZE(young) >= half) {
            PyObject *fresh = PyDict_New();
            if (fresh == NULL || cache_set(f->cache, f->off_old, str_old, young) < 0 ||
                cache_set(f->cache, f->off_young, str_young, fresh) < 0) {
                Py_XDECREF(fresh);
                Py_DECREF(young);
                goto fail;
            }
            Py_DECREF(young);
            young = fresh;
        }
        int rc = PyObject_SetItem(young, key, v);
        Py_DECREF(young);
        if (rc < 0)
            goto fail;
    }
    return v;
fail:
    Py_DECREF(v);
    return NULL;
}

/* The shape of block i as six numbers (n, width, key ends, value ends, flags, keys): the
 * remembered one, or for a block not checked yet what `learn(i)` returns (the Python side
 * tests the block's checksum, raising CorruptSegment naming the file, and remembers the
 * shape). 1: found; 0: the Python path has to decide (no learn, a strange shape); -1: an
 * error is set. */
static int
fl_shape(FixedLookup *f, Py_ssize_t i, Py_ssize_t v[6])
{
    unsigned long long sid;
    if (fl_uint(&f->c_shape_ids, i, &sid) < 0)
        return -1;
    PyObject *shp, *owned = NULL;
    if (sid != 0 && sid < (unsigned long long)PyList_GET_SIZE(f->shapes))
        shp = PyList_GET_ITEM(f->shapes, (Py_ssize_t)sid);
    else if (sid == 0 && f->learn != Py_None) {
        owned = PyObject_CallFunction(f->learn, "n", i);
        if (owned == NULL)
            return -1;
        shp = owned;
    } else
        return 0;
    int rc = 1;
    if (!PyTuple_Check(shp) || PyTuple_GET_SIZE(shp) != 6)
        rc = 0;
    for (int j = 0; rc == 1 && j < 6; j++) {
        v[j] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shp, j));
        if (v[j] == -1 && PyErr_Occurred())
            rc = -1;
    }
    Py_XDECREF(owned);
    return rc;
}

/* scan(start, end, inclusive, limit): the first `limit` live keys k with start <= k and
 * k < end (k <= end when inclusive; end None: no bound), in key order, read in place from
 * the segment's blocks, skipping tombstones: what the tree's merged key-range
 * read returns over this one segment. Why: a scan through the Python cursor and merging
 * iterator was about 20 us of interpreter work per 50-key scan (a created-at range starts
 * on blocks no cache holds), 1.7x RocksDB's scan phase at 200k. Blocks of fixed-width
 * keys and of mixed-width ones (the country/status index) alike. None when the Python
 * path has to decide (no `learn` for a block not checked yet, numbers outside the
 * mapping); a damaged block raises as the Python path's read does. */
static PyObject *
FixedLookup_scan(FixedLookup *f, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyBytes_Check(args[0]) || (args[1] != Py_None && !PyBytes_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "scan(start: bytes, end: bytes | None, inclusive, limit)");
        return NULL;
    }
    f->calls++;
    if (f->packed) /* a compressed segment: the Python cursor reads it */
        Py_RETURN_NONE;
    int inclusive = PyObject_IsTrue(args[2]);
    if (inclusive < 0)
        return NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL || limit <= 0)
        return out;
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t slen = PyBytes_GET_SIZE(args[0]);
    int bounded = args[1] != Py_None;
    const unsigned char *e = bounded ? (const unsigned char *)PyBytes_AS_STRING(args[1]) : NULL;
    Py_ssize_t elen = bounded ? PyBytes_GET_SIZE(args[1]) : 0;
    KeyColumn *c = (KeyColumn *)f->first_keys;
    Py_ssize_t lo = kc_find(c, s, slen); /* bisect_right(start): start's block is the one before */
    int before = 1; /* keys below start may remain (only in the first block read) */
    for (Py_ssize_t i = lo ? lo - 1 : 0; i < c->n; i++) {
        if (bounded) { /* a block starting past the end holds nothing in range */
            int cmp = key_cmp(c->base + i * c->width, kc_len(c, i), e, elen);
            if (inclusive ? cmp > 0 : cmp >= 0)
                break;
        }
        Py_ssize_t v[6];
        int r = fl_shape(f, i, v);
        if (r < 0)
            goto fail;
        if (r == 0)
            goto fall;
        /* width 0: keys of mixed length, located by the block's key end offsets at kx */
        Py_ssize_t n = v[0], width = v[1], kx = v[2], fl = v[4], ks = v[5];
        unsigned long long off;
        if (fl_uint(&f->c_offsets, i, &off) < 0)
            goto fail;
        Py_buffer mb;
        if (PyObject_GetBuffer(f->mm, &mb, PyBUF_SIMPLE) < 0)
            goto fail;
        const unsigned char *base = (const unsigned char *)mb.buf;
        Py_ssize_t o = (Py_ssize_t)off, kb = o + ks;
        if (n < 0 || o < 0 || kb < 0 || width < 0 || kb + n * width > mb.len || o + fl + n > mb.len ||
            (!width && (kx < 0 || o + kx + 4 * n > mb.len))) {
            PyBuffer_Release(&mb);
            goto fall;
        }
        Py_ssize_t kend = 0; /* mixed: where the previous key ended */
        for (Py_ssize_t j = 0; j < n; j++) {
            const unsigned char *k = base + kb + j * width;
            Py_ssize_t klen = width;
            if (!width) {
                Py_ssize_t a = kend;
                kend = (Py_ssize_t)rd32(base + o + kx + 4 * j);
                if (kend < a || kb + kend > mb.len) {
                    PyBuffer_Release(&mb);
                    goto fall;
                }
                k = base + kb + a;
                klen = kend - a;
            }
            if (before) {
                if (key_cmp(k, klen, s, slen) < 0)
                    continue;
                before = 0;
            }
            if (bounded) {
                int cmp = key_cmp(k, klen, e, elen);
                if (inclusive ? cmp > 0 : cmp >= 0) {
                    PyBuffer_Release(&mb);
                    return out;
                }
            }
            if (base[o + fl + j]) /* a tombstone */
                continue;
            PyObject *key = PyBytes_FromStringAndSize((const char *)k, klen);
            if (key == NULL || PyList_Append(out, key) < 0) {
                Py_XDECREF(key);
                PyBuffer_Release(&mb);
                goto fail;
            }
            Py_DECREF(key);
            if (PyList_GET_SIZE(out) >= limit) {
                PyBuffer_Release(&mb);
                return out;
            }
        }
        PyBuffer_Release(&mb);
        before = 0;
    }
    return out;
fall:
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef FixedLookup_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))FixedLookup_scan, METH_FASTCALL,
     "scan(start, end, inclusive, limit): the first limit live keys in [start, end) ([start, end] when\n"
     "inclusive; end None: unbounded) read in place, or None when the Python path has to decide"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef FixedLookup_members[] = {
    {"calls", T_ULONGLONG, offsetof(FixedLookup, calls), READONLY, "gets and scans so far"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject FixedLookupType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "asyncbench.engines.lsm._native.FixedLookup",
    .tp_basicsize = sizeof(FixedLookup),
    .tp_dealloc = (destructor)FixedLookup_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FixedLookup, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = (traverseproc)FixedLookup_traverse,
    .tp_clear = (inquiry)FixedLookup_clear,
    .tp_doc = "A segment's point lookup over blocks of fixed-width keys, with its value cache (see _native.c).",
    .tp_methods = FixedLookup_methods,
    .tp_members = FixedLookup_members,
    .tp_new = FixedLookup_new,
};


/*
 * encode_records(records) -> bytes: a log frame's payload, byte for byte what
 * wal.encode_records_py writes: per record u32 key length, u32 value length (0xFFFFFFFF:
 * a tombstone), key, value. `records` is one flat list, key, value, key, value, ...
 * (value None: a tombstone), as the log keeps them: a (key, value) tuple per record was
 * a tracked object per record for the garbage collector. Why compiled: the reference
 * plan logs every insert and update five times (one record per tree), and packing
 * 16_384 records a frame in Python was 18-20 % of the insert phase on the event loop
 * (issue 40 item 4). Two passes under the GIL (sizes, then copies).
 */
#define TOMB_LEN 0xFFFFFFFFu

/* An error found by records_scan: its exception type and message (set with the GIL). */
typedef struct {
    PyObject **type;
    const char *message;
} RecordsError;

/* The encoded size of the flat list's records (its length even, checked), or -1 with
 * *err filled: every key bytes, every value bytes or None, each under 4 GiB. Reads only
 * (the list's items, their types and sizes): callable with the GIL released while
 * nothing else holds the list, as put_records is. */
static Py_ssize_t
records_scan(PyObject *records, RecordsError *err)
{
    Py_ssize_t n = PyList_GET_SIZE(records), total = 0;
    for (Py_ssize_t i = 0; i < n; i += 2) {
        PyObject *k = PyList_GET_ITEM(records, i);
        PyObject *v = PyList_GET_ITEM(records, i + 1);
        if (!PyBytes_Check(k) || (v != Py_None && !PyBytes_Check(v))) {
            err->type = &PyExc_TypeError;
            err->message = "encode_records: keys must be bytes and values bytes or None";
            return -1;
        }
        if ((size_t)PyBytes_GET_SIZE(k) >= TOMB_LEN || (v != Py_None && (size_t)PyBytes_GET_SIZE(v) >= TOMB_LEN)) {
            err->type = &PyExc_OverflowError;
            err->message = "encode_records: a key or value of 4 GiB or more";
            return -1;
        }
        total += 8 + PyBytes_GET_SIZE(k) + (v == Py_None ? 0 : PyBytes_GET_SIZE(v));
    }
    return total;
}

/* 0 if ``records`` is a flat list of even length, else -1 with an error set (``name``
 * says whose). */
static int
records_list(PyObject *records, const char *name)
{
    if (!PyList_CheckExact(records)) {
        PyErr_Format(PyExc_TypeError, "%s: records must be a list", name);
        return -1;
    }
    if (PyList_GET_SIZE(records) % 2) {
        PyErr_SetString(PyExc_ValueError, "encode_records: a flat list of key, value pairs has an even length");
        return -1;
    }
    return 0;
}

/* Write the records, measured by records_scan, at p. Reads only (the list's items and
 * their bytes): callable with the GIL released while nothing else holds the list. */
static void
put_records(PyObject *records, unsigned char *p)
{
    Py_ssize_t n = PyList_GET_SIZE(records);
    for (Py_ssize_t i = 0; i < n; i += 2) {
        PyObject *k = PyList_GET_ITEM(records, i);
        PyObject *v = PyList_GET_ITEM(records, i + 1);
        uint32_t klen = (uint32_t)PyBytes_GET_SIZE(k);
        uint32_t vlen = v == Py_None ? TOMB_LEN : (uint32_t)PyBytes_GET_SIZE(v);
        for (int b = 0; b < 4; b++) {
            p[b] = (unsigned char)(klen >> (8 * b));
            p[4 + b] = (unsigned char)(vlen >> (8 * b));
        }
        p += 8;
        memcpy(p, PyBytes_AS_STRING(k), klen);
        p += klen;
        if (v != Py_None) {
            memcpy(p, PyBytes_AS_STRING(v), vlen);
            p += vlen;
        }
    }
}

static PyObject *
encode_records(PyObject *Py_UNUSED(module), PyObject *records)
{
    if (records_list(records, "encode_records") < 0)
        return NULL;
    RecordsError err;
    Py_ssize_t total = records_scan(records, &err);
    if (total < 0) {
        PyErr_SetString(*err.type, err.message);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        return NULL;
    put_records(records, (unsigned char *)PyBytes_AS_STRING(out));
    return out;
}

PyDoc_STRVAR(encode_records_doc,
             "encode_records(records) -> bytes: a log frame's payload for a flat list key, value,\n"
             "key, value, ... (value None: a tombstone), as wal.encode_records_py writes it.");

/*
 * lz4_log_frame(records) -> bytes: one whole log frame of kind 2 (``wal.py``): the
 * 9-byte header (u32 payload length, u32 crc32 of the payload, u8 kind 2), then the
 * payload: u32 length of the encoded records, then those records (as encode_records
 * writes them) compressed as one LZ4 block. Why: the reference harness's engine logs
 * in LZ4 at its fastest level; zlib level 1 of every logged record was the largest
 * share of the log writer's CPU, and at 10M profiles the log writer, the merges and the
 * event loop together kept both cores of the machine busy. Only the list's own check
 * and the frame's bytes object are made under the GIL; checking and measuring the
 * records, copying, compressing and the checksum run with it released (``records`` is
 * the writer's own list from ``WriteAheadLog.take``: nothing else holds it, and bytes
 * objects never change). Measuring them under the GIL read every record's key and value
 * object, cold in the cache by then, while the event loop waited for the GIL.
 */
static PyObject *
lz4_log_frame(PyObject *Py_UNUSED(module), PyObject *records)
{
    if (lz4_compress == NULL) {
        PyErr_Format(PyExc_RuntimeError, "LZ4 is not available: %s", lz4_missing);
        return NULL;
    }
    if (records_list(records, "lz4_log_frame") < 0)
        return NULL;
    RecordsError err = {NULL, NULL};
    const char *failed = NULL; /* a failure past the records' check, raised as RuntimeError */
    unsigned char *raw = NULL, *o = NULL;
    int got = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t total = records_scan(records, &err);
    if (total > 0x7E000000) { /* LZ4's largest input */
        err.type = &PyExc_OverflowError;
        err.message = "lz4_log_frame: records too large for one frame";
    }
    else if (total >= 0) {
        int bound = lz4_bound((int)total);
        raw = malloc(total ? (size_t)total : 1);
        o = bound > 0 ? malloc(13 + (size_t)bound) : NULL;
        if (raw == NULL || o == NULL)
            failed = "memory";
        else {
            put_records(records, raw);
            got = total ? lz4_compress((const char *)raw, (char *)o + 13, (int)total, bound) : 0;
            if (got < 0 || (total > 0 && got == 0))
                failed = "LZ4 could not compress a log frame";
            else {
                uint32_t plen = (uint32_t)got + 4, crc;
                for (int b = 0; b < 4; b++)
                    o[9 + b] = (unsigned char)((uint32_t)total >> (8 * b));
                crc = (uint32_t)crc32(0L, o + 9, (uInt)plen);
                for (int b = 0; b < 4; b++) {
                    o[b] = (unsigned char)(plen >> (8 * b));
                    o[4 + b] = (unsigned char)(crc >> (8 * b));
                }
                o[8] = 2;
            }
        }
    }
    free(raw);
    Py_END_ALLOW_THREADS
    PyObject *out = NULL;
    if (err.type != NULL)
        PyErr_SetString(*err.type, err.message);
    else if (failed != NULL && strcmp(failed, "memory") == 0)
        PyErr_NoMemory();
    else if (failed != NULL)
        PyErr_SetString(PyExc_RuntimeError, failed);
    else
        out = PyBytes_FromStringAndSize((const char *)o, 13 + (Py_ssize_t)got);
    free(o);
    return out;
}

PyDoc_STRVAR(lz4_log_frame_doc,
             "lz4_log_frame(records) -> bytes: a whole log frame of kind 2 (the records encoded as\n"
             "encode_records does, then compressed as one LZ4 block after their u32 length).");

/*
 * first_keys_region(first_keys) -> bytes: the first-key part of a segment index
 * (``segment_writer.encode_index``: u32 width, u32 kind, then the keys fixed, padded
 * or mixed), byte for byte what the Python encoder writes. Why compiled: a merge's
 * index holds a first key per 16 entries, and building it in Python (a generator over
 * every key for the layout test, another for the padding) held the GIL about 1.8 s of
 * a 10M-profile insert on the merge lane, time the event loop waited for.
 */
static PyObject *
first_keys_region(PyObject *Py_UNUSED(module), PyObject *firsts)
{
    if (!PyList_CheckExact(firsts)) {
        PyErr_SetString(PyExc_TypeError, "first_keys_region: first keys must be a list");
        return NULL;
    }
    FirstKeys f = {.list = firsts, .n = PyList_GET_SIZE(firsts)};
    for (Py_ssize_t i = 0; i < f.n; i++) {
        if (!PyBytes_Check(PyList_GET_ITEM(firsts, i))) {
            PyErr_SetString(PyExc_TypeError, "first_keys_region: first keys must be bytes");
            return NULL;
        }
    }
    return region_bytes(&f);
}

PyDoc_STRVAR(first_keys_region_doc,
             "first_keys_region(first_keys) -> bytes: the first-key region of a segment index (u32 width,\n"
             "u32 kind, the keys fixed, padded or mixed), as segment_writer.encode_index writes it.");

PyDoc_STRVAR(write_blocks_doc,
             "write_blocks(fd, pos, sources, step, drop_tombstones[, level]) -> (first_keys_region, offsets,\n"
             "lengths, crcs, last_key, entries, live, end_pos, raw_lengths): merge sorted sources (newest first: dicts\n"
             "or (buffer, offsets, lengths, crcs[, file_mapping[, raw_lengths]]) segments) into data blocks\n"
             "written at pos of fd, each compressed at zlib `level` when it is 1..9, an LZ4 block when it is -1.");

static PyMethodDef native_methods[] = {
    {"write_blocks", (PyCFunction)(void (*)(void))write_blocks, METH_FASTCALL, write_blocks_doc},
    {"encode_records", (PyCFunction)encode_records, METH_O, encode_records_doc},
    {"lz4_log_frame", (PyCFunction)lz4_log_frame, METH_O, lz4_log_frame_doc},
    {"first_keys_region", (PyCFunction)first_keys_region, METH_O, first_keys_region_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_native", "The LSM's flush and merge write loop in C (see native.py).", -1,
    native_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL)
        return NULL;
    lz4_load();
    if (PyModule_AddObjectRef(m, "LZ4", lz4_decompress != NULL ? Py_True : Py_False) < 0 ||
        PyModule_AddStringConstant(m, "LZ4_MISSING", lz4_missing) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    BlockCorrupt = PyErr_NewException("asyncbench.engines.lsm._native.BlockCorrupt", PyExc_Exception, NULL);
    if (BlockCorrupt == NULL || PyModule_AddObjectRef(m, "BlockCorrupt", BlockCorrupt) < 0 ||
        PyType_Ready(&KeyColumnType) < 0 ||
        PyModule_AddObjectRef(m, "KeyColumn", (PyObject *)&KeyColumnType) < 0 ||
        PyType_Ready(&IndexMapType) < 0 ||
        PyModule_AddObjectRef(m, "IndexMap", (PyObject *)&IndexMapType) < 0 ||
        (str_young = PyUnicode_InternFromString("young")) == NULL ||
        (str_old = PyUnicode_InternFromString("old")) == NULL ||
        (str_half = PyUnicode_InternFromString("half")) == NULL || PyType_Ready(&FixedLookupType) < 0 ||
        PyModule_AddObjectRef(m, "FixedLookup", (PyObject *)&FixedLookupType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#ifdef SOURCE_SHA256
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", SOURCE_SHA256) < 0) { /* setup.py: native_build.py */
        Py_DECREF(m);
        return NULL;
    }
#endif
    return m;
}
