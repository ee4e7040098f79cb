/*
 * workloads.profile_store._kernels: compiled twins of the workload's hottest Python code.
 *
 * Import it through workloads.profile_store.kernels, never directly: that module hands the
 * workload's constants to configure() (they are defined once, in profiles.py and
 * checksum.py) and falls back to the pure-Python definitions when this is not built.
 * Each function equals its Python definition bit for bit (tests/test_kernels.py); only
 * those that save well over 1.5x on a hot path are here (benchmarks/bench_checksum.py):
 *
 *   fold_ints, fold_profiles      checksum.py py_fold_ints, py_fold_profiles      7-30x, ~100x
 *   create_many                   profiles.py py_create_many                      ~6x
 *   email_many, created_at_many   profiles.py py_email_many, py_created_at_many   ~3x, ~15x
 *   NetRandom: next, int64_list   dotnet_random.py PyNetRandom (bounds in +-2^62)  ~9x, ~27x
 *     and skip_int64, int64_filter, count_mod, skip, copy, state: the lazy plan streams'
 *     skip passes, worker filters and stream-start snapshots (streams.py)
 *
 * C99, positional arguments only, the GIL held throughout.  Wrong types raise TypeError,
 * malformed values ValueError (invalid UTF-8 is CPython's own UnicodeDecodeError).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Implementation limits, not workload constants: |uid| <= UID_LIMIT keeps every
 * created_at inside int64; RNG bounds within +-RNG_BOUND keep hi - lo inside int64. */
#define UID_LIMIT 9000000000000000LL
#define RNG_BOUND 4611686018427387904LL /* 2^62 */
#define TOPIC_MAX 128

/* --- workload constants, set by configure() --------------------------------------- */

static PyObject *config; /* the tuples below stay alive through this reference */
static PyObject *COUNTRIES[32], *STATUSES[4];
static const char *TOPICS[5];
static uint64_t PRIME, GOLDEN, LAST_LOGIN_SPAN_MS;
static long long BASE_MS;

#if PY_VERSION_HEX < 0x030C0000
#define NOT_READY(s) (PyUnicode_READY(s) < 0)
#else
#define NOT_READY(s) 0
#endif

#define FOLD(st, word) ((st) = ((st) ^ (uint64_t)(word)) * PRIME)

static int
ready(void)
{
    if (config == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_kernels.configure() was not called: import workloads.profile_store.kernels");
        return 0;
    }
    return 1;
}

static int
check_nargs(const char *fname, Py_ssize_t nargs, Py_ssize_t want)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments (%zd given)", fname, want,
                     nargs);
        return 0;
    }
    return 1;
}

/* A tuple of exactly n str (ASCII when ascii is set) from any sequence; new reference. */
static PyObject *
str_tuple(PyObject *seq, Py_ssize_t n, int ascii, const char *what)
{
    PyObject *t = PySequence_Tuple(seq);
    Py_ssize_t i;
    if (t == NULL) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(t) != n) {
        PyErr_Format(PyExc_ValueError, "configure(): %s needs %zd entries, not %zd", what, n,
                     PyTuple_GET_SIZE(t));
        goto fail;
    }
    for (i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(t, i);
        int ok = PyUnicode_CheckExact(s) && !NOT_READY(s);
        if (!ok || (ascii && (!PyUnicode_IS_ASCII(s) || PyUnicode_GET_LENGTH(s) > TOPIC_MAX))) {
            PyErr_Format(PyExc_ValueError, "configure(): %s[%zd] must be a str%s", what, i,
                         ascii ? " of at most 128 ASCII characters" : "");
            goto fail;
        }
    }
    return t;
fail:
    Py_DECREF(t);
    return NULL;
}

PyDoc_STRVAR(configure_doc,
             "configure(countries, statuses, topics, base_ms, last_login_span_ms, golden, prime)\n\n"
             "Hands the workload's constants to the kernels (kernels.py does this at import).");

