/*
 * The first-key region of a segment index (first_keys.c says what and why): built by a
 * merge from its own copy of its first keys (write_blocks), or from a list of bytes
 * (first_keys_region, the Python writer's).
 */
#ifndef LSM_FIRST_KEYS_H
#define LSM_FIRST_KEYS_H

#include "entry.h"

typedef struct {
    PyObject *list;              /* a list of bytes (checked by the caller), or NULL: */
    const unsigned char *base;   /* the keys copied one after another, */
    const Entry *spans;          /* key i at base + spans[i].vlen, spans[i].klen long */
    Py_ssize_t n;
} FirstKeys;

/* The region as a new bytes object, measured and written with the GIL released (the
 * keys are the caller's own: a list nothing else holds, or the merge's copy). */
PyObject *region_bytes(const FirstKeys *f);

/* first_keys_region(first_keys) -> bytes, the module's function. */
PyObject *first_keys_region(PyObject *module, PyObject *firsts);
extern const char first_keys_region_doc[];

#endif
