#include "source.h"

#include "coding.h"
#include "compress.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

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
int
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
int
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

/* The entries of a dict source (``s->dict``, ``s->nents`` its size when the call
 * began), called with the GIL released: PyDict_Next only reads the dict's table and
 * returns borrowed references, and a bytes object's size and data never change, so
 * the walk touches no reference count and allocates nothing. The caller holds a
 * reference on the dict; the contract (a frozen memtable) is that no thread writes it
 * during the call. NULL, or why the source was refused: "type" (a key that is not
 * bytes, a value neither bytes nor None) or "changed" (its size moved). */
const char *
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
