/*
 * workloads.profile_store._kernels: compiled twins of the hot pure-Python workload code.
 *
 * Every function here has a pure-Python definition it must match bit for bit:
 *   fold_ints / fold_str / fold_profiles  <- workloads/profile_store/checksum.py (py_fold_*)
 *   NetRandom                             <- workloads/dotnet_random.py (PyNetRandom)
 *   create_many                           <- workloads/profiles.py (py_create_many)
 *   encode_many                           <- [workloads.profile_store.profiles.encode(p) for p in profiles]
 *   email_many / created_at_many          <- workloads.profile_store.profiles.email_of / created_at_of per uid
 * tests/test_speedups.py checks that equality with hypothesis.  The checksum folds
 * run over millions of records per phase and the plan draws tens of millions of
 * random numbers, which is why these live in C.
 *
 * One file, C99, holds the GIL throughout.  Wrong types raise TypeError, malformed
 * values raise ValueError (invalid UTF-8 raises UnicodeDecodeError, a ValueError).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FNV_PRIME 1099511628211ULL
#define GOLDEN 0x9E3779B97F4A7C15ULL
#define BASE_MS 1672531200000LL
#define LAST_LOGIN_SPAN_MS (90ULL * 24 * 60 * 60 * 1000)
#define INT31_MAX 2147483647LL
#define MSEED 161803398LL
/* create_many keeps created_at = BASE + uid*1000 + 996 inside int64 for |uid| <= this. */
#define UID_LIMIT 9000000000000000LL
/* next()/next_int64() take the all-C path when both bounds lie strictly inside +-2^62,
 * so hi - lo and every sum they compute fit in int64. */
#define FAST_BOUND 4611686018427387904LL

#define FOLD(st, word) ((st) = ((st) ^ (uint64_t)(word)) * FNV_PRIME)

static const double INV_INT31_MAX = 1.0 / 2147483647.0;

static const char *const FIELD_NAMES[9] = {
    "user_id", "email", "country", "status", "created_at_ms", "last_login_ms", "reputation",
    "display_name", "bio",
};

/* ------------------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------------------- */

static int
ensure_ready(PyObject *s)
{
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_READY(s);
#else
    (void)s;
    return 0;
#endif
}

/* Vectorcall argument parsing with keyword support, so the C functions take exactly the
 * same positional/keyword arguments as their Python twins.  out[] gets borrowed refs. */
static int
parse_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
           const char *const *names, int n, PyObject **out)
{
    int i;
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d positional arguments but %zd were given", fname,
                     n, nargs);
        return -1;
    }
    for (i = 0; i < n; i++) {
        out[i] = i < nargs ? args[i] : NULL;
    }
    if (kwnames != NULL) {
        Py_ssize_t k, nkw = PyTuple_GET_SIZE(kwnames);
        for (k = 0; k < nkw; k++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, k);
            int j = 0;
            while (j < n && PyUnicode_CompareWithASCIIString(key, names[j]) != 0) {
                j++;
            }
            if (j == n) {
                PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname,
                             key);
                return -1;
            }
            if (out[j] != NULL) {
                PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname,
                             names[j]);
                return -1;
            }
            out[j] = args[nargs + k];
        }
    }
    for (i = 0; i < n; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)", fname,
                         names[i], i + 1);
            return -1;
        }
    }
    return 0;
}

/* The checksum state: any int, taken modulo 2^64 (exactly what the Python fold does). */
static int
get_state(PyObject *obj, uint64_t *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "checksum state must be an int, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = (uint64_t)PyLong_AsUnsignedLongLongMask(obj);
    return 0;
}

/* An int folds as its 64-bit two's complement (v & (2^64-1) in Python). */
static inline int
int_word(PyObject *o, uint64_t *out, const char *what, const char *name)
{
    unsigned long long v;
    if (!PyLong_Check(o) && !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s%s must be an int, not %.100s", what, name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsUnsignedLongLongMask(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* One word per UTF-16 code unit of text[start:stop]; astral code points as surrogate
 * pairs, lone surrogates (legal in a Python str) as themselves. */
static uint64_t
fold_units(uint64_t st, int kind, const void *data, Py_ssize_t start, Py_ssize_t stop)
{
    Py_ssize_t i;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = (const Py_UCS1 *)data;
        for (i = start; i < stop; i++) {
            FOLD(st, p[i]);
        }
    }
    else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *p = (const Py_UCS2 *)data;
        for (i = start; i < stop; i++) {
            FOLD(st, p[i]);
        }
    }
    else {
        const Py_UCS4 *p = (const Py_UCS4 *)data;
        for (i = start; i < stop; i++) {
            Py_UCS4 c = p[i];
            if (c >= 0x10000) {
                c -= 0x10000;
                FOLD(st, 0xD800 + (c >> 10));
                FOLD(st, 0xDC00 + (c & 0x3FF));
            }
            else {
                FOLD(st, c);
            }
        }
    }
    return st;
}

static int
fold_strobj(uint64_t *st, PyObject *o, const char *what, const char *name)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s%s must be a str, not %.100s", what, name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (ensure_ready(o) < 0) {
        return -1;
    }
    *st = fold_units(*st, PyUnicode_KIND(o), PyUnicode_DATA(o), 0, PyUnicode_GET_LENGTH(o));
    return 0;
}

/* ------------------------------------------------------------------------------------
 * Strict UTF-8 (what bytes.decode() accepts), with CPython's error positions/reasons
 * ---------------------------------------------------------------------------------- */

/* Decodes one code point from p[0:n] (n >= 1, p[0] >= 0x80).  Returns its length, or 0
 * with *bad = length of the maximal invalid subpart and *reason set. */
static Py_ssize_t
utf8_next(const unsigned char *p, Py_ssize_t n, Py_UCS4 *cp, Py_ssize_t *bad, const char **reason)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    int need, k;
    Py_UCS4 v;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        v = c & 0x1F;
    }
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        v = c & 0x0F;
        if (c == 0xE0) {
            lo = 0xA0; /* no overlongs */
        }
        else if (c == 0xED) {
            hi = 0x9F; /* no surrogates */
        }
    }
    else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        v = c & 0x07;
        if (c == 0xF0) {
            lo = 0x90;
        }
        else if (c == 0xF4) {
            hi = 0x8F; /* nothing above U+10FFFF */
        }
    }
    else {
        *bad = 1;
        *reason = "invalid start byte";
        return 0;
    }
    for (k = 1; k <= need; k++) {
        unsigned b;
        if (k >= n) {
            *bad = k;
            *reason = "unexpected end of data";
            return 0;
        }
        b = p[k];
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
            *bad = k;
            *reason = "invalid continuation byte";
            return 0;
        }
        v = (v << 6) | (b & 0x3F);
    }
    *cp = v;
    return need + 1;
}