static PyObject *
k_configure(PyObject *mod, PyObject *args)
{
    PyObject *countries, *statuses, *topics, *c = NULL, *s = NULL, *t = NULL, *old;
    long long base, span;
    unsigned long long golden, prime;
    int i;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OOOLLKK:configure", &countries, &statuses, &topics, &base, &span,
                          &golden, &prime)) {
        return NULL;
    }
    if (base < 0 || base > 100000000000000000LL || span < 1 || span > 100000000000000000LL) {
        PyErr_SetString(PyExc_ValueError,
                        "configure(): need 0 <= base_ms <= 1e17, 1 <= last_login_span_ms <= 1e17");
        return NULL;
    }
    if ((c = str_tuple(countries, 32, 0, "countries")) == NULL ||
        (s = str_tuple(statuses, 4, 0, "statuses")) == NULL ||
        (t = str_tuple(topics, 5, 1, "topics")) == NULL) {
        Py_XDECREF(c);
        Py_XDECREF(s);
        return NULL;
    }
    old = config;
    config = Py_BuildValue("(NNN)", c, s, t);
    if (config == NULL) {
        config = old;
        return NULL;
    }
    for (i = 0; i < 32; i++) {
        COUNTRIES[i] = PyTuple_GET_ITEM(c, i);
    }
    for (i = 0; i < 4; i++) {
        STATUSES[i] = PyTuple_GET_ITEM(s, i);
    }
    for (i = 0; i < 5; i++) {
        TOPICS[i] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, i)); /* ASCII: its own data, cannot fail */
    }
    BASE_MS = base;
    LAST_LOGIN_SPAN_MS = (uint64_t)span;
    GOLDEN = golden;
    PRIME = prime;
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

/* --- checksum folds --------------------------------------------------------------- */

/* An int folds as its 64-bit two's complement (v & (2^64-1) in Python). */
static int
int_word(PyObject *o, uint64_t *out)
{
    if (!PyLong_Check(o) && !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "checksum: expected an int, not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = (uint64_t)PyLong_AsUnsignedLongLongMask(o);
    return *out == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

/* One word per UTF-16 code unit of text[start:stop]: astral code points as surrogate
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
                FOLD(st, 0xD800 + ((c - 0x10000) >> 10));
                FOLD(st, 0xDC00 + ((c - 0x10000) & 0x3FF));
            }
            else {
                FOLD(st, c);
            }
        }
    }
    return st;
}

/* int(text[start:stop]) & (2^64-1): plain "[+-]?[0-9]{1,19}" here, anything else (spaces,
 * underscores, other digits, longer numbers, garbage) by Python's own int(). */
static Py_ALWAYS_INLINE inline int
int_field(int kind, const void *data, Py_ssize_t start, Py_ssize_t stop, uint64_t *out)
{
    Py_ssize_t i = start;
    uint64_t v = 0;
    int neg = 0;
    PyObject *text, *num;
    if (i < stop && (PyUnicode_READ(kind, data, i) == '-' || PyUnicode_READ(kind, data, i) == '+')) {
        neg = PyUnicode_READ(kind, data, i) == '-';
        i++;
    }
    if (i < stop && stop - i <= 19) {
        for (; i < stop; i++) {
            Py_UCS4 d = PyUnicode_READ(kind, data, i) - '0';
            if (d > 9) {
                break;
            }
            v = v * 10 + d;
        }
        if (i == stop) {
            *out = neg ? (uint64_t)0 - v : v;
            return 0;
        }
    }
    text = PyUnicode_FromKindAndData(kind, (const char *)data + start * kind, stop - start);
    num = text == NULL ? NULL : PyLong_FromUnicodeObject(text, 10);
    Py_XDECREF(text);
    if (num == NULL) {
        return -1;
    }
    *out = (uint64_t)PyLong_AsUnsignedLongLongMask(num);
    Py_DECREF(num);
    return 0;
}

/* "uid|email|country|status|created|login|reputation|display|bio" as str data: folds
 * fields 0..6 without building objects.  Inlined into fold_encoded, once per kind. */
static Py_ALWAYS_INLINE inline int
fold_encoded_kind(uint64_t *st, int kind, const void *data, Py_ssize_t len)
{
    Py_ssize_t pos = 0;
    int f;
    for (f = 0; f < 7; f++) {
        Py_ssize_t stop = pos;
        if (kind == PyUnicode_1BYTE_KIND) {
            const char *bar = memchr((const char *)data + pos, '|', (size_t)(len - pos));
            stop = bar == NULL ? len : bar - (const char *)data;
        }
        else {
            while (stop < len && PyUnicode_READ(kind, data, stop) != '|') {
                stop++;
            }
        }
        if (stop == len && f < 6) {
            PyErr_Format(PyExc_ValueError, "encoded profile record has %d fields, needs at least 7",
                         f + 1);
            return -1;
        }
        if (f >= 1 && f <= 3) {
            *st = fold_units(*st, kind, data, pos, stop);
        }
        else {
            uint64_t v;
            if (int_field(kind, data, pos, stop, &v) < 0) {
                return -1;
            }
            FOLD(*st, v);
        }
        pos = stop + 1;
    }
    return 0;
}

static int
fold_encoded(uint64_t *st, int kind, const void *data, Py_ssize_t len)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        return fold_encoded_kind(st, PyUnicode_1BYTE_KIND, data, len);
    }
    return fold_encoded_kind(st, kind, data, len);
}

