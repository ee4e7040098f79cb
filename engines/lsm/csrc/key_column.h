/*
 * KeyColumn: a segment index's fixed-width first keys, read in place (key_column.c says
 * what and why); the point lookup bisects it in place too (kc_find).
 */
#ifndef LSM_KEY_COLUMN_H
#define LSM_KEY_COLUMN_H

#include "entry.h"

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

/* Builds c->windows (and c->common); -1 without memory (the caller bisects the keys). */
int kc_build_windows(KeyColumn *c);

/* bisect_right of key k over all n first keys: the first i whose key is > k. Why the
 * windows: a point lookup bisects a column of up to 625_000 keys (10M profiles), whose
 * last probes each miss the CPU's caches; a column of 8-byte numbers holds 8 of them in
 * a cache line (a 20-digit id: 3) and compares without a memcmp call. Keys whose windows
 * are equal to k's are then compared whole. Inline: a point lookup calls it. */
static inline Py_ssize_t
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

extern PyTypeObject KeyColumnType;

#endif