static void
raise_decode_error(const unsigned char *p, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end,
                   const char *reason)
{
    PyObject *exc = PyUnicodeDecodeError_Create("utf-8", (const char *)p, n, start, end, reason);
    if (exc != NULL) {
        PyErr_SetObject(PyExc_UnicodeDecodeError, exc);
        Py_DECREF(exc);
    }
}

/* 0 when p[from:n] is valid UTF-8, else -1 with UnicodeDecodeError. */
static int
validate_utf8(const unsigned char *p, Py_ssize_t n, Py_ssize_t from)
{
    Py_ssize_t i = from;
    while (i < n) {
        Py_UCS4 cp;
        Py_ssize_t bad, k;
        const char *reason;
        while (i + 8 <= n) { /* ASCII fast path, 8 bytes at a time */
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ULL) {
                break;
            }
            i += 8;
        }
        if (i >= n) {
            break;
        }
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        k = utf8_next(p + i, n - i, &cp, &bad, &reason);
        if (k == 0) {
            raise_decode_error(p, n, i, i + bad, reason);
            return -1;
        }
        i += k;
    }
    return 0;
}

/* Folds the UTF-16 code units of the UTF-8 text p[i:stop] (p has n bytes in all). */
static int
fold_utf8(uint64_t *st, const unsigned char *p, Py_ssize_t n, Py_ssize_t i, Py_ssize_t stop)
{
    uint64_t s = *st;
    while (i < stop) {
        Py_UCS4 cp;
        Py_ssize_t bad, k;
        const char *reason;
        if (p[i] < 0x80) {
            FOLD(s, p[i]);
            i++;
            continue;
        }
        k = utf8_next(p + i, n - i, &cp, &bad, &reason);
        if (k == 0) {
            raise_decode_error(p, n, i, i + bad, reason);
            return -1;
        }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            FOLD(s, 0xD800 + (cp >> 10));
            FOLD(s, 0xDC00 + (cp & 0x3FF));
        }
        else {
            FOLD(s, cp);
        }
        i += k;
    }
    *st = s;
    return 0;
}

/* ------------------------------------------------------------------------------------
 * Checksum folds
 * ---------------------------------------------------------------------------------- */

/* The fast path for an int field: "[+-]?[0-9]{1,19}" (no wrap possible).  Anything else
 * (more digits, spaces, underscores, non-ASCII digits, garbage) returns -1 and goes to
 * int_field_slow, which is Python's own int(). */
static int
parse_dec_bytes(const unsigned char *p, Py_ssize_t n, uint64_t *out)
{
    Py_ssize_t i = 0;
    int neg = 0;
    uint64_t v = 0;
    if (n > 0 && (p[0] == '-' || p[0] == '+')) {
        neg = p[0] == '-';
        i = 1;
    }
    if (i >= n || n - i > 19) {
        return -1;
    }
    for (; i < n; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9) {
            return -1;
        }
        v = v * 10 + d;
    }
    *out = neg ? (uint64_t)0 - v : v;
    return 0;
}

static int
parse_dec_ucs(int kind, const void *data, Py_ssize_t start, Py_ssize_t stop, uint64_t *out)
{
    Py_ssize_t i = start;
    int neg = 0;
    uint64_t v = 0;
    if (i < stop) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == '-' || c == '+') {
            neg = c == '-';
            i++;
        }
    }
    if (i >= stop || stop - i > 19) {
        return -1;
    }
    for (; i < stop; i++) {
        Py_UCS4 d = PyUnicode_READ(kind, data, i) - '0';
        if (d > 9) {
            return -1;
        }
        v = v * 10 + d;
    }
    *out = neg ? (uint64_t)0 - v : v;
    return 0;
}

/* int(text) & (2^64-1), exactly as the Python fold computes it; consumes text.  A
 * ValueError names the field and shows the record. */
static int
int_field_slow(PyObject *text, int field, PyObject *record, uint64_t *out)
{
    PyObject *v, *value;
    if (text == NULL) {
        return -1;
    }
    v = PyLong_FromUnicodeObject(text, 10);
    Py_DECREF(text);
    if (v != NULL) {
        *out = (uint64_t)PyLong_AsUnsignedLongLongMask(v);
        Py_DECREF(v);
        return 0;
    }
    if (record != NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
#if PY_VERSION_HEX >= 0x030C0000
        value = PyErr_GetRaisedException();
        PyErr_Format(PyExc_ValueError, "encoded profile record %R: %s field: %S", record,
                     FIELD_NAMES[field], value);
        Py_XDECREF(value);
#else
        PyObject *type, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        PyErr_Format(PyExc_ValueError, "encoded profile record %R: %s field: %S", record,
                     FIELD_NAMES[field], value);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
#endif
    }
    return -1;
}

/* A malformed encoded record.  Python decodes the whole record before splitting it, so
 * invalid UTF-8 anywhere wins over a field problem. */
static int
too_few_fields_bytes(const unsigned char *p, Py_ssize_t n, int fields_found)
{
    PyObject *shown;
    if (validate_utf8(p, n, 0) < 0) {
        return -1;
    }
    shown = PyBytes_FromStringAndSize((const char *)p, n > 200 ? 200 : n);
    if (shown != NULL) {
        PyErr_Format(PyExc_ValueError, "encoded profile record has %d fields, needs at least 7: %R",
                     fields_found, shown);
        Py_DECREF(shown);
    }
    return -1;
}

/* The rare int field the fast path declines: decode it and let int() decide. */
static int
int_field_bytes(const unsigned char *p, Py_ssize_t n, Py_ssize_t start, Py_ssize_t stop, int field,
                uint64_t *out)
{
    PyObject *shown;
    int rc;
    if (validate_utf8(p, n, 0) < 0) {
        return -1;
    }
    shown = PyBytes_FromStringAndSize((const char *)p, n > 200 ? 200 : n);
    if (shown == NULL) {
        return -1;
    }
    rc = int_field_slow(PyUnicode_DecodeUTF8((const char *)p + start, stop - start, "strict"), field,
                        shown, out);
    Py_DECREF(shown);
    return rc;
}