/* Encoded bytes: ASCII (every generated profile) is folded in place; anything else is
 * decoded by CPython first, so invalid UTF-8 raises exactly what bytes.decode() raises. */
static int
fold_encoded_bytes(uint64_t *st, const char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    PyObject *text;
    int rc;
    for (; i + 8 <= n; i += 8) { /* ASCII, 8 bytes at a time */
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ULL) {
            break;
        }
    }
    while (i < n && (unsigned char)p[i] < 0x80) {
        i++;
    }
    if (i == n) {
        return fold_encoded(st, PyUnicode_1BYTE_KIND, p, n);
    }
    text = PyUnicode_DecodeUTF8(p, n, "strict");
    if (text == NULL) {
        return -1;
    }
    rc = fold_encoded(st, PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text));
    Py_DECREF(text);
    return rc;
}

/* A row: tuple or list directly, anything else (sqlite3.Row, a tuple subclass) by
 * __getitem__. Fields 0, 4, 5, 6 are ints, 1..3 str. */
static int
fold_row(uint64_t *st, PyObject *row)
{
    int direct = PyTuple_CheckExact(row) || PyList_CheckExact(row), f;
    for (f = 0; f < 7; f++) {
        PyObject *item;
        int rc = 0;
        if (direct) {
            /* re-checked each field: an int field's __index__ may shrink a list */
            if (f >= Py_SIZE(row)) {
                PyErr_Format(PyExc_ValueError, "profile row has %zd fields, needs at least 7",
                             Py_SIZE(row));
                return -1;
            }
            item = Py_NewRef(PySequence_Fast_GET_ITEM(row, f));
        }
        else {
            PyObject *idx = PyLong_FromLong(f);
            item = idx == NULL ? NULL : PyObject_GetItem(row, idx);
            Py_XDECREF(idx);
            if (item == NULL) {
                return -1;
            }
        }
        if (f >= 1 && f <= 3) {
            if (!PyUnicode_Check(item)) {
                PyErr_Format(PyExc_TypeError, "profile field %d must be a str, not %.100s", f,
                             Py_TYPE(item)->tp_name);
                rc = -1;
            }
            else if (NOT_READY(item)) {
                rc = -1;
            }
            else {
                *st = fold_units(*st, PyUnicode_KIND(item), PyUnicode_DATA(item), 0,
                                 PyUnicode_GET_LENGTH(item));
            }
        }
        else {
            uint64_t v = 0;
            rc = int_word(item, &v);
            FOLD(*st, v);
        }
        Py_DECREF(item);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

static int
fold_record(uint64_t *st, PyObject *rec)
{
    if (PyBytes_Check(rec)) {
        return fold_encoded_bytes(st, PyBytes_AS_STRING(rec), PyBytes_GET_SIZE(rec));
    }
    if (PyUnicode_Check(rec)) {
        if (NOT_READY(rec)) {
            return -1;
        }
        return fold_encoded(st, PyUnicode_KIND(rec), PyUnicode_DATA(rec), PyUnicode_GET_LENGTH(rec));
    }
    if (PyByteArray_Check(rec) || PyMemoryView_Check(rec)) { /* not hot: bytes(rec) */
        PyObject *copy = PyBytes_FromObject(rec);
        int rc;
        if (copy == NULL) {
            return -1;
        }
        rc = fold_encoded_bytes(st, PyBytes_AS_STRING(copy), PyBytes_GET_SIZE(copy));
        Py_DECREF(copy);
        return rc;
    }
    return fold_row(st, rec);
}

static int
fold_int_item(uint64_t *st, PyObject *item)
{
    uint64_t v;
    if (int_word(item, &v) < 0) {
        return -1;
    }
    FOLD(*st, v);
    return 0;
}

/* fn over every item of an iterable; the number of items, or -1. */
static Py_ssize_t
fold_iterable(uint64_t *st, PyObject *items, int (*fn)(uint64_t *, PyObject *))
{
    Py_ssize_t count = 0;
    PyObject *it, *item;
    if (PyList_CheckExact(items) || PyTuple_CheckExact(items)) {
        /* the size is re-read each step: a list may change under a __getitem__ callback */
        for (; count < PySequence_Fast_GET_SIZE(items); count++) {
            int rc;
            item = Py_NewRef(PySequence_Fast_GET_ITEM(items, count));
            rc = fn(st, item);
            Py_DECREF(item);
            if (rc < 0) {
                return -1;
            }
        }
        return count;
    }
    if ((it = PyObject_GetIter(items)) == NULL) {
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

/* state, values -> the folded state (the state object itself when nothing was folded,
 * like the Python loop). */
static PyObject *
fold_call(const char *fname, PyObject *const *args, Py_ssize_t nargs,
          int (*fn)(uint64_t *, PyObject *))
{
    uint64_t st;
    Py_ssize_t count;
    if (!ready() || !check_nargs(fname, nargs, 2)) {
        return NULL;
    }
    if (!PyLong_Check(args[0])) {
        PyErr_Format(PyExc_TypeError, "%s(): the state must be an int, not %.100s", fname,
                     Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    st = (uint64_t)PyLong_AsUnsignedLongLongMask(args[0]);
    count = fold_iterable(&st, args[1], fn);
    if (count < 0) {
        return NULL;
    }
    return count == 0 ? Py_NewRef(args[0]) : PyLong_FromUnsignedLongLong(st);
}

static PyObject *
k_fold_ints(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    return fold_call("fold_ints", args, nargs, fold_int_item);
}

static PyObject *
k_fold_profiles(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    return fold_call("fold_profiles", args, nargs, fold_record);
}

/* --- profiles --------------------------------------------------------------------- */

static inline uint64_t
mix64(uint64_t v)
{
    v += GOLDEN;
    v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ULL;
    v = (v ^ (v >> 27)) * 0x94D049BB133111EBULL;
    return v ^ (v >> 31);
}

/* An ASCII str from snprintf's output of n bytes into a buffer of cap bytes. */
static PyObject *
ascii_str(const char *s, int n, size_t cap)
{
    PyObject *u;
    if (n < 0 || (size_t)n >= cap) {
        PyErr_SetString(PyExc_SystemError, "_kernels: formatted field does not fit its buffer");
        return NULL;
    }
    u = PyUnicode_New(n, 127);
    if (u != NULL) {
        memcpy(PyUnicode_1BYTE_DATA(u), s, (size_t)n);
    }
    return u;
}

static inline PyObject *
email_of(long long uid, uint64_t unused)
{
    char buf[64];
    long long m97 = uid % 97;
    (void)unused;
    if (m97 < 0) {
        m97 += 97; /* Python's modulo is never negative */
    }
    if (uid >= 0 && uid < 1000000000000LL) { /* 12 digits: formatted by hand, ~5x snprintf */
        PyObject *u = PyUnicode_New(30, 127);
        char *p;
        int i;
        if (u == NULL) {
            return NULL;
        }
        p = (char *)PyUnicode_1BYTE_DATA(u);
        memcpy(p, "user", 4);
        for (i = 15; i >= 4; i--, uid /= 10) {
            p[i] = (char)('0' + uid % 10);
        }
        memcpy(p + 16, "@example", 8);
        p[24] = (char)('0' + m97 / 10);
        p[25] = (char)('0' + m97 % 10);
        memcpy(p + 26, ".com", 4);
        return u;
    }
    return ascii_str(buf, snprintf(buf, sizeof buf, "user%012lld@example%02lld.com", uid, m97),
                     sizeof buf);
}

static PyObject *
created_at_of(long long uid, uint64_t seed_word)
{
    return PyLong_FromLongLong(BASE_MS + uid * 1000 +
                               (long long)(mix64((uint64_t)uid + seed_word) % 997));
}

static PyObject *
make_profile(long long uid, uint64_t seed_word)
{
    char buf[64 + TOPIC_MAX];
    uint64_t a = mix64((uint64_t)uid + seed_word), b = mix64(a + GOLDEN);
    PyObject *items[9], *t;
    int i;
    items[0] = PyLong_FromLongLong(uid);
    items[1] = email_of(uid, 0);
    items[2] = Py_NewRef(COUNTRIES[a % 32]);
    items[3] = Py_NewRef(STATUSES[(a >> 8) % 4]);
    items[4] = PyLong_FromLongLong(BASE_MS + uid * 1000 + (long long)(a % 997));
    items[5] = PyLong_FromLongLong(BASE_MS + (long long)(b % LAST_LOGIN_SPAN_MS));
    items[6] = PyLong_FromLongLong((long long)(b % 1000000));
    items[7] = ascii_str(buf, snprintf(buf, sizeof buf, "User %012lld", uid), sizeof buf);
    items[8] = ascii_str(buf,
                         snprintf(buf, sizeof buf, "Profile %lld prefers %s and has segment %04u.",
                                  uid, TOPICS[a % 5], (unsigned)(b % 10000)),
                         sizeof buf);
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

/* An int argument as long long: TypeError for non-ints, ValueError beyond int64. */
static int
ll_arg(PyObject *o, long long *out, const char *fname)
{
    int overflow = 0;
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s() arguments must be ints, not %.100s", fname,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s(): %R is outside the 64-bit range", fname, o);
        return -1;
    }
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int
seed_word_arg(PyObject *o, uint64_t *out, const char *fname)
{
    long long seed;
    if (ll_arg(o, &seed, fname) < 0) {
        return -1;
    }
    if (seed < 0 || seed > 0xFFFFFFFFLL) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): seed_word %lld is not an unsigned 32-bit value (pass seed & 0xFFFFFFFF)",
                     fname, seed);
        return -1;
    }
    *out = (uint64_t)seed;
    return 0;
}

static PyObject *
k_create_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    long long start, count;
    uint64_t word;
    PyObject *list;
    Py_ssize_t k;
    (void)mod;
    if (!ready() || !check_nargs("create_many", nargs, 3) || ll_arg(args[0], &start, "create_many") < 0 ||
        ll_arg(args[1], &count, "create_many") < 0 || seed_word_arg(args[2], &word, "create_many") < 0) {
        return NULL;
    }
    if (count < 0) {
        count = 0;
    }
    if (count > 0 && (start < -UID_LIMIT || start > UID_LIMIT || count - 1 > UID_LIMIT - start)) {
        PyErr_Format(PyExc_ValueError, "create_many(): user ids %lld .. %lld+%lld-1 are outside +-%lld",
                     start, start, count, UID_LIMIT);
        return NULL;
    }
    list = PyList_New((Py_ssize_t)count);
    for (k = 0; list != NULL && k < (Py_ssize_t)count; k++) {
        PyObject *p = make_profile(start + (long long)k, word);
        if (p == NULL) {
            Py_CLEAR(list);
        }
        else {
            PyList_SET_ITEM(list, k, p);
        }
    }
    return list;
}

/* [fn(uid, seed_word) for uid in uids], each uid an int within +-limit. */
static PyObject *
map_uids(const char *fname, PyObject *uids, PyObject *(*fn)(long long, uint64_t), uint64_t word,
         long long limit)
{
    PyObject *seq = PySequence_Fast(uids, "user ids must be iterable"), *out;
    Py_ssize_t i, n;
    if (seq == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    out = PyList_New(n);
    for (i = 0; out != NULL && i < n; i++) {
        PyObject *v = NULL;
        long long uid;
        if (ll_arg(PySequence_Fast_GET_ITEM(seq, i), &uid, fname) == 0) {
            if (limit != INT64_MAX && (uid < -limit || uid > limit)) {
                PyErr_Format(PyExc_ValueError, "%s(): user id %lld is outside +-%lld", fname, uid,
                             limit);
            }
            else {
                v = fn(uid, word);
            }
        }
        if (v == NULL) {
            Py_CLEAR(out);
        }
        else {
            PyList_SET_ITEM(out, i, v);
        }
    }
    Py_DECREF(seq);
    return out;
}

static PyObject *
k_email_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    if (!check_nargs("email_many", nargs, 1)) {
        return NULL;
    }
    return map_uids("email_many", args[0], email_of, 0, INT64_MAX);
}

static PyObject *
k_created_at_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t word;
    (void)mod;
    if (!ready() || !check_nargs("created_at_many", nargs, 2) ||
        seed_word_arg(args[1], &word, "created_at_many") < 0) {
        return NULL;
    }
    return map_uids("created_at_many", args[0], created_at_of, word, UID_LIMIT);
}

/* --- NetRandom: .NET's legacy seeded System.Random (Net5CompatSeedImpl) ------------- */

#define INT31_MAX 2147483647LL
#define MSEED 161803398LL

typedef struct {
    PyObject_HEAD
    int inext, inextp;
    int64_t s[56]; /* int64 so every intermediate is exact, like the Python twin */
} NetRandomObject;

static void
nr_seed(NetRandomObject *r, long long seed)
{
    int64_t *s = r->s, mj, mk;
    int i, k, ii = 0;
    memset(r->s, 0, sizeof r->s);
    mj = MSEED - (seed == -2147483648LL ? INT31_MAX : (seed < 0 ? -seed : seed));
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
            int n = i + 30 >= 55 ? i + 30 - 55 : i + 30;
            /* C# int32 arithmetic: the first round can overflow, so wrap to 32 bits */
            int64_t v = (int64_t)((uint64_t)(s[i] - s[1 + n] + 2147483648LL) & 0xFFFFFFFFULL) -
                        2147483648LL;
            s[i] = v < 0 ? v + INT31_MAX : v;
        }
    }
    r->inext = 0;
    r->inextp = 21;
}

