/*
 * workloads.ycsb._kernels: compiled twins of the YCSB operation's per-operation Python work.
 *
 * Import it through workloads.ycsb.kernels, never directly: that module falls back to the
 * pure-Python definitions when this is not built.  Each function equals its definition bit
 * for bit (tests/test_ycsb_kernels.py, hypothesis property tests):
 *
 *   fold_bytes, digest     digest.py py_fold_bytes, py_digest   a read's checksum in one pass
 *   key_names              keys.py py_key_names                 YCSB's buildKeyName, as bytes
 *   records, value         codec.py py_records, py_value        the seeded record, encoded
 *   splice                 codec.py py_splice                   one field of an encoded record
 *
 * C99, positional arguments only, the GIL held throughout.  Wrong types raise TypeError,
 * malformed values ValueError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The profile store's fold (workloads/profile_store/fold.py) and YCSB's FNV-64 (fnv.py). */
#define OFFSET_BASIS 14695981039346656037ULL
#define PRIME 1099511628211ULL
#define GOLDEN 0x9E3779B97F4A7C15ULL
#define POOL_WINDOWS 65536u
#define NOTHING 0xFFFFFFFFFFFFFFFFULL /* the length word of "nothing was read" */
#define KEY_MAX 64

static Py_ALWAYS_INLINE inline uint64_t
fold(uint64_t state, uint64_t word)
{
    return (state ^ word) * PRIME;
}

/* The length, then each little-endian 8-byte word, the last one zero padded. */
static uint64_t
fold_span(uint64_t state, const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    uint64_t w;
    state = fold(state, (uint64_t)n);
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
#if PY_BIG_ENDIAN
        w = __builtin_bswap64(w);
#endif
        state = fold(state, w);
    }
    if (i < n) {
        w = 0;
        for (Py_ssize_t j = 0; i + j < n; j++) {
            w |= (uint64_t)p[i + j] << (8 * j);
        }
        state = fold(state, w);
    }
    return state;
}

/* murmur3's fmix64: every input bit reaches every output bit. */
static Py_ALWAYS_INLINE inline uint64_t
mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    return h;
}

static Py_ALWAYS_INLINE inline uint64_t
fnvhash64(uint64_t v)
{
    uint64_t h = OFFSET_BASIS;
    for (int i = 0; i < 8; i++) {
        h = (h ^ (v & 0xFF)) * PRIME;
        v >>= 8;
    }
    return (h >> 63) ? (uint64_t)0 - h : h;
}

static int
word_of(PyObject *obj, const char *what, uint64_t *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.80s", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = (uint64_t)PyLong_AsUnsignedLongLongMask(obj);
    return (*out == (uint64_t)-1 && PyErr_Occurred()) ? -1 : 0;
}

static int
ssize_of(PyObject *obj, const char *what, Py_ssize_t lo, Py_ssize_t *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.80s", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyLong_AsSsize_t(obj);
    if (*out == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (*out < lo) {
        PyErr_Format(PyExc_ValueError, "%s must be >= %zd, got %zd", what, lo, *out);
        return -1;
    }
    return 0;
}

static int
bytes_of(PyObject *obj, const char *what, const unsigned char **p, Py_ssize_t *n)
{
    if (!PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes, not %.80s", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *p = (const unsigned char *)PyBytes_AS_STRING(obj);
    *n = PyBytes_GET_SIZE(obj);
    return 0;
}

static int
nargs_is(const char *name, Py_ssize_t nargs, Py_ssize_t want)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, want, nargs);
        return -1;
    }
    return 0;
}

/* --- digests ---------------------------------------------------------------------- */