/* b"uid|email|country|status|created|login|reputation|display|bio": folds fields 0..6
 * without building any Python object. */
static int
fold_encoded_bytes(uint64_t *st, const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t pos = 0;
    int f;
    for (f = 0; f < 7; f++) {
        const unsigned char *bar =
            pos < n ? (const unsigned char *)memchr(p + pos, '|', (size_t)(n - pos)) : NULL;
        Py_ssize_t stop;
        if (bar != NULL) {
            stop = bar - p;
        }
        else if (f == 6) {
            stop = n;
        }
        else {
            return too_few_fields_bytes(p, n, f + 1);
        }
        if (f >= 1 && f <= 3) {
            if (fold_utf8(st, p, n, pos, stop) < 0) {
                return -1;
            }
        }
        else {
            uint64_t v;
            if (parse_dec_bytes(p + pos, stop - pos, &v) < 0 &&
                int_field_bytes(p, n, pos, stop, f, &v) < 0) {
                return -1;
            }
            FOLD(*st, v);
        }
        pos = stop + 1;
    }
    /* display_name and bio are not folded, but Python decodes them too. */
    return pos < n ? validate_utf8(p, n, pos) : 0;
}

static Py_ssize_t
find_bar(int kind, const void *data, Py_ssize_t start, Py_ssize_t len)
{
    Py_ssize_t i;
    if (start >= len) {
        return -1;
    }
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = (const Py_UCS1 *)data;
        const Py_UCS1 *q = (const Py_UCS1 *)memchr(p + start, '|', (size_t)(len - start));
        return q == NULL ? -1 : q - p;
    }
    for (i = start; i < len; i++) {
        if (PyUnicode_READ(kind, data, i) == '|') {
            return i;
        }
    }
    return -1;
}

static int
too_few_fields_str(PyObject *s, int fields_found)
{
    PyObject *shown = PyUnicode_Substring(s, 0, 200);
    if (shown != NULL) {
        PyErr_Format(PyExc_ValueError, "encoded profile record has %d fields, needs at least 7: %R",
                     fields_found, shown);
        Py_DECREF(shown);
    }
    return -1;
}

static int
int_field_str(PyObject *s, Py_ssize_t start, Py_ssize_t stop, int field, uint64_t *out)
{
    PyObject *shown = PyUnicode_Substring(s, 0, 200);
    int rc;
    if (shown == NULL) {
        return -1;
    }
    rc = int_field_slow(PyUnicode_Substring(s, start, stop), field, shown, out);
    Py_DECREF(shown);
    return rc;
}

/* The same encoding held as a str. */
static int
fold_encoded_str(uint64_t *st, PyObject *s)
{
    Py_ssize_t len, pos = 0;
    int kind, f;
    const void *data;
    if (ensure_ready(s) < 0) {
        return -1;
    }
    len = PyUnicode_GET_LENGTH(s);
    kind = PyUnicode_KIND(s);
    data = PyUnicode_DATA(s);
    for (f = 0; f < 7; f++) {
        Py_ssize_t stop = find_bar(kind, data, pos, len);
        if (stop < 0) {
            if (f != 6) {
                return too_few_fields_str(s, f + 1);
            }
            stop = len;
        }
        if (f >= 1 && f <= 3) {
            *st = fold_units(*st, kind, data, pos, stop);
        }
        else {
            uint64_t v;
            if (parse_dec_ucs(kind, data, pos, stop, &v) < 0 &&
                int_field_str(s, pos, stop, f, &v) < 0) {
                return -1;
            }
            FOLD(*st, v);
        }
        pos = stop + 1;
    }
    return 0;
}

/* A plain tuple (or a NamedTuple, which keeps tuple's __getitem__). */
static inline int
is_plain_tuple(PyObject *o)
{
    return PyTuple_CheckExact(o) ||
           (PyTuple_Check(o) && Py_TYPE(o)->tp_as_mapping != NULL &&
            Py_TYPE(o)->tp_as_mapping->mp_subscript == PyTuple_Type.tp_as_mapping->mp_subscript);
}

/* row[i] as a new reference: direct for tuples and lists, __getitem__ otherwise
 * (sqlite3.Row, custom rows). */
static PyObject *
row_item(PyObject *row, Py_ssize_t i, int need)
{
    PyObject *idx, *item;
    if (is_plain_tuple(row)) {
        if (i < PyTuple_GET_SIZE(row)) {
            return Py_NewRef(PyTuple_GET_ITEM(row, i));
        }
    }
    else if (PyList_CheckExact(row)) {
        if (i < PyList_GET_SIZE(row)) {
            return Py_NewRef(PyList_GET_ITEM(row, i));
        }
    }
    else {
        idx = PyLong_FromSsize_t(i);
        if (idx == NULL) {
            return NULL;
        }
        item = PyObject_GetItem(row, idx);
        Py_DECREF(idx);
        return item;
    }
    PyErr_Format(PyExc_ValueError, "profile row (%.100s) has %zd fields, needs at least %d",
                 Py_TYPE(row)->tp_name, Py_SIZE(row), need);
    return NULL;
}

static int
fold_row(uint64_t *st, PyObject *row)
{
    uint64_t s = *st;
    int f;
    for (f = 0; f < 7; f++) {
        PyObject *item = row_item(row, f, 7);
        int rc;
        if (item == NULL) {
            return -1;
        }
        if (f >= 1 && f <= 3) {
            rc = fold_strobj(&s, item, "profile field ", FIELD_NAMES[f]);
        }
        else {
            uint64_t v = 0;
            rc = int_word(item, &v, "profile field ", FIELD_NAMES[f]);
            FOLD(s, v);
        }
        Py_DECREF(item);
        if (rc < 0) {
            return -1;
        }
    }
    *st = s;
    return 0;
}

