#include "index_map.h"

#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * IndexMap(fd, offset, length): bytes [offset, offset + length) of the file `fd` names,
 * mapped read-only, as a read-only buffer; unmapped when the object is freed (it cannot
 * be while a buffer of it is held: a KeyColumn over it, a memoryview). Keeps no file
 * descriptor (mmap.mmap keeps a dup of one per mapping).
 *
 * Why: the reader checked a segment's index in a copy (os.pread into a new bytes object),
 * and the first keys stayed in that copy. At 10M profiles the five indexes are ~150 MB,
 * and on the shared VM most of a reopen went to faulting in and zeroing the copies' fresh
 * pages, not to reading: the mapping's pages are the page cache's own, mapped 16 at a
 * time. The reader tests the index's crc32 over this mapping (as it did over the copy)
 * before it uses any of it, copies the columns it indexes by (offsets, lengths, crcs)
 * into arrays as before, and keeps only the first keys here: read in place, as the data
 * blocks are read in place from the segment's own mapping.
 */
typedef struct {
    PyObject_HEAD
    void *map;        /* the mapping, from the page boundary at or below `offset` */
    size_t map_len;   /* its length */
    Py_ssize_t skip;  /* offset - the page boundary */
    Py_ssize_t len;   /* the buffer's length */
    PyObject *weakreflist; /* weak references (held_files.py waits for the unmapping) */
} IndexMap;

static PyObject *
IndexMap_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    int fd;
    long long offset, length;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "IndexMap takes positional arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "iLL", &fd, &offset, &length))
        return NULL;
    if (offset < 0 || length < 0 || (unsigned long long)length > (unsigned long long)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_ValueError, "IndexMap: offset and length must be non-negative");
        return NULL;
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    long long skip = offset % page;
    IndexMap *m = (IndexMap *)type->tp_alloc(type, 0);
    if (m == NULL)
        return NULL;
    m->skip = (Py_ssize_t)skip;
    m->len = (Py_ssize_t)length;
    m->map_len = (size_t)(skip + length);
    if (m->map_len == 0) /* mmap refuses length 0: an empty buffer needs no mapping */
        return (PyObject *)m;
    void *p;
    Py_BEGIN_ALLOW_THREADS
    p = mmap(NULL, m->map_len, PROT_READ, MAP_SHARED, fd, (off_t)(offset - skip));
    Py_END_ALLOW_THREADS
    if (p == MAP_FAILED) {
        m->map_len = 0;
        Py_DECREF(m);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    m->map = p;
    return (PyObject *)m;
}

static void
IndexMap_dealloc(IndexMap *m)
{
    if (m->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)m);
    if (m->map != NULL) {
        Py_BEGIN_ALLOW_THREADS /* (as mmap.mmap's dealloc: nothing else can reach it now) */
        munmap(m->map, m->map_len);
        Py_END_ALLOW_THREADS
    }
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static int
IndexMap_getbuffer(IndexMap *m, Py_buffer *view, int flags)
{
    static char empty[1];
    char *buf = m->map != NULL ? (char *)m->map + m->skip : empty;
    return PyBuffer_FillInfo(view, (PyObject *)m, buf, m->len, 1, flags);
}

static Py_ssize_t
IndexMap_length(IndexMap *m)
{
    return m->len;
}

static PyBufferProcs IndexMap_as_buffer = {
    .bf_getbuffer = (getbufferproc)IndexMap_getbuffer,
};

static PySequenceMethods IndexMap_as_sequence = {
    .sq_length = (lenfunc)IndexMap_length,
};

PyTypeObject IndexMapType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "asyncbench.engines.lsm._native.IndexMap",
    .tp_basicsize = sizeof(IndexMap),
    .tp_weaklistoffset = offsetof(IndexMap, weakreflist),
    .tp_dealloc = (destructor)IndexMap_dealloc,
    .tp_as_buffer = &IndexMap_as_buffer,
    .tp_as_sequence = &IndexMap_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A segment's block index mapped read-only, as a buffer (see engines/lsm/csrc/index_map.c).",
    .tp_new = IndexMap_new,
};
