#include "writer.h"

#include "compress.h"
#include "coding.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

int
buf_grow(Buf *b, size_t extra)
{
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

typedef struct {
    unsigned char *p;
    size_t len;
} Grave;

int
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

void
w_bury(Writer *w)
{
    for (size_t at = 0; at < w->grave.len; at += sizeof(Grave)) {
        Grave g;
        memcpy(&g, w->grave.p + at, sizeof(Grave));
        free(g.p);
    }
    w->grave.len = 0;
}

int
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
int
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
