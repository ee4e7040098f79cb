/*
 * write_blocks(fd, pos, sources, step, drop_tombstones[, level]) merges sorted sources (newest
 * first: a memtable's dict, or a segment's (buffer, offsets, lengths, crcs[, file_mapping[,
 * raw_lengths]]): with file_mapping true, pages behind the read position are released,
 * seg_drop_behind; with raw_lengths, the blocks are compressed and decompress to those lengths:
 * zlib format, or LZ4 blocks with a true 7th item) and writes the result as data blocks of `step` entries at byte `pos` of `fd`,
 * byte for byte what block.encode_many / SegmentWriter.add write for the same entries
 * (tests/test_lsm_native.py); with level 1..9, each block compressed at that zlib level
 * (segment format 3), with level -1 each an LZ4 block (format 4), as SegmentWriter stores
 * it (tests/test_lsm_compression.py).
 *
 * Why: profiled, a stabilization spent ~40 % reading memtables in key order and ~40 %
 * encoding blocks in Python, RocksDB's in C++. Here the only work under the GIL is taking
 * the dict's entries (one pass, references held) and building the index's bytes at the end;
 * sorting, decoding source blocks (checksums tested, bounds checked), merging, encoding,
 * crc32 and pwrite run with the GIL released, so a flush or merge in a worker thread uses
 * the second core while the event loop serves the foreground.
 *
 * Safety of the released GIL: a memtable given here is frozen (never written again) and
 * each of its keys and values is held by a reference taken under the GIL; a segment's
 * buffer is held through the buffer protocol (an mmap cannot be closed while exported).
 *
 * Returns (first_keys_region: bytes, offsets: bytes of u64, lengths: bytes of u32,
 * crcs: bytes of u32, last_key: bytes | None, entries, live, end_pos, raw_lengths: bytes of
 * u32): the region is the index's first keys as encode_index writes them (region_bytes),
 * lengths and crcs are of the stored bytes, raw_lengths of the blocks decompressed.
 *
 * A compressed source block is decompressed into a buffer of its own. Entries point into
 * it until they are encoded, so when the source moves on, its previous buffer is freed at
 * once unless an entry of the block being filled points into it; then it waits in the
 * writer's `grave` until that block is encoded (at most `step` of them). The last key
 * written is copied (its order check outlives its source block).
 * A damaged source block raises BlockCorrupt(source_index, block_index, reason).
 */
#include "write_blocks.h"

#include "first_keys.h"
#include "source.h"
#include "sort.h"
#include "compress.h"
#include "writer.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

PyObject *BlockCorrupt;

