/*
 * An entry (a key, its value or a tombstone) and the key order every part of the module
 * shares: bytes compared as unsigned, a prefix before its extensions (Python's bytes order).
 *
 * Every header of this folder starts with Python.h (it must come before the system
 * headers); entry.h is the one they all reach.
 */
#ifndef LSM_ENTRY_H
#define LSM_ENTRY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

typedef struct {
    const unsigned char *k;
    Py_ssize_t klen;
    const unsigned char *v;
    Py_ssize_t vlen;
    int tomb;
} Entry;

static inline int
key_cmp(const unsigned char *a, Py_ssize_t alen, const unsigned char *b, Py_ssize_t blen)
{
    Py_ssize_t m = alen < blen ? alen : blen;
    int c = memcmp(a, b, (size_t)m);
    if (c)
        return c;
    return (alen > blen) - (alen < blen);
}

#endif