static int
fold_record(uint64_t *st, PyObject *rec)
{
    if (PyBytes_Check(rec)) {
        return fold_encoded_bytes(st, (const unsigned char *)PyBytes_AS_STRING(rec),
                                  PyBytes_GET_SIZE(rec));
    }
    if (PyByteArray_Check(rec)) {
        return fold_encoded_bytes(st, (const unsigned char *)PyByteArray_AS_STRING(rec),
                                  PyByteArray_GET_SIZE(rec));
    }
    if (PyMemoryView_Check(rec)) {
        Py_buffer view;
        PyObject *copy;
        int rc;
        if (PyObject_GetBuffer(rec, &view, PyBUF_SIMPLE) == 0) {
            rc = fold_encoded_bytes(st, (const unsigned char *)view.buf, view.len);
            PyBuffer_Release(&view);
            return rc;
        }
        if (!PyErr_ExceptionMatches(PyExc_BufferError)) {
            return -1;
        }
        PyErr_Clear(); /* not contiguous: copy, as bytes(view) does */
        copy = PyBytes_FromObject(rec);
        if (copy == NULL) {
            return -1;
        }
        rc = fold_encoded_bytes(st, (const unsigned char *)PyBytes_AS_STRING(copy),
                                PyBytes_GET_SIZE(copy));
        Py_DECREF(copy);
        return rc;
    }
    if (PyUnicode_Check(rec)) {
        return fold_encoded_str(st, rec);
    }
    return fold_row(st, rec);
}

/* Runs fn over every item of an iterable (list/tuple without an iterator). Returns the
 * number of items, or -1. */
typedef int (*item_fn)(uint64_t *st, PyObject *item);

static Py_ssize_t
fold_iterable(uint64_t *st, PyObject *items, item_fn fn)
{
    Py_ssize_t count = 0;
    if (PyList_CheckExact(items) || PyTuple_CheckExact(items)) {
        Py_ssize_t i;
        /* the size is re-read each step: a list may change under a callback */
        for (i = 0; i < PySequence_Fast_GET_SIZE(items); i++) {
            PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(items, i));
            int rc = fn(st, item);
            Py_DECREF(item);
            if (rc < 0) {
                return -1;
            }
            count++;
        }
        return count;
    }
    else {
        PyObject *it = PyObject_GetIter(items), *item;
        if (it == NULL) {
            return -1;
        }
        while ((item = PyIter_Next(it)) != NULL) {
            int rc = fn(st, item);
            Py_DECREF(item);
            if (rc < 0) {
                Py_DECREF(it);
                return -1;
            }
            count++;
        }
        Py_DECREF(it);
        return PyErr_Occurred() ? -1 : count;
    }
}

static int
fold_int_item(uint64_t *st, PyObject *item)
{
    uint64_t v;
    if (int_word(item, &v, "fold_ints() value", "") < 0) {
        return -1;
    }
    FOLD(*st, v);
    return 0;
}

/* Returns the folded state; the state object itself when nothing was folded (like the
 * Python loop, which never touches it then). */
static PyObject *
folded_result(PyObject *state, uint64_t st, Py_ssize_t count)
{
    if (count < 0) {
        return NULL;
    }
    if (count == 0) {
        return Py_NewRef(state);
    }
    return PyLong_FromUnsignedLongLong(st);
}

PyDoc_STRVAR(fold_ints_doc,
             "fold_ints(state, values) -> int\n\n"
             "Folds each int as one 64-bit word (two's complement, mod 2^64).");

static PyObject *
sp_fold_ints(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"state", "values"};
    PyObject *a[2];
    uint64_t st;
    (void)mod;
    if (parse_args("fold_ints", args, nargs, kwnames, names, 2, a) < 0 || get_state(a[0], &st) < 0) {
        return NULL;
    }
    return folded_result(a[0], st, fold_iterable(&st, a[1], fold_int_item));
}

PyDoc_STRVAR(fold_str_doc,
             "fold_str(state, text) -> int\n\n"
             "Folds one word per UTF-16 code unit of text (astral characters as surrogate pairs).");

static PyObject *
sp_fold_str(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"state", "text"};
    PyObject *a[2];
    uint64_t st;
    (void)mod;
    if (parse_args("fold_str", args, nargs, kwnames, names, 2, a) < 0 || get_state(a[0], &st) < 0 ||
        fold_strobj(&st, a[1], "fold_str() text", "") < 0) {
        return NULL;
    }
    return folded_result(a[0], st, PyUnicode_GET_LENGTH(a[1]));
}

PyDoc_STRVAR(fold_profiles_doc,
             "fold_profiles(state, records) -> int\n\n"
             "Folds uid, email, country, status, created_at, last_login, reputation per record;\n"
             "a record is a profile row (tuple, list, NamedTuple, any row with __getitem__) or\n"
             "its stored '|'-joined encoding as bytes, bytearray, memoryview or str.");

static PyObject *
sp_fold_profiles(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"state", "records"};
    PyObject *a[2];
    uint64_t st;
    (void)mod;
    if (parse_args("fold_profiles", args, nargs, kwnames, names, 2, a) < 0 ||
        get_state(a[0], &st) < 0) {
        return NULL;
    }
    return folded_result(a[0], st, fold_iterable(&st, a[1], fold_record));
}

/* ------------------------------------------------------------------------------------
 * Profiles: generator and stored encoding
 * ---------------------------------------------------------------------------------- */

static PyObject *COUNTRIES[32];
static PyObject *STATUSES[4];
static const char *const COUNTRY_CODES[32] = {
    "US", "DE", "GB", "FR", "NL", "SE", "NO", "DK", "FI", "ES", "IT", "PT", "PL", "CZ", "TR", "JP",
    "KR", "SG", "IN", "BR", "CA", "AU", "MX", "AR", "ZA", "IL", "IE", "CH", "AT", "BE", "RO", "GR",
};
static const char *const STATUS_NAMES[4] = {"active", "suspended", "deleted", "pending"};
static const char *const TOPICS[5] = {
    "storage engines", "distributed systems", "analytics", "developer tools", "backend services",
};

static inline uint64_t
mix64(uint64_t v)
{
    v += GOLDEN;
    v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ULL;
    v = (v ^ (v >> 27)) * 0x94D049BB133111EBULL;
    return v ^ (v >> 31);
}

static PyObject *
ascii_str(const char *s, int n)
{
    PyObject *u;
    if (n < 0) {
        PyErr_SetString(PyExc_SystemError, "snprintf failed");
        return NULL;
    }
    u = PyUnicode_New(n, 127);
    if (u != NULL) {
        memcpy(PyUnicode_1BYTE_DATA(u), s, (size_t)n);
    }
    return u;
}