static int
get_buffer(PyObject *o, Py_buffer *view, const char *what, Py_ssize_t itemsize)
{
    if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) < 0)
        return -1;
    if (itemsize && view->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: length %zd is not a multiple of %zd", what, view->len, itemsize);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

PyObject *
write_blocks(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "write_blocks(fd, pos, sources, step, drop_tombstones[, level])");
        return NULL;
    }
    long level = 0;
    if (nargs == 6) {
        level = PyLong_AsLong(args[5]);
        if (level == -1 && PyErr_Occurred())
            return NULL;
        if (level < -1 || level > 9) {
            PyErr_SetString(PyExc_ValueError, "level must be in -1..9 (0: blocks stored plain; -1: LZ4)");
            return NULL;
        }
        if (level == -1 && lz4_compress == NULL) {
            PyErr_Format(PyExc_RuntimeError, "LZ4 is not available: %s", lz4_missing);
            return NULL;
        }
    }
    long fdl = PyLong_AsLong(args[0]);
    if (fdl == -1 && PyErr_Occurred())
        return NULL;
    if (fdl < 0 || fdl > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "fd out of range");
        return NULL;
    }
    int fd = (int)fdl;
    unsigned long long pos = PyLong_AsUnsignedLongLong(args[1]);
    if (pos == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    PyObject *srcs = args[2];
    if (!PyList_Check(srcs)) {
        PyErr_SetString(PyExc_TypeError, "sources must be a list");
        return NULL;
    }
    long step = PyLong_AsLong(args[3]);
    if (step == -1 && PyErr_Occurred())
        return NULL;
    if (step < 1 || step > 0xFFFF) {
        PyErr_SetString(PyExc_ValueError, "step must be in 1..65535");
        return NULL;
    }
    int drop = PyObject_IsTrue(args[4]);
    if (drop < 0)
        return NULL;

    Py_ssize_t k = PyList_GET_SIZE(srcs);
    PyObject *result = NULL;
    Source *S = PyMem_Calloc(k ? (size_t)k : 1, sizeof(Source));
    Writer w;
    memset(&w, 0, sizeof(w));
    Fail fail = {NULL, 0, 0};
    if (S == NULL)
        return PyErr_NoMemory();
    w.fd = fd;
    w.level = (int)level;
    w.pos = pos;
    w.step = (uint32_t)step;
    w.pend = PyMem_Malloc((size_t)step * sizeof(Entry));
    if (w.pend == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t si = 0; si < k; si++) {
        PyObject *o = PyList_GET_ITEM(srcs, si);
        Source *s = &S[si];
        if (PyDict_CheckExact(o)) {
            /* A frozen memtable: walked below with the GIL released (the walk only reads
             * the dict and its bytes objects, and nothing writes a frozen memtable), so
             * the event loop runs beside the walk. One reference on the dict keeps every
             * key and value alive: the walk used to take one on each of them and drop
             * them all at the end, about 16 ms of a 250_000-entry flush under the GIL. */
            Py_ssize_t n = PyDict_GET_SIZE(o);
            s->ents = malloc((n ? (size_t)n : 1) * sizeof(Entry));
            if (s->ents == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            s->dict = Py_NewRef(o);
            s->nents = n;
        }
        else if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) >= 4 && PyTuple_GET_SIZE(o) <= 7) {
            s->is_seg = 1;
            s->w = &w;
            if (get_buffer(PyTuple_GET_ITEM(o, 0), &s->buf, "segment", 0) < 0 ||
                get_buffer(PyTuple_GET_ITEM(o, 1), &s->offs, "offsets", 8) < 0 ||
                get_buffer(PyTuple_GET_ITEM(o, 2), &s->lens, "lengths", 4) < 0 ||
                get_buffer(PyTuple_GET_ITEM(o, 3), &s->crcs, "crcs", 4) < 0)
                goto done;
            if (PyTuple_GET_SIZE(o) >= 6) {
                if (get_buffer(PyTuple_GET_ITEM(o, 5), &s->rawl, "raw lengths", 4) < 0)
                    goto done;
                s->compressed = 1;
            }
            if (PyTuple_GET_SIZE(o) == 7) {
                int lz4 = PyObject_IsTrue(PyTuple_GET_ITEM(o, 6));
                if (lz4 < 0)
                    goto done;
                s->lz4 = lz4;
            }
            if (PyTuple_GET_SIZE(o) >= 5) {
                int drop = PyObject_IsTrue(PyTuple_GET_ITEM(o, 4));
                if (drop < 0)
                    goto done;
                long page = sysconf(_SC_PAGESIZE);
                /* a mapping's own start is page-aligned, and it must be a shared mapping
                 * of a file: anything else is left alone */
                s->drop = drop && page > 0 && ((uintptr_t)s->buf.buf % (uintptr_t)page) == 0 &&
                          (size_t)s->buf.len > DROP_CHUNK && /* else nothing to release */
                          shared_file_mapping(s->buf.buf, (size_t)s->buf.len);
            }
            s->nblocks = s->offs.len / 8;
            if (s->lens.len / 4 != s->nblocks || s->crcs.len / 4 != s->nblocks ||
                (s->compressed && s->rawl.len / 4 != s->nblocks)) {
                PyErr_SetString(PyExc_ValueError, "segment index columns differ in length");
                goto done;
            }
        }
        else {
            PyErr_SetString(PyExc_TypeError,
                            "a source is a dict or a (buffer, offsets, lengths, crcs[, file_mapping[, raw_lengths[, lz4]]]) tuple");
            goto done;
        }
    }

    int failed = 0;
    const char *bad_dict = NULL; /* a dict source that is not a memtable of bytes */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t si = 0; si < k && bad_dict == NULL; si++)
        if (S[si].dict != NULL)
            bad_dict = memtable_entries(&S[si]);
    if (bad_dict != NULL)
        failed = 3;
    for (Py_ssize_t si = 0; si < k && !failed; si++) {
        Source *s = &S[si];
        if (!s->is_seg)
            sort_entries(s->ents, s->nents);
        if (src_next(s, si, &fail) < 0)
            failed = 1;
    }
    while (!failed) {
        /* the smallest head; on equal keys the newest (lowest index) wins */
        Py_ssize_t best = -1;
        for (Py_ssize_t si = 0; si < k; si++) {
            if (!S[si].has_head)
                continue;
            if (best < 0 || key_cmp(S[si].head.k, S[si].head.klen, S[best].head.k, S[best].head.klen) < 0)
                best = si;
        }
        if (best < 0)
            break;
        /* added before the sources move on: a compressed source's block buffer is
           kept for the entries of the block being filled, and e is not one yet */
        Entry e = S[best].head;
        if (!(drop && e.tomb)) {
            if (w.has_last && key_cmp(e.k, e.klen, w.lastk.p, (Py_ssize_t)w.lastk.len) <= 0) {
                fail.reason = "keys out of order";
                fail.source = best;
                fail.block = S[best].is_seg ? S[best].blk - 1 : -1;
                failed = 1;
                break;
            }
            if (w_add(&w, &e) < 0) {
                failed = 2;
                break;
            }
        }
        /* The other sources holding e's key first, the winner last: e points into the
           winner's block, which its advance may free (a compressed source's buffer, when
           nothing pending points into it), so e's key is compared only before that. */
        for (Py_ssize_t si = 0; si < k && !failed; si++) {
            if (si != best && S[si].has_head && key_cmp(S[si].head.k, S[si].head.klen, e.k, e.klen) == 0) {
                if (src_next(&S[si], si, &fail) < 0)
                    failed = 1;
            }
        }
        if (!failed && src_next(&S[best], best, &fail) < 0)
            failed = 1;
        if (failed)
            break;
    }
    if (!failed && (w_block(&w) < 0 || w_flush(&w) < 0))
        failed = 2;
    Py_END_ALLOW_THREADS

    if (failed == 3) {
        PyErr_SetString(strcmp(bad_dict, "changed") == 0 ? PyExc_RuntimeError : PyExc_TypeError,
                        strcmp(bad_dict, "changed") == 0 ? "memtable changed during a flush"
                                                         : "memtable keys must be bytes, values bytes or None");
        goto done;
    }
    if (failed == 1) {
        PyObject *exc = Py_BuildValue("(nns)", fail.source, fail.block, fail.reason);
        if (exc != NULL) {
            PyErr_SetObject(BlockCorrupt, exc);
            Py_DECREF(exc);
        }
        goto done;
    }
    if (failed == 2) {
        if (w.err == -1)
            PyErr_NoMemory();
        else {
            errno = w.err;
            PyErr_SetFromErrno(PyExc_OSError);
        }
        goto done;
    }
    {
        FirstKeys fk = {.base = w.fkeys.p, .spans = w.firsts, .n = (Py_ssize_t)w.nfirsts};
        PyObject *firsts = region_bytes(&fk);
        if (firsts == NULL)
            goto done;
        PyObject *last = w.has_last ? PyBytes_FromStringAndSize((const char *)w.lastk.p, (Py_ssize_t)w.lastk.len)
                                    : Py_NewRef(Py_None);
        /* "y#" makes None of a NULL pointer: an empty result still gives bytes */
        result = Py_BuildValue("(Ny#y#y#NLLKy#)", firsts, w.idx_off.p ? (const char *)w.idx_off.p : "",
                               (Py_ssize_t)w.idx_off.len, w.idx_len.p ? (const char *)w.idx_len.p : "",
                               (Py_ssize_t)w.idx_len.len, w.idx_crc.p ? (const char *)w.idx_crc.p : "",
                               (Py_ssize_t)w.idx_crc.len, last, w.entries,
                               w.live, (unsigned long long)w.pos,
                               w.idx_raw.p ? (const char *)w.idx_raw.p : "", (Py_ssize_t)w.idx_raw.len);
    }