static PyObject *
k_fold_bytes(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t state;
    const unsigned char *p;
    Py_ssize_t n;
    if (nargs_is("fold_bytes", nargs, 2) < 0 || word_of(args[0], "state", &state) < 0 ||
        bytes_of(args[1], "data", &p, &n) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(fold_span(state, p, n));
}

static PyObject *
k_mix(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t state;
    if (nargs_is("mix", nargs, 1) < 0 || word_of(args[0], "state", &state) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(mix(state));
}

static PyObject *
k_digest(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t index, kind, state;
    const unsigned char *key, *value;
    Py_ssize_t nkey, nvalue;
    if (nargs_is("digest", nargs, 4) < 0 || word_of(args[0], "index", &index) < 0 ||
        word_of(args[1], "kind", &kind) < 0 || bytes_of(args[2], "key", &key, &nkey) < 0) {
        return NULL;
    }
    state = fold(fold(OFFSET_BASIS, index), kind);
    state = fold_span(state, key, nkey);
    if (args[3] == Py_None) {
        state = fold(state, NOTHING);
    }
    else {
        if (bytes_of(args[3], "payload", &value, &nvalue) < 0) {
            return NULL;
        }
        state = fold_span(state, value, nvalue);
    }
    return PyLong_FromUnsignedLongLong(mix(state));
}

/* --- keys and records ------------------------------------------------------------- */

static PyObject *
k_key_names(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq, *out = NULL;
    int hashed;
    Py_ssize_t pad, n;
    if (nargs_is("key_names", nargs, 3) < 0) {
        return NULL;
    }
    if ((hashed = PyObject_IsTrue(args[1])) < 0 || ssize_of(args[2], "zeropadding", 0, &pad) < 0) {
        return NULL;
    }
    if (pad > KEY_MAX - 8) {
        PyErr_Format(PyExc_ValueError, "zeropadding must be <= %d, got %zd", KEY_MAX - 8, pad);
        return NULL;
    }
    if ((seq = PySequence_Fast(args[0], "key_names() needs a sequence of key numbers")) == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    if ((out = PyList_New(n)) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        long long keynum;
        char digits[24], buf[KEY_MAX + 8];
        int nd;
        Py_ssize_t zeros, len;
        PyObject *name;
        if (!PyLong_Check(item)) {
            PyErr_Format(PyExc_TypeError, "a key number must be an int, not %.80s", Py_TYPE(item)->tp_name);
            Py_CLEAR(out);
            goto done;
        }
        keynum = PyLong_AsLongLong(item);
        if (keynum == -1 && PyErr_Occurred()) {
            Py_CLEAR(out);
            goto done;
        }
        if (hashed) {
            nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)fnvhash64((uint64_t)keynum));
        }
        else {
            nd = snprintf(digits, sizeof digits, "%lld", keynum);
        }
        zeros = pad > nd ? pad - nd : 0;
        memcpy(buf, "user", 4);
        memset(buf + 4, '0', (size_t)zeros);
        memcpy(buf + 4 + zeros, digits, (size_t)nd);
        len = 4 + zeros + nd;
        if ((name = PyBytes_FromStringAndSize(buf, len)) == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, name);
    }
done:
    Py_DECREF(seq);
    return out;
}

typedef struct {
    const unsigned char *pool;
    Py_ssize_t npool, fieldcount, fieldlength;
} Layout;

static int
layout_of(PyObject *const *args, Layout *lay)
{
    if (bytes_of(args[0], "pool", &lay->pool, &lay->npool) < 0 ||
        ssize_of(args[2], "fieldcount", 0, &lay->fieldcount) < 0 ||
        ssize_of(args[3], "fieldlength", 0, &lay->fieldlength) < 0) {
        return -1;
    }
    if (lay->fieldcount > 0xFFFF || lay->fieldlength > 0xFFFFFFFFLL) {
        PyErr_Format(PyExc_ValueError, "fieldcount %zd or fieldlength %zd past the encoding's u16/u32",
                     lay->fieldcount, lay->fieldlength);
        return -1;
    }
    if (lay->npool < (Py_ssize_t)POOL_WINDOWS + lay->fieldlength) {
        PyErr_Format(PyExc_ValueError, "a pool of %zd bytes is shorter than %u windows of %zd", lay->npool,
                     POOL_WINDOWS, lay->fieldlength);
        return -1;
    }
    return 0;
}

static Py_ALWAYS_INLINE inline const unsigned char *
window(const Layout *lay, uint64_t tag, uint64_t field)
{
    return lay->pool + fnvhash64(tag * GOLDEN + field) % POOL_WINDOWS;
}

static PyObject *
record_of(const Layout *lay, uint64_t tag)
{
    Py_ssize_t size = 2 + lay->fieldcount * (4 + lay->fieldlength);
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    unsigned char *p;
    uint32_t len = (uint32_t)lay->fieldlength;
    if (out == NULL) {
        return NULL;
    }
    p = (unsigned char *)PyBytes_AS_STRING(out);
    p[0] = (unsigned char)(lay->fieldcount & 0xFF);
    p[1] = (unsigned char)(lay->fieldcount >> 8);
    p += 2;
    for (Py_ssize_t f = 0; f < lay->fieldcount; f++) {
        p[0] = (unsigned char)len;
        p[1] = (unsigned char)(len >> 8);
        p[2] = (unsigned char)(len >> 16);
        p[3] = (unsigned char)(len >> 24);
        memcpy(p + 4, window(lay, tag, (uint64_t)f), (size_t)lay->fieldlength);
        p += 4 + lay->fieldlength;
    }
    return out;
}

static PyObject *
k_records(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    Layout lay;
    PyObject *seq, *out = NULL;
    Py_ssize_t n;
    if (nargs_is("records", nargs, 4) < 0 || layout_of(args, &lay) < 0) {
        return NULL;
    }
    if ((seq = PySequence_Fast(args[1], "records() needs a sequence of tags")) == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    if ((out = PyList_New(n)) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t tag;
        PyObject *record;
        if (word_of(PySequence_Fast_GET_ITEM(seq, i), "a tag", &tag) < 0 || (record = record_of(&lay, tag)) == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, record);
    }
done:
    Py_DECREF(seq);
    return out;
}

static PyObject *
k_value(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    Layout lay;
    uint64_t tag;
    Py_ssize_t field;
    if (nargs_is("value", nargs, 5) < 0 || layout_of(args, &lay) < 0 || word_of(args[1], "tag", &tag) < 0 ||
        ssize_of(args[4], "field", 0, &field) < 0) {
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)window(&lay, tag, (uint64_t)field), lay.fieldlength);
}

static uint32_t
u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static PyObject *
k_splice(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    const unsigned char *rec, *value, *p, *end, *at = NULL;
    Py_ssize_t nrec, nvalue, field, count, oldlen = 0;
    PyObject *out;
    unsigned char *q;
    if (nargs_is("splice", nargs, 3) < 0 || bytes_of(args[0], "record", &rec, &nrec) < 0 ||
        ssize_of(args[1], "field", 0, &field) < 0 || bytes_of(args[2], "value", &value, &nvalue) < 0) {
        return NULL;
    }
    if (nvalue > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "a field value longer than the encoding's u32");
        return NULL;
    }
    if (nrec < 2) {
        PyErr_Format(PyExc_ValueError, "a record value of %zd bytes is shorter than its header", nrec);
        return NULL;
    }
    count = rec[0] | (rec[1] << 8);
    p = rec + 2;
    end = rec + nrec;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t n;
        if (end - p < 4) {
            PyErr_Format(PyExc_ValueError, "record value truncated at field %zd of %zd", i, count);
            return NULL;
        }
        n = u32_at(p);
        if ((uint64_t)(end - p - 4) < n) {
            PyErr_Format(PyExc_ValueError, "record value truncated inside field %zd of %zd", i, count);
            return NULL;
        }
        if (i == field) {
            at = p;
            oldlen = (Py_ssize_t)n;
        }
        p += 4 + n;
    }
    if (p != end) {
        PyErr_Format(PyExc_ValueError, "record value has %zd bytes after its %zd fields", (Py_ssize_t)(end - p), count);
        return NULL;
    }
    if (at == NULL) {
        PyErr_Format(PyExc_ValueError, "field %zd is not in a record of %zd fields", field, count);
        return NULL;
    }
    if ((out = PyBytes_FromStringAndSize(NULL, nrec - oldlen + nvalue)) == NULL) {
        return NULL;
    }
    q = (unsigned char *)PyBytes_AS_STRING(out);
    memcpy(q, rec, (size_t)(at - rec));
    q += at - rec;
    q[0] = (unsigned char)nvalue;
    q[1] = (unsigned char)(nvalue >> 8);
    q[2] = (unsigned char)(nvalue >> 16);
    q[3] = (unsigned char)(nvalue >> 24);
    memcpy(q + 4, value, (size_t)nvalue);
    q += 4 + nvalue;
    memcpy(q, at + 4 + oldlen, (size_t)(end - (at + 4 + oldlen)));
    return out;
}

