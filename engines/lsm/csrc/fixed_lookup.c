#include "fixed_lookup.h"

#include "coding.h"
#include "compress.h"
#include "key_column.h"

#include <stddef.h>
#include <stdlib.h>
#include <structmember.h>
#include <zlib.h>

/* FixedLookup: a segment's point lookup.
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

PyTypeObject FixedLookupType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "asyncbench.engines.lsm._native.FixedLookup",
    .tp_basicsize = sizeof(FixedLookup),
    .tp_dealloc = (destructor)FixedLookup_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FixedLookup, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = (traverseproc)FixedLookup_traverse,
    .tp_clear = (inquiry)FixedLookup_clear,
    .tp_doc = "A segment's point lookup over blocks of fixed-width keys, with its value cache (see engines/lsm/csrc/fixed_lookup.c).",
    .tp_methods = FixedLookup_methods,
    .tp_members = FixedLookup_members,
    .tp_new = FixedLookup_new,
};

int
fixed_lookup_ready(void)
{
    if ((str_young = PyUnicode_InternFromString("young")) == NULL ||
        (str_old = PyUnicode_InternFromString("old")) == NULL ||
        (str_half = PyUnicode_InternFromString("half")) == NULL)
        return -1;
    return PyType_Ready(&FixedLookupType);
}