done:
    for (Py_ssize_t si = 0; si < k; si++) {
        Source *s = &S[si];
        free(s->ents);
        Py_XDECREF(s->dict);
        if (s->buf.obj)
            PyBuffer_Release(&s->buf);
        if (s->offs.obj)
            PyBuffer_Release(&s->offs);
        if (s->lens.obj)
            PyBuffer_Release(&s->lens);
        if (s->crcs.obj)
            PyBuffer_Release(&s->crcs);
        if (s->rawl.obj)
            PyBuffer_Release(&s->rawl);
        free(s->dbuf);
    }
    w_bury(&w);
    free(w.grave.p);
    free(w.scratch.p);
    free(w.idx_raw.p);
    free(w.lastk.p);
    PyMem_Free(S);
    PyMem_Free(w.pend);
    free(w.out.p);
    free(w.idx_off.p);
    free(w.idx_len.p);
    free(w.idx_crc.p);
    free(w.firsts);
    free(w.fkeys.p);
    return result;
}

const char write_blocks_doc[] = PyDoc_STR(
    "write_blocks(fd, pos, sources, step, drop_tombstones[, level]) -> (first_keys_region, offsets,\n"
    "lengths, crcs, last_key, entries, live, end_pos, raw_lengths): merge sorted sources (newest first: dicts\n"
    "or (buffer, offsets, lengths, crcs[, file_mapping[, raw_lengths]]) segments) into data blocks\n"
    "written at pos of fd, each compressed at zlib `level` when it is 1..9, an LZ4 block when it is -1.");