static PyObject *
make_profile(long long uid, uint64_t seed_word)
{
    char buf[192];
    uint64_t a = mix64((uint64_t)uid + seed_word);
    uint64_t b = mix64(a + GOLDEN);
    long long m97 = uid % 97;
    PyObject *items[9], *t;
    int i;
    if (m97 < 0) {
        m97 += 97; /* Python's modulo is never negative */
    }
    items[0] = PyLong_FromLongLong(uid);
    items[1] = ascii_str(buf, snprintf(buf, sizeof buf, "user%012lld@example%02lld.com", uid, m97));
    items[2] = Py_NewRef(COUNTRIES[a % 32]);
    items[3] = Py_NewRef(STATUSES[(a >> 8) % 4]);
    items[4] = PyLong_FromLongLong(BASE_MS + uid * 1000 + (long long)(a % 997));
    items[5] = PyLong_FromLongLong(BASE_MS + (long long)(b % LAST_LOGIN_SPAN_MS));
    items[6] = PyLong_FromLongLong((long long)(b % 1000000));
    items[7] = ascii_str(buf, snprintf(buf, sizeof buf, "User %012lld", uid));
    items[8] = ascii_str(buf, snprintf(buf, sizeof buf, "Profile %lld prefers %s and has segment %04u.",
                                       uid, TOPICS[a % 5], (unsigned)(b % 10000)));
    t = PyTuple_New(9);
    for (i = 0; i < 9; i++) {
        if (items[i] == NULL || t == NULL) {
            for (i = 0; i < 9; i++) {
                Py_XDECREF(items[i]);
            }
            Py_XDECREF(t);
            return NULL;
        }
    }
    for (i = 0; i < 9; i++) {
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    return t;
}

/* An int argument as long long; TypeError for non-ints, ValueError when out of range. */
static int
ll_arg(PyObject *o, long long *out, const char *fname, const char *name)
{
    int overflow = 0;
    long long v;
    if (!PyLong_Check(o) && !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be an int, not %.100s", fname, name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s() argument '%s' is outside the 64-bit range", fname,
                     name);
        return -1;
    }
    *out = v;
    return 0;
}

PyDoc_STRVAR(create_many_doc,
             "create_many(start, count, seed_word) -> list[tuple]\n\n"
             "Profiles start .. start+count-1 as 9-tuples, equal to\n"
             "workloads.profile_store.profiles.py_create_many(start, count, seed) where seed_word is the\n"
             "seed taken as unsigned 32-bit.  User ids must lie within +-9e15.");

static PyObject *
sp_create_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"start", "count", "seed_word"};
    PyObject *a[3], *list;
    long long start, count, seed;
    Py_ssize_t k;
    (void)mod;
    if (parse_args("create_many", args, nargs, kwnames, names, 3, a) < 0 ||
        ll_arg(a[0], &start, "create_many", "start") < 0 ||
        ll_arg(a[1], &count, "create_many", "count") < 0 ||
        ll_arg(a[2], &seed, "create_many", "seed_word") < 0) {
        return NULL;
    }
    if (seed < 0 || seed > 0xFFFFFFFFLL) {
        PyErr_Format(PyExc_ValueError,
                     "create_many() seed_word %lld is not an unsigned 32-bit value "
                     "(pass seed & 0xFFFFFFFF)",
                     seed);
        return NULL;
    }
    if (count < 0) {
        count = 0;
    }
    if (count > 0 && (start < -UID_LIMIT || start > UID_LIMIT || count - 1 > UID_LIMIT - start)) {
        PyErr_Format(PyExc_ValueError,
                     "create_many() user ids %lld .. %lld+%lld-1 are outside +-%lld", start, start,
                     count, UID_LIMIT);
        return NULL;
    }
    list = PyList_New((Py_ssize_t)count);
    if (list == NULL) {
        return NULL;
    }
    for (k = 0; k < (Py_ssize_t)count; k++) {
        PyObject *p = make_profile(start + (long long)k, (uint64_t)seed);
        if (p == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, p);
    }
    return list;
}

typedef PyObject *(*uid_fn)(long long uid, uint64_t seed_word);

/* [fn(uid) for uid in uids], each uid an int within +-limit (LLONG_MAX: any int64). */
static PyObject *
map_uids(const char *fname, PyObject *uids, uid_fn fn, uint64_t seed_word, long long limit)
{
    PyObject *seq = PySequence_Fast(uids, "uids must be iterable"), *out;
    Py_ssize_t i, n;
    if (seq == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i), *v;
        int overflow = 0;
        long long uid;
        if (!PyLong_Check(item) && !PyIndex_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s() user ids must be ints, not %.100s", fname,
                         Py_TYPE(item)->tp_name);
            goto fail;
        }
        uid = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (uid == -1 && PyErr_Occurred()) {
            goto fail;
        }
        if (overflow || (limit != LLONG_MAX && (uid < -limit || uid > limit))) {
            PyErr_Format(PyExc_ValueError, "%s() user id %R is outside %s", fname, item,
                         limit == LLONG_MAX ? "the 64-bit range" : "+-9e15");
            goto fail;
        }
        v = fn(uid, seed_word);
        if (v == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_DECREF(seq);
    Py_DECREF(out);
    return NULL;
}

static PyObject *
email_of(long long uid, uint64_t unused)
{
    char buf[64];
    long long m97 = uid % 97;
    (void)unused;
    if (m97 < 0) {
        m97 += 97;
    }
    return ascii_str(buf, snprintf(buf, sizeof buf, "user%012lld@example%02lld.com", uid, m97));
}

static PyObject *
created_at_of(long long uid, uint64_t seed_word)
{
    return PyLong_FromLongLong(BASE_MS + uid * 1000 +
                               (long long)(mix64((uint64_t)uid + seed_word) % 997));
}

PyDoc_STRVAR(email_many_doc,
             "email_many(uids) -> list[str]\n\n"
             "[workloads.profile_store.profiles.email_of(u) for u in uids] (the plan's email lookups).");

static PyObject *
sp_email_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"uids"};
    PyObject *a[1];
    (void)mod;
    if (parse_args("email_many", args, nargs, kwnames, names, 1, a) < 0) {
        return NULL;
    }
    return map_uids("email_many", a[0], email_of, 0, LLONG_MAX);
}

PyDoc_STRVAR(created_at_many_doc,
             "created_at_many(uids, seed_word) -> list[int]\n\n"
             "[workloads.profile_store.profiles.created_at_of(u, seed) for u in uids] with seed_word the seed\n"
             "as unsigned 32-bit (the plan's created-at range bounds).  |uid| <= 9e15.");