static Py_ALWAYS_INLINE inline double
nr_sample(NetRandomObject *r)
{
    int i = r->inext + 1 >= 56 ? 1 : r->inext + 1, j = r->inextp + 1 >= 56 ? 1 : r->inextp + 1;
    int64_t v = r->s[i] - r->s[j];
    if (v == INT31_MAX) {
        v -= 1;
    }
    if (v < 0) {
        v += INT31_MAX;
    }
    r->s[i] = v;
    r->inext = i;
    r->inextp = j;
    return (double)v * (1.0 / 2147483647.0);
}

static PyObject *
NetRandom_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *seedobj;
    NetRandomObject *self;
    long long seed;
    int overflow = 0;
    if ((kwds != NULL && PyDict_GET_SIZE(kwds) > 0) ||
        !PyArg_ParseTuple(args, "O!:NetRandom", &PyLong_Type, &seedobj)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "NetRandom() takes its seed as a positional argument");
        }
        return NULL;
    }
    seed = PyLong_AsLongLongAndOverflow(seedobj, &overflow);
    if (overflow || seed < -2147483648LL || seed > 2147483647LL) {
        PyErr_Format(PyExc_ValueError, "seed %R is outside the signed 32-bit range", seedobj);
        return NULL;
    }
    self = (NetRandomObject *)type->tp_alloc(type, 0);
    if (self != NULL) {
        nr_seed(self, seed);
    }
    return (PyObject *)self;
}

