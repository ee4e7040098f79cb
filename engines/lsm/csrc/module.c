/*
 * asyncbench.engines.lsm._native: the LSM's flush and merge write loop, its in-memory
 * index and point lookup, and its log frames in C; this file is the module table.
 *
 * Import it through engines/lsm/native.py, never directly: that module falls back to the
 * pure-Python path (merging_iterator.merge into SegmentWriter.add) when this is not built.
 *
 * One extension module built from the files of this folder (setup.py compiles every .c
 * here; its SOURCE_SHA256 is the digest of all of them, asyncbench/native_build.py), one
 * concept per file, as LevelDB lays out its sources:
 *
 *   entry.h         an entry and the key order (key_cmp)
 *   coding.h        little-endian u32 reads and writes
 *   compress.c      LZ4 from the system library (dlopen) and a block's decompression
 *   sort.c          a memtable's entries in key order: the radix sort
 *   source.c        the sources of a merge: a memtable's entries, a segment's blocks
 *   writer.c        the output: entries encoded as blocks, compressed, checksummed, written
 *   first_keys.c    the first-key region of a segment index (first_keys_region)
 *   write_blocks.c  a flush or merge in one call (write_blocks, BlockCorrupt)
 *   key_column.c    a segment index's first keys read in place (KeyColumn)
 *   index_map.c     a segment's block index mapped read-only (IndexMap)
 *   fixed_lookup.c  a segment's point lookup and scan (FixedLookup)
 *   log_frame.c     the write-ahead log's frames (encode_records, lz4_log_frame)
 */
#include "compress.h"
#include "first_keys.h"
#include "fixed_lookup.h"
#include "index_map.h"
#include "key_column.h"
#include "log_frame.h"
#include "write_blocks.h"

static PyMethodDef native_methods[] = {
    {"write_blocks", (PyCFunction)(void (*)(void))write_blocks, METH_FASTCALL, write_blocks_doc},
    {"encode_records", (PyCFunction)encode_records, METH_O, encode_records_doc},
    {"lz4_log_frame", (PyCFunction)lz4_log_frame, METH_O, lz4_log_frame_doc},
    {"first_keys_region", (PyCFunction)first_keys_region, METH_O, first_keys_region_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_native", "The LSM's flush and merge write loop in C (see native.py).", -1,
    native_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL)
        return NULL;
    lz4_load();
    if (PyModule_AddObjectRef(m, "LZ4", lz4_decompress != NULL ? Py_True : Py_False) < 0 ||
        PyModule_AddStringConstant(m, "LZ4_MISSING", lz4_missing) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    BlockCorrupt = PyErr_NewException("asyncbench.engines.lsm._native.BlockCorrupt", PyExc_Exception, NULL);
    if (BlockCorrupt == NULL || PyModule_AddObjectRef(m, "BlockCorrupt", BlockCorrupt) < 0 ||
        PyType_Ready(&KeyColumnType) < 0 ||
        PyModule_AddObjectRef(m, "KeyColumn", (PyObject *)&KeyColumnType) < 0 ||
        PyType_Ready(&IndexMapType) < 0 ||
        PyModule_AddObjectRef(m, "IndexMap", (PyObject *)&IndexMapType) < 0 ||
        fixed_lookup_ready() < 0 ||
        PyModule_AddObjectRef(m, "FixedLookup", (PyObject *)&FixedLookupType) < 0) {
        Py_DECREF(m);
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
