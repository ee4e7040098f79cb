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


/* bisect_right of key k over all n first keys: the first i whose key is > k (windows
 * built at the first call, see key_column.c). */
Py_ssize_t kc_find(KeyColumn *c, const unsigned char *k, Py_ssize_t klen);

extern PyTypeObject KeyColumnType;

#endif
