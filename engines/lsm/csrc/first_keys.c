#include "first_keys.h"

/* The first-key region of a segment index.
 *
 * The bytes segment_writer.encode_index writes before the index's columns: u32 width,
 * u32 kind, then the first keys fixed (kind 1: all one width), padded with zeros to the
 * widest (kind 2: none empty, none ending in a zero byte) or mixed (kind 0: u32 end of
 * each, then the keys). Built from a list of bytes (first_keys_region, the Python
 * writer's) or from a merge's own copy of its first keys (write_blocks): the merge used
 * to hand back one bytes object per block (625_000 for a 10M-entry tree) for this to
 * read again, all made, read and freed under the GIL while the event loop waited.
 */

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
PyObject *
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

/*
 * first_keys_region(first_keys) -> bytes: the first-key part of a segment index
 * (``segment_writer.encode_index``: u32 width, u32 kind, then the keys fixed, padded
 * or mixed), byte for byte what the Python encoder writes. Why compiled: a merge's
 * index holds a first key per 16 entries, and building it in Python (a generator over
 * every key for the layout test, another for the padding) held the GIL about 1.8 s of
 * a 10M-profile insert on the merge lane, time the event loop waited for.
 */
PyObject *
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

const char first_keys_region_doc[] = PyDoc_STR(
    "first_keys_region(first_keys) -> bytes: the first-key region of a segment index (u32 width,\n"
    "u32 kind, the keys fixed, padded or mixed), as segment_writer.encode_index writes it.");