/* Two int bounds strictly inside +-2^62 (the plan's are tiny). */
static int
bounds_arg(const char *fname, PyObject *lo_obj, PyObject *hi_obj, long long *lo, long long *hi)
{
    if (ll_arg(lo_obj, lo, fname) < 0 || ll_arg(hi_obj, hi, fname) < 0) {
        return -1;
    }
    if (*lo <= -RNG_BOUND || *lo >= RNG_BOUND || *hi <= -RNG_BOUND || *hi >= RNG_BOUND) {
        PyErr_Format(PyExc_ValueError,
                     "NetRandom.%s(): bounds must lie strictly within +-2**62 (PyNetRandom takes any)",
                     fname);
        return -1;
    }
    return 0;
}

static PyObject *
NetRandom_next(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long lo, hi;
    if (!check_nargs("next", nargs, 2) || bounds_arg("next", args[0], args[1], &lo, &hi) < 0) {
        return NULL;
    }
    return PyLong_FromLongLong((long long)(nr_sample(self) * (double)(hi - lo)) + lo);
}

/* NextInt64(lo, hi) as an offset from lo, by rejection over the top bits of
 * NextUInt64 = Next(2^22) | Next(2^22) << 22 | Next(2^20) << 44; rm1 = hi - lo - 1 and
 * shift = 64 - bit_length(rm1) come from int64_setup (rm1 == 0: lo, nothing drawn). */