static PyObject *
sp_created_at_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"uids", "seed_word"};
    PyObject *a[2];
    long long seed;
    (void)mod;
    if (parse_args("created_at_many", args, nargs, kwnames, names, 2, a) < 0 ||
        ll_arg(a[1], &seed, "created_at_many", "seed_word") < 0) {
        return NULL;
    }
    if (seed < 0 || seed > 0xFFFFFFFFLL) {
        PyErr_Format(PyExc_ValueError,
                     "created_at_many() seed_word %lld is not an unsigned 32-bit value "
                     "(pass seed & 0xFFFFFFFF)",
                     seed);
        return NULL;
    }
    return map_uids("created_at_many", a[0], created_at_of, (uint64_t)seed, UID_LIMIT);
}

/* Decimal digits of v into buf (>= 21 bytes); returns the length. */
static Py_ssize_t
format_ll(char *buf, long long v)
{
    char tmp[24];
    int n = 0;
    Py_ssize_t len = 0;
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + m % 10);
        m /= 10;
    } while (m != 0);
    if (v < 0) {
        buf[len++] = '-';
    }
    while (n > 0) {
        buf[len++] = tmp[--n];
    }
    return len;
}

/* The UTF-8 text of format(item, '') (what an f-string field does).  The bytes live in
 * scratch or in *hold (a new reference the caller releases). */
static int
field_text(PyObject *item, char *scratch, const char **s, Py_ssize_t *n, PyObject **hold)
{
    PyObject *str, *b;
    if (PyLong_CheckExact(item)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (!overflow) {
            *n = format_ll(scratch, v);
            *s = scratch;
            return 0;
        }
    }
    if (PyUnicode_CheckExact(item)) {
        str = Py_NewRef(item);
    }
    else {
        str = PyObject_Format(item, NULL);
        if (str == NULL) {
            return -1;
        }
    }
    if (ensure_ready(str) < 0) {
        Py_DECREF(str);
        return -1;
    }
    if (PyUnicode_IS_ASCII(str)) {
        *s = (const char *)PyUnicode_DATA(str);
        *n = PyUnicode_GET_LENGTH(str);
        *hold = str;
        return 0;
    }
    b = PyUnicode_AsUTF8String(str); /* strict: lone surrogates raise, like str.encode() */
    Py_DECREF(str);
    if (b == NULL) {
        return -1;
    }
    *s = PyBytes_AS_STRING(b);
    *n = PyBytes_GET_SIZE(b);
    *hold = b;
    return 0;
}

static PyObject *
encode_one(PyObject *p)
{
    char scratch[9][24];
    const char *s[9];
    Py_ssize_t n[9], total = 8;
    PyObject *hold[9] = {NULL}, *out = NULL;
    int i;
    for (i = 0; i < 9; i++) {
        PyObject *item = row_item(p, i, 9);
        int rc;
        if (item == NULL) {
            goto done;
        }
        rc = field_text(item, scratch[i], &s[i], &n[i], &hold[i]);
        Py_DECREF(item); /* a str item's data stays alive through hold[i] */
        if (rc < 0) {
            goto done;
        }
        total += n[i];
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (out != NULL) {
        char *w = PyBytes_AS_STRING(out);
        for (i = 0; i < 9; i++) {
            if (i > 0) {
                *w++ = '|';
            }
            memcpy(w, s[i], (size_t)n[i]);
            w += n[i];
        }
    }
done:
    for (i = 0; i < 9; i++) {
        Py_XDECREF(hold[i]);
    }
    return out;
}

PyDoc_STRVAR(encode_many_doc,
             "encode_many(profiles) -> list[bytes]\n\n"
             "[workloads.profile_store.profiles.encode(p) for p in profiles]: the nine fields joined with '|'.");

static PyObject *
sp_encode_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"profiles"};
    PyObject *a[1], *it, *p, *out;
    (void)mod;
    if (parse_args("encode_many", args, nargs, kwnames, names, 1, a) < 0) {
        return NULL;
    }
    it = PyObject_GetIter(a[0]);
    if (it == NULL) {
        return NULL;
    }
    out = PyList_New(0);
    if (out == NULL) {
        Py_DECREF(it);
        return NULL;
    }
    while ((p = PyIter_Next(it)) != NULL) {
        PyObject *b = encode_one(p);
        int rc = b == NULL ? -1 : PyList_Append(out, b);
        Py_DECREF(p);
        Py_XDECREF(b);
        if (rc < 0) {
            goto fail;
        }
    }
    if (PyErr_Occurred()) {
        goto fail;
    }
    Py_DECREF(it);
    return out;
fail:
    Py_DECREF(it);
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------------
 * NetRandom: .NET's legacy seeded System.Random (Net5CompatSeedImpl)
 * ---------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    int inext;
    int inextp;
    int64_t s[56]; /* int64 so every intermediate is exact, like the Python twin */
} NetRandomObject;

static PyTypeObject NetRandom_Type;

static void
nr_seed(NetRandomObject *r, long long seed)
{
    int64_t *s = r->s, subtraction, mj, mk;
    int i, k, ii = 0;
    memset(r->s, 0, sizeof r->s);
    subtraction = seed == -2147483648LL ? INT31_MAX : (seed < 0 ? -seed : seed);
    mj = MSEED - subtraction;
    s[55] = mj;
    mk = 1;
    for (k = 1; k < 55; k++) {
        ii += 21;
        if (ii >= 55) {
            ii -= 55;
        }
        s[ii] = mk;
        mk = mj - mk;
        if (mk < 0) {
            mk += INT31_MAX;
        }
        mj = s[ii];
    }
    for (k = 1; k < 5; k++) {
        for (i = 1; i < 56; i++) {
            int n = i + 30;
            int64_t v;
            if (n >= 55) {
                n -= 55;
            }
            /* C# int32 arithmetic: the first round can overflow, so wrap to 32 bits */
            v = (int64_t)((uint64_t)(s[i] - s[1 + n] + 2147483648LL) & 0xFFFFFFFFULL) -
                2147483648LL;
            if (v < 0) {
                v += INT31_MAX;
            }
            s[i] = v;
        }
    }
    r->inext = 0;
    r->inextp = 21;
}

