#include "key_column.h"

/*
 * KeyColumn(data, start, n, width, padded): the n first keys of a segment index, each
 * `width` bytes at data[start + i*width] (padded: right-padded with zero bytes, which are
 * not part of the key). Why: at open, a list of one bytes object per block cost most of a
 * 2M reopen (625_000 objects); this holds the index's one buffer (bytes, or the IndexMap
 * the reader checked it in) and makes a key only when asked for one. bisect_left /
 * bisect_right compare in place (memcmp), so a lookup's bisect allocates nothing. Sequence
 * protocol: len, [i], [a:b] (a list), ==. `data` is any buffer: held, it cannot be resized
 * or closed (Python refuses that while a buffer is exported).
 */

/* Build c->windows (and c->common); -1 without memory (the caller bisects the keys). */
int
kc_build_windows(KeyColumn *c)
{
    Py_ssize_t n = c->n, w = c->width, common = 0;
    if (n == 0)
        return -1;
    Py_ssize_t la = kc_len(c, 0), lb = kc_len(c, n - 1), m = la < lb ? la : lb;
    const unsigned char *a = c->base, *b = c->base + (n - 1) * w;
    while (common < m && a[common] == b[common])
        common++; /* sorted: a prefix of the first and the last key is every key's */
    uint64_t *win = PyMem_RawMalloc((size_t)n * sizeof(uint64_t));
    if (win == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        win[i] = kc_window(c->base + i * w, w, common); /* padding is zero bytes already */
    c->common = common;
    c->windows = win;
    return 0;
}

static PyObject *
KeyColumn_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *data;
    Py_ssize_t start, n, width;
    int padded;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "KeyColumn takes positional arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "Onnnp", &data, &start, &n, &width, &padded))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (start < 0 || n < 0 || width < 1 || start > view.len || (n && (view.len - start) / n < width)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "KeyColumn: keys outside the data");
        return NULL;
    }
    KeyColumn *c = (KeyColumn *)type->tp_alloc(type, 0);
    if (c == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    c->data = view;
    c->base = (const unsigned char *)view.buf + start;
    c->n = n;
    c->width = width;
    c->padded = padded;
    return (PyObject *)c;
}

static void
KeyColumn_dealloc(KeyColumn *c)
{
    PyMem_RawFree(c->windows);
    if (c->data.obj != NULL)
        PyBuffer_Release(&c->data);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static Py_ssize_t
KeyColumn_length(KeyColumn *c)
{
    return c->n;
}

static PyObject *
KeyColumn_item(KeyColumn *c, Py_ssize_t i)
{
    if (i < 0 || i >= c->n) {
        PyErr_SetString(PyExc_IndexError, "KeyColumn index out of range");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)c->base + i * c->width, kc_len(c, i));
}

static PyObject *
KeyColumn_subscript(KeyColumn *c, PyObject *key)
{
    if (PySlice_Check(key)) {
        Py_ssize_t start, stop, step, len;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0)
            return NULL;
        len = PySlice_AdjustIndices(c->n, &start, &stop, step);
        PyObject *out = PyList_New(len);
        if (out == NULL)
            return NULL;
        for (Py_ssize_t j = 0, i = start; j < len; j++, i += step) {
            PyObject *k = KeyColumn_item(c, i);
            if (k == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            PyList_SET_ITEM(out, j, k);
        }
        return out;
    }
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0)
        i += c->n;
    return KeyColumn_item(c, i);
}

/* bisect over [lo, hi): the first i whose key is > probe (right) or >= probe (left) */
static PyObject *
kc_bisect(KeyColumn *c, PyObject *const *args, Py_ssize_t nargs, int right)
{
    if (nargs < 1 || nargs > 3 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "bisect(key: bytes, lo=0, hi=len)");
        return NULL;
    }
    Py_ssize_t lo = 0, hi = c->n;
    if (nargs > 1 && (lo = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if (nargs > 2 && (hi = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if (lo < 0)
        lo = 0;
    if (hi > c->n)
        hi = c->n;
    const unsigned char *k = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t klen = PyBytes_GET_SIZE(args[0]);
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        int cmp = key_cmp(k, klen, c->base + mid * c->width, kc_len(c, mid));
        if (right ? cmp < 0 : cmp <= 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return PyLong_FromSsize_t(lo);
}

static PyObject *
KeyColumn_bisect_right(KeyColumn *c, PyObject *const *args, Py_ssize_t nargs)
{
    return kc_bisect(c, args, nargs, 1);
}

static PyObject *
KeyColumn_bisect_left(KeyColumn *c, PyObject *const *args, Py_ssize_t nargs)
{
    return kc_bisect(c, args, nargs, 0);
}

static PyObject *
KeyColumn_richcompare(KeyColumn *c, PyObject *other, int op)
{
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *all = PySlice_New(NULL, NULL, NULL);
    if (all == NULL)
        return NULL;
    PyObject *mine = KeyColumn_subscript(c, all);
    Py_DECREF(all);
    if (mine == NULL)
        return NULL;
    PyObject *theirs = PySequence_Check(other) && !PyBytes_Check(other) ? PySequence_List(other) : NULL;
    if (theirs == NULL) {
        PyErr_Clear();
        Py_DECREF(mine);
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *r = PyObject_RichCompare(mine, theirs, op);
    Py_DECREF(mine);
    Py_DECREF(theirs);
    return r;
}

static PyMethodDef KeyColumn_methods[] = {
    {"bisect_right", (PyCFunction)(void (*)(void))KeyColumn_bisect_right, METH_FASTCALL,
     "bisect_right(key, lo=0, hi=len): as bisect.bisect_right over the keys"},
    {"bisect_left", (PyCFunction)(void (*)(void))KeyColumn_bisect_left, METH_FASTCALL,
     "bisect_left(key, lo=0, hi=len): as bisect.bisect_left over the keys"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods KeyColumn_as_sequence = {
    .sq_length = (lenfunc)KeyColumn_length,
    .sq_item = (ssizeargfunc)KeyColumn_item,
};

static PyMappingMethods KeyColumn_as_mapping = {
    .mp_length = (lenfunc)KeyColumn_length,
    .mp_subscript = (binaryfunc)KeyColumn_subscript,
};

PyTypeObject KeyColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "asyncbench.engines.lsm._native.KeyColumn",
    .tp_basicsize = sizeof(KeyColumn),
    .tp_dealloc = (destructor)KeyColumn_dealloc,
    .tp_as_sequence = &KeyColumn_as_sequence,
    .tp_as_mapping = &KeyColumn_as_mapping,
    .tp_richcompare = (richcmpfunc)KeyColumn_richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A segment index's fixed-width first keys, read in place (see engines/lsm/csrc/key_column.c).",
    .tp_methods = KeyColumn_methods,
    .tp_new = KeyColumn_new,
};