static Py_ALWAYS_INLINE inline uint64_t
nr_int64(NetRandomObject *r, uint64_t rm1, int shift)
{
    uint64_t x = 0;
    if (rm1 != 0) {
        do {
            /* each product is in [0, 2^22): the signed conversion is exact and cheaper */
            uint64_t a = (uint64_t)(int64_t)(nr_sample(r) * 4194304.0);
            uint64_t b = (uint64_t)(int64_t)(nr_sample(r) * 4194304.0);
            uint64_t c = (uint64_t)(int64_t)(nr_sample(r) * 1048576.0);
            x = (a | (b << 22) | (c << 44)) >> shift;
        } while (x > rm1);
    }
    return x;
}

/* Parses (count, lo, hi, ...) of the int64 methods; a negative count is 0. */
static int
int64_setup(const char *fname, PyObject *const *args, long long *count, long long *lo, long long *hi,
            uint64_t *rm1, int *shift)
{
    if (ll_arg(args[0], count, fname) < 0 || bounds_arg(fname, args[1], args[2], lo, hi) < 0) {
        return -1;
    }
    if (*count < 0) { /* like range(count): nothing */
        *count = 0;
    }
    *rm1 = *hi - *lo > 1 ? (uint64_t)(*hi - *lo - 1) : 0;
    *shift = 64;
    for (uint64_t v = *rm1; v != 0; v >>= 1) {
        (*shift)--;
    }
    return 0;
}

/* int64_list(count, lo, hi): count NextInt64(lo, hi) draws. */
static PyObject *
NetRandom_int64_list(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long count, lo, hi;
    uint64_t rm1;
    int shift;
    PyObject *list;
    Py_ssize_t k;
    if (!check_nargs("int64_list", nargs, 3) ||
        int64_setup("int64_list", args, &count, &lo, &hi, &rm1, &shift) < 0) {
        return NULL;
    }
    list = PyList_New((Py_ssize_t)count);
    for (k = 0; list != NULL && k < count; k++) {
        PyObject *v = PyLong_FromLongLong(lo + (long long)nr_int64(self, rm1, shift));
        if (v == NULL) {
            Py_CLEAR(list);
        }
        else {
            PyList_SET_ITEM(list, k, v);
        }
    }
    return list;
}