static inline int64_t
nr_internal_sample(NetRandomObject *r)
{
    int i = r->inext + 1, j = r->inextp + 1;
    int64_t v;
    if (i >= 56) {
        i = 1;
    }
    if (j >= 56) {
        j = 1;
    }
    v = r->s[i] - r->s[j];
    if (v == INT31_MAX) {
        v -= 1;
    }
    if (v < 0) {
        v += INT31_MAX;
    }
    r->s[i] = v;
    r->inext = i;
    r->inextp = j;
    return v;
}

static inline double
nr_sample(NetRandomObject *r)
{
    return (double)nr_internal_sample(r) * INV_INT31_MAX;
}

/* Next(2^22) | Next(2^22) << 22 | Next(2^20) << 44; samples are >= 0, so the
 * truncating casts equal Python's int(). */
static inline uint64_t
nr_uint64(NetRandomObject *r)
{
    uint64_t a = (uint64_t)(int64_t)(nr_sample(r) * 4194304.0);
    uint64_t b = (uint64_t)(int64_t)(nr_sample(r) * 4194304.0);
    uint64_t c = (uint64_t)(int64_t)(nr_sample(r) * 1048576.0);
    return a | (b << 22) | (c << 44);
}

static PyObject *
NetRandom_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"seed", NULL};
    PyObject *seedobj, *idx;
    NetRandomObject *self;
    long long seed;
    int overflow = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:NetRandom", kwlist, &seedobj)) {
        return NULL;
    }
    if (!PyLong_Check(seedobj) && !PyIndex_Check(seedobj)) {
        PyErr_Format(PyExc_TypeError, "NetRandom() seed must be an int, not %.100s",
                     Py_TYPE(seedobj)->tp_name);
        return NULL;
    }
    idx = PyNumber_Index(seedobj);
    if (idx == NULL) {
        return NULL;
    }
    seed = PyLong_AsLongLongAndOverflow(idx, &overflow);
    if (overflow || seed < -2147483648LL || seed > 2147483647LL) {
        PyErr_Format(PyExc_ValueError, "seed %S is outside the signed 32-bit range", idx);
        Py_DECREF(idx);
        return NULL;
    }
    Py_DECREF(idx);
    self = (NetRandomObject *)type->tp_alloc(type, 0);
    if (self != NULL) {
        nr_seed(self, seed);
    }
    return (PyObject *)self;
}

/* An exact int strictly inside +-2^62 (see FAST_BOUND). */
static inline int
small_int(PyObject *o, long long *out)
{
    int overflow = 0;
    long long v;
    if (!PyLong_CheckExact(o)) {
        return 0;
    }
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || v <= -FAST_BOUND || v >= FAST_BOUND) {
        return 0;
    }
    *out = v;
    return 1;
}

static PyObject *
NetRandom_sample(NetRandomObject *self, PyObject *unused)
{
    (void)unused;
    return PyFloat_FromDouble(nr_sample(self));
}

static PyObject *
NetRandom_next_uint64(NetRandomObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(nr_uint64(self));
}

static PyObject *
NetRandom_next(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"lo", "hi"};
    PyObject *a[2], *range, *f, *prod, *t, *res;
    long long lo, hi;
    double sample;
    if (parse_args("next", args, nargs, kwnames, names, 2, a) < 0) {
        return NULL;
    }
    sample = nr_sample(self); /* drawn first, as in Python */
    if (small_int(a[0], &lo) && small_int(a[1], &hi)) {
        return PyLong_FromLongLong((long long)(sample * (double)(hi - lo)) + lo);
    }
    /* any other operands: exactly Python's int(sample * (hi - lo)) + lo */
    range = PyNumber_Subtract(a[1], a[0]);
    if (range == NULL) {
        return NULL;
    }
    f = PyFloat_FromDouble(sample);
    prod = f == NULL ? NULL : PyNumber_Multiply(f, range);
    Py_XDECREF(f);
    Py_DECREF(range);
    if (prod == NULL) {
        return NULL;
    }
    t = PyNumber_Long(prod);
    Py_DECREF(prod);
    if (t == NULL) {
        return NULL;
    }
    res = PyNumber_Add(t, a[0]);
    Py_DECREF(t);
    return res;
}

static int
bit_length64(uint64_t v)
{
    int n = 0;
    while (v != 0) {
        n++;
        v >>= 1;
    }
    return n;
}

/* NextInt64(lo, hi) with both bounds small ints. */
typedef struct {
    int trivial; /* hi - lo <= 1: the answer is lo, nothing is drawn */
    long long lo;
    uint64_t rm1; /* hi - lo - 1 */
    int shift;
} Int64Range;

static void
int64_range(long long lo, long long hi, Int64Range *r)
{
    r->lo = lo;
    r->trivial = hi - lo <= 1;
    r->rm1 = r->trivial ? 0 : (uint64_t)(hi - lo - 1);
    r->shift = r->trivial ? 0 : 64 - bit_length64(r->rm1);
}

static inline long long
int64_draw(NetRandomObject *self, const Int64Range *r)
{
    uint64_t x;
    do {
        x = nr_uint64(self) >> r->shift;
    } while (x > r->rm1);
    return r->lo + (long long)x; /* x < hi - lo <= 2^63: no overflow */
}

/* Any other operands: the Python algorithm on Python objects, errors included (a range
 * wider than 2^64 draws once, then fails on the negative shift, like the twin). */
static PyObject *
int64_generic(NetRandomObject *self, PyObject *lo, PyObject *hi)
{
    PyObject *r, *one = NULL, *rm1 = NULL, *bl = NULL, *shift = NULL, *res = NULL, *c64 = NULL;
    int le;
    r = PyNumber_Subtract(hi, lo);
    if (r == NULL) {
        return NULL;
    }
    one = PyLong_FromLong(1);
    if (one == NULL) {
        goto done;
    }
    le = PyObject_RichCompareBool(r, one, Py_LE);
    if (le < 0) {
        goto done;
    }
    if (le) {
        res = Py_NewRef(lo);
        goto done;
    }
    rm1 = PyNumber_Subtract(r, one);
    bl = rm1 == NULL ? NULL : PyObject_CallMethod(rm1, "bit_length", NULL);
    c64 = bl == NULL ? NULL : PyLong_FromLong(64);
    shift = c64 == NULL ? NULL : PyNumber_Subtract(c64, bl);
    if (shift == NULL) {
        goto done;
    }
    for (;;) {
        PyObject *u = PyLong_FromUnsignedLongLong(nr_uint64(self)), *x;
        int lt;
        if (u == NULL) {
            goto done;
        }
        x = PyNumber_Rshift(u, shift);
        Py_DECREF(u);
        if (x == NULL) {
            goto done;
        }
        lt = PyObject_RichCompareBool(x, r, Py_LT);
        if (lt != 0) {
            res = lt < 0 ? NULL : PyNumber_Add(x, lo);
            Py_DECREF(x);
            goto done;
        }
        Py_DECREF(x);
    }
done:
    Py_DECREF(r);
    Py_XDECREF(one);
    Py_XDECREF(rm1);
    Py_XDECREF(bl);
    Py_XDECREF(c64);
    Py_XDECREF(shift);
    return res;
}