/* --- module ----------------------------------------------------------------------- */

static PyMethodDef kernels_methods[] = {
    {"fold_bytes", (PyCFunction)(void (*)(void))k_fold_bytes, METH_FASTCALL,
     "fold_bytes(state, data) -> int: the length, then each 8-byte little-endian word."},
    {"mix", (PyCFunction)(void (*)(void))k_mix, METH_FASTCALL, "mix(state) -> int: murmur3's fmix64."},
    {"digest", (PyCFunction)(void (*)(void))k_digest, METH_FASTCALL,
     "digest(index, kind, key, payload) -> int: an operation's 64-bit digest (payload None: nothing read)."},
    {"key_names", (PyCFunction)(void (*)(void))k_key_names, METH_FASTCALL,
     "key_names(keys, hashed, zeropadding) -> list[bytes]: YCSB's buildKeyName of each key number."},
    {"records", (PyCFunction)(void (*)(void))k_records, METH_FASTCALL,
     "records(pool, tags, fieldcount, fieldlength) -> list[bytes]: each tag's record, encoded."},
    {"value", (PyCFunction)(void (*)(void))k_value, METH_FASTCALL,
     "value(pool, tag, fieldcount, fieldlength, field) -> bytes: one field of tag's record."},
    {"splice", (PyCFunction)(void (*)(void))k_splice, METH_FASTCALL,
     "splice(record, field, value) -> bytes: the encoded record with one field replaced."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernels_module = {
    PyModuleDef_HEAD_INIT, "asyncbench.workloads.ycsb._kernels",
    "Compiled digests, key names and records of the YCSB workload; import workloads.ycsb.kernels instead.",
    -1, kernels_methods,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    PyObject *m = PyModule_Create(&kernels_module);
    if (m == NULL) {
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