/* skip_int64(count, lo, hi): advances past count NextInt64(lo, hi) draws, keeping none. */
static PyObject *
NetRandom_skip_int64(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long count, lo, hi, k;
    uint64_t rm1;
    int shift;
    if (!check_nargs("skip_int64", nargs, 3) ||
        int64_setup("skip_int64", args, &count, &lo, &hi, &rm1, &shift) < 0) {
        return NULL;
    }
    for (k = 0; k < count; k++) {
        (void)nr_int64(self, rm1, shift);
    }
    Py_RETURN_NONE;
}

/* int64_filter(count, lo, hi, mod, rem, want): draws NextInt64(lo, hi) at most count times,
 * keeping the values v with v % mod == rem (Python's modulo) until want are kept. Returns
 * (kept list, draws made). */
static PyObject *
NetRandom_int64_filter(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long count, lo, hi, mod, rem, want, k, kept = 0;
    uint64_t rm1;
    int shift;
    PyObject *list, *out;
    if (!check_nargs("int64_filter", nargs, 6) ||
        int64_setup("int64_filter", args, &count, &lo, &hi, &rm1, &shift) < 0 ||
        ll_arg(args[3], &mod, "int64_filter") < 0 || ll_arg(args[4], &rem, "int64_filter") < 0 ||
        ll_arg(args[5], &want, "int64_filter") < 0) {
        return NULL;
    }
    if (mod < 1 || rem < 0 || rem >= mod || want < 0) {
        PyErr_SetString(PyExc_ValueError, "NetRandom.int64_filter(): needs mod >= 1, 0 <= rem < mod, want >= 0");
        return NULL;
    }
    list = PyList_New(0);
    if (list == NULL) {
        return NULL;
    }
    for (k = 0; k < count && kept < want; k++) {
        long long v = lo + (long long)nr_int64(self, rm1, shift);
        long long m = v % mod;
        if (m < 0) {
            m += mod;
        }
        if (m == rem) {
            PyObject *o = PyLong_FromLongLong(v);
            if (o == NULL || PyList_Append(list, o) < 0) {
                Py_XDECREF(o);
                Py_DECREF(list);
                return NULL;
            }
            Py_DECREF(o);
            kept++;
        }
    }
    out = Py_BuildValue("(NL)", list, k);
    return out;
}

/* count_mod(count, lo, hi, mod): advances past count NextInt64(lo, hi) draws and returns
 * how many of them had each value of v % mod (a list of mod ints). */
static PyObject *
NetRandom_count_mod(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long count, lo, hi, mod, k;
    uint64_t rm1;
    int shift;
    long long *tally;
    PyObject *list;
    if (!check_nargs("count_mod", nargs, 4) ||
        int64_setup("count_mod", args, &count, &lo, &hi, &rm1, &shift) < 0 ||
        ll_arg(args[3], &mod, "count_mod") < 0) {
        return NULL;
    }
    if (mod < 1 || mod > 1 << 20) {
        PyErr_SetString(PyExc_ValueError, "NetRandom.count_mod(): mod must be in 1 .. 2**20");
        return NULL;
    }
    tally = PyMem_Calloc((size_t)mod, sizeof *tally);
    if (tally == NULL) {
        return PyErr_NoMemory();
    }
    for (k = 0; k < count; k++) {
        long long m = (lo + (long long)nr_int64(self, rm1, shift)) % mod;
        tally[m < 0 ? m + mod : m]++;
    }
    list = PyList_New((Py_ssize_t)mod);
    for (k = 0; list != NULL && k < mod; k++) {
        PyObject *o = PyLong_FromLongLong(tally[k]);
        if (o == NULL) {
            Py_CLEAR(list);
        }
        else {
            PyList_SET_ITEM(list, k, o);
        }
    }
    PyMem_Free(tally);
    return list;
}

/* skip(count): advances past count internal samples (count Next(lo, hi) draws). */
static PyObject *
NetRandom_skip(NetRandomObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long count, k;
    if (!check_nargs("skip", nargs, 1) || ll_arg(args[0], &count, "skip") < 0) {
        return NULL;
    }
    for (k = 0; k < count; k++) { /* a negative count skips nothing, like range(count) */
        (void)nr_sample(self);
    }
    Py_RETURN_NONE;
}

/* copy(): an independent generator in the same state (where a stream starts). */
static PyObject *
NetRandom_copy(NetRandomObject *self, PyObject *Py_UNUSED(ignored))
{
    NetRandomObject *twin = (NetRandomObject *)Py_TYPE(self)->tp_alloc(Py_TYPE(self), 0);
    if (twin != NULL) {
        memcpy(twin->s, self->s, sizeof self->s);
        twin->inext = self->inext;
        twin->inextp = self->inextp;
    }
    return (PyObject *)twin;
}