static PyObject *
NetRandom_next_int64(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames)
{
    static const char *const names[] = {"lo", "hi"};
    PyObject *a[2];
    long long lo, hi;
    Int64Range r = {0, 0, 0, 0};
    if (parse_args("next_int64", args, nargs, kwnames, names, 2, a) < 0) {
        return NULL;
    }
    if (small_int(a[0], &lo) && small_int(a[1], &hi)) {
        int64_range(lo, hi, &r);
        if (r.trivial) {
            return Py_NewRef(a[0]);
        }
        return PyLong_FromLongLong(int64_draw(self, &r));
    }
    return int64_generic(self, a[0], a[1]);
}

static PyObject *
NetRandom_int64_list(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames)
{
    static const char *const names[] = {"count", "lo", "hi"};
    PyObject *a[3], *list, *idx;
    Py_ssize_t count, k;
    long long lo, hi;
    int fast;
    Int64Range r = {0, 0, 0, 0};
    if (parse_args("int64_list", args, nargs, kwnames, names, 3, a) < 0) {
        return NULL;
    }
    idx = PyNumber_Index(a[0]); /* range(count) semantics: an int, negative means none */
    if (idx == NULL) {
        return NULL;
    }
    count = PyLong_AsSsize_t(idx);
    Py_DECREF(idx);
    if (count == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (count < 0) {
        count = 0;
    }
    list = PyList_New(count);
    if (list == NULL) {
        return NULL;
    }
    fast = small_int(a[1], &lo) && small_int(a[2], &hi);
    if (fast) {
        int64_range(lo, hi, &r);
    }
    for (k = 0; k < count; k++) {
        PyObject *v;
        if (fast) {
            v = r.trivial ? Py_NewRef(a[1]) : PyLong_FromLongLong(int64_draw(self, &r));
        }
        else {
            v = int64_generic(self, a[1], a[2]);
        }
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, v);
    }
    return list;
}

static PyMethodDef NetRandom_methods[] = {
    {"sample", (PyCFunction)NetRandom_sample, METH_NOARGS,
     "sample() -> float: InternalSample() * (1.0 / (2^31-1))."},
    {"next", (PyCFunction)(void (*)(void))NetRandom_next, METH_FASTCALL | METH_KEYWORDS,
     "next(lo, hi) -> int: Next(lo, hi), an int in [lo, hi)."},
    {"next_uint64", (PyCFunction)NetRandom_next_uint64, METH_NOARGS,
     "next_uint64() -> int: Next(2^22) | Next(2^22) << 22 | Next(2^20) << 44."},
    {"next_int64", (PyCFunction)(void (*)(void))NetRandom_next_int64,
     METH_FASTCALL | METH_KEYWORDS,
     "next_int64(lo, hi) -> int: NextInt64(lo, hi) by rejection over the top bits."},
    {"int64_list", (PyCFunction)(void (*)(void))NetRandom_int64_list,
     METH_FASTCALL | METH_KEYWORDS, "int64_list(count, lo, hi) -> list[int]: count NextInt64 draws."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NetRandom_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "workloads.profile_store._kernels.NetRandom",
    .tp_basicsize = sizeof(NetRandomObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "NetRandom(seed)\n--\n\n"
              "Knuth's subtractive generator exactly as .NET's legacy seeded System.Random\n"
              "seeds and samples it; bit-identical to workloads.profile_store.dotnet_random.PyNetRandom.",
    .tp_new = NetRandom_new,
    .tp_methods = NetRandom_methods,
};

/* ------------------------------------------------------------------------------------
 * Module
 * ---------------------------------------------------------------------------------- */

static PyMethodDef speedups_methods[] = {
    {"fold_ints", (PyCFunction)(void (*)(void))sp_fold_ints, METH_FASTCALL | METH_KEYWORDS,
     fold_ints_doc},
    {"fold_str", (PyCFunction)(void (*)(void))sp_fold_str, METH_FASTCALL | METH_KEYWORDS,
     fold_str_doc},
    {"fold_profiles", (PyCFunction)(void (*)(void))sp_fold_profiles, METH_FASTCALL | METH_KEYWORDS,
     fold_profiles_doc},
    {"create_many", (PyCFunction)(void (*)(void))sp_create_many, METH_FASTCALL | METH_KEYWORDS,
     create_many_doc},
    {"encode_many", (PyCFunction)(void (*)(void))sp_encode_many, METH_FASTCALL | METH_KEYWORDS,
     encode_many_doc},
    {"email_many", (PyCFunction)(void (*)(void))sp_email_many, METH_FASTCALL | METH_KEYWORDS,
     email_many_doc},
    {"created_at_many", (PyCFunction)(void (*)(void))sp_created_at_many,
     METH_FASTCALL | METH_KEYWORDS, created_at_many_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    "workloads.profile_store._kernels",
    "Compiled twins of the checksum fold, the .NET-compatible RNG and the profile generator.",
    -1,
    speedups_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    PyObject *m;
    int i;
    for (i = 0; i < 32; i++) {
        if (COUNTRIES[i] == NULL && (COUNTRIES[i] = PyUnicode_InternFromString(COUNTRY_CODES[i])) == NULL) {
            return NULL;
        }
    }
    for (i = 0; i < 4; i++) {
        if (STATUSES[i] == NULL && (STATUSES[i] = PyUnicode_InternFromString(STATUS_NAMES[i])) == NULL) {
            return NULL;
        }
    }
    if (PyType_Ready(&NetRandom_Type) < 0) {
        return NULL;
    }
    m = PyModule_Create(&speedups_module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&NetRandom_Type);
    if (PyModule_AddObject(m, "NetRandom", (PyObject *)&NetRandom_Type) < 0) {
        Py_DECREF(&NetRandom_Type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