/* state(): (inext, inextp, s[0..55]) as a tuple of ints, to compare with PyNetRandom.state(). */
static PyObject *
NetRandom_state(NetRandomObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *t = PyTuple_New(58);
    int i;
    if (t == NULL) {
        return NULL;
    }
    for (i = 0; i < 58; i++) {
        PyObject *o = PyLong_FromLongLong(i == 0 ? self->inext : i == 1 ? self->inextp : self->s[i - 2]);
        if (o == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

static PyMethodDef NetRandom_methods[] = {
    {"next", (PyCFunction)(void (*)(void))NetRandom_next, METH_FASTCALL,
     "next(lo, hi) -> int: Next(lo, hi), an int in [lo, hi)."},
    {"int64_list", (PyCFunction)(void (*)(void))NetRandom_int64_list, METH_FASTCALL,
     "int64_list(count, lo, hi) -> list[int]: count NextInt64(lo, hi) draws."},
    {"skip_int64", (PyCFunction)(void (*)(void))NetRandom_skip_int64, METH_FASTCALL,
     "skip_int64(count, lo, hi) -> None: advances past count NextInt64(lo, hi) draws."},
    {"int64_filter", (PyCFunction)(void (*)(void))NetRandom_int64_filter, METH_FASTCALL,
     "int64_filter(count, lo, hi, mod, rem, want) -> (list[int], int): at most count draws,\n"
     "keeping those v with v % mod == rem until want are kept; the kept values and the draws made."},
    {"count_mod", (PyCFunction)(void (*)(void))NetRandom_count_mod, METH_FASTCALL,
     "count_mod(count, lo, hi, mod) -> list[int]: advances past count draws, tallying v % mod."},
    {"skip", (PyCFunction)(void (*)(void))NetRandom_skip, METH_FASTCALL,
     "skip(count) -> None: advances past count internal samples (count Next(lo, hi) draws)."},
    {"copy", (PyCFunction)NetRandom_copy, METH_NOARGS,
     "copy() -> NetRandom: an independent generator in the same state."},
    {"state", (PyCFunction)NetRandom_state, METH_NOARGS,
     "state() -> tuple[int, ...]: (inext, inextp, *s), to compare generators."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NetRandom_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "asyncbench.workloads.profile_store._kernels.NetRandom",
    .tp_basicsize = sizeof(NetRandomObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "NetRandom(seed): .NET's legacy seeded System.Random, the plan-drawing part of\n"
              "asyncbench.workloads.profile_store.dotnet_random.PyNetRandom (next, int64_list, the skips and copy).",
    .tp_new = NetRandom_new,
    .tp_methods = NetRandom_methods,
};

/* --- module ----------------------------------------------------------------------- */

static PyMethodDef kernels_methods[] = {
    {"configure", k_configure, METH_VARARGS, configure_doc},
    {"fold_ints", (PyCFunction)(void (*)(void))k_fold_ints, METH_FASTCALL,
     "fold_ints(state, values) -> int: each int as one 64-bit word (mod 2^64)."},
    {"fold_profiles", (PyCFunction)(void (*)(void))k_fold_profiles, METH_FASTCALL,
     "fold_profiles(state, records) -> int: uid, email, country, status, created_at, last_login\n"
     "and reputation of each profile row or its stored '|'-joined encoding (bytes or str)."},
    {"create_many", (PyCFunction)(void (*)(void))k_create_many, METH_FASTCALL,
     "create_many(start, count, seed_word) -> list[tuple]: profiles start .. start+count-1."},
    {"email_many", (PyCFunction)(void (*)(void))k_email_many, METH_FASTCALL,
     "email_many(uids) -> list[str]: the email of each user id."},
    {"created_at_many", (PyCFunction)(void (*)(void))k_created_at_many, METH_FASTCALL,
     "created_at_many(uids, seed_word) -> list[int]: the created_at_ms of each user id."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernels_module = {
    PyModuleDef_HEAD_INIT, "asyncbench.workloads.profile_store._kernels",
    "Compiled checksum folds, profile generator and .NET-compatible RNG of the profile-store "
    "workload; import workloads.profile_store.kernels instead.",
    -1, kernels_methods,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    PyObject *m;
    if (PyType_Ready(&NetRandom_Type) < 0 || (m = PyModule_Create(&kernels_module)) == NULL) {
        return NULL;
    }
#ifdef SOURCE_SHA256
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", SOURCE_SHA256) < 0) { /* setup.py: native_build.py */
        Py_DECREF(m);
        return NULL;
    }
#endif
    if (PyModule_AddObjectRef(m, "NetRandom", (PyObject *)&NetRandom_Type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
