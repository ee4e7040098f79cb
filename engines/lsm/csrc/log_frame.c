#include "log_frame.h"

#include "compress.h"

#include <stdlib.h>
#include <zlib.h>

/*
 * encode_records(records) -> bytes: a log frame's payload, byte for byte what
 * wal.encode_records_py writes: per record u32 key length, u32 value length (0xFFFFFFFF:
 * a tombstone), key, value. `records` is one flat list, key, value, key, value, ...
 * (value None: a tombstone), as the log keeps them: a (key, value) tuple per record was
 * a tracked object per record for the garbage collector. Why compiled: the reference
 * plan logs every insert and update five times (one record per tree), and packing
 * 16_384 records a frame in Python was 18-20 % of the insert phase on the event loop
 * (issue 40 item 4). Two passes under the GIL (sizes, then copies).
 */
#define TOMB_LEN 0xFFFFFFFFu

/* An error found by records_scan: its exception type and message (set with the GIL). */
typedef struct {
    PyObject **type;
    const char *message;
} RecordsError;

/* The encoded size of the flat list's records (its length even, checked), or -1 with
 * *err filled: every key bytes, every value bytes or None, each under 4 GiB. Reads only
 * (the list's items, their types and sizes): callable with the GIL released while
 * nothing else holds the list, as put_records is. */
static Py_ssize_t
records_scan(PyObject *records, RecordsError *err)
{
    Py_ssize_t n = PyList_GET_SIZE(records), total = 0;
    for (Py_ssize_t i = 0; i < n; i += 2) {
        PyObject *k = PyList_GET_ITEM(records, i);
        PyObject *v = PyList_GET_ITEM(records, i + 1);
        if (!PyBytes_Check(k) || (v != Py_None && !PyBytes_Check(v))) {
            err->type = &PyExc_TypeError;
            err->message = "encode_records: keys must be bytes and values bytes or None";
            return -1;
        }
        if ((size_t)PyBytes_GET_SIZE(k) >= TOMB_LEN || (v != Py_None && (size_t)PyBytes_GET_SIZE(v) >= TOMB_LEN)) {
            err->type = &PyExc_OverflowError;
            err->message = "encode_records: a key or value of 4 GiB or more";
            return -1;
        }
        total += 8 + PyBytes_GET_SIZE(k) + (v == Py_None ? 0 : PyBytes_GET_SIZE(v));
    }
    return total;
}

/* 0 if ``records`` is a flat list of even length, else -1 with an error set (``name``
 * says whose). */
static int
records_list(PyObject *records, const char *name)
{
    if (!PyList_CheckExact(records)) {
        PyErr_Format(PyExc_TypeError, "%s: records must be a list", name);
        return -1;
    }
    if (PyList_GET_SIZE(records) % 2) {
        PyErr_SetString(PyExc_ValueError, "encode_records: a flat list of key, value pairs has an even length");
        return -1;
    }
    return 0;
}

/* Write the records, measured by records_scan, at p. Reads only (the list's items and
 * their bytes): callable with the GIL released while nothing else holds the list. */
static void
put_records(PyObject *records, unsigned char *p)
{
    Py_ssize_t n = PyList_GET_SIZE(records);
    for (Py_ssize_t i = 0; i < n; i += 2) {
        PyObject *k = PyList_GET_ITEM(records, i);
        PyObject *v = PyList_GET_ITEM(records, i + 1);
        uint32_t klen = (uint32_t)PyBytes_GET_SIZE(k);
        uint32_t vlen = v == Py_None ? TOMB_LEN : (uint32_t)PyBytes_GET_SIZE(v);
        for (int b = 0; b < 4; b++) {
            p[b] = (unsigned char)(klen >> (8 * b));
            p[4 + b] = (unsigned char)(vlen >> (8 * b));
        }
        p += 8;
        memcpy(p, PyBytes_AS_STRING(k), klen);
        p += klen;
        if (v != Py_None) {
            memcpy(p, PyBytes_AS_STRING(v), vlen);
            p += vlen;
        }
    }
}

PyObject *
encode_records(PyObject *Py_UNUSED(module), PyObject *records)
{
    if (records_list(records, "encode_records") < 0)
        return NULL;
    RecordsError err;
    Py_ssize_t total = records_scan(records, &err);
    if (total < 0) {
        PyErr_SetString(*err.type, err.message);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        return NULL;
    put_records(records, (unsigned char *)PyBytes_AS_STRING(out));
    return out;
}

const char encode_records_doc[] = PyDoc_STR(
    "encode_records(records) -> bytes: a log frame's payload for a flat list key, value,\n"
    "key, value, ... (value None: a tombstone), as wal.encode_records_py writes it.");

/*
 * lz4_log_frame(records) -> bytes: one whole log frame of kind 2 (``wal.py``): the
 * 9-byte header (u32 payload length, u32 crc32 of the payload, u8 kind 2), then the
 * payload: u32 length of the encoded records, then those records (as encode_records
 * writes them) compressed as one LZ4 block. Why: the reference harness's engine logs
 * in LZ4 at its fastest level; zlib level 1 of every logged record was the largest
 * share of the log writer's CPU, and at 10M profiles the log writer, the merges and the
 * event loop together kept both cores of the machine busy. Only the list's own check
 * and the frame's bytes object are made under the GIL; checking and measuring the
 * records, copying, compressing and the checksum run with it released (``records`` is
 * the writer's own list from ``WriteAheadLog.take``: nothing else holds it, and bytes
 * objects never change). Measuring them under the GIL read every record's key and value
 * object, cold in the cache by then, while the event loop waited for the GIL.
 */
PyObject *
lz4_log_frame(PyObject *Py_UNUSED(module), PyObject *records)
{
    if (lz4_compress == NULL) {
        PyErr_Format(PyExc_RuntimeError, "LZ4 is not available: %s", lz4_missing);
        return NULL;
    }
    if (records_list(records, "lz4_log_frame") < 0)
        return NULL;
    RecordsError err = {NULL, NULL};
    const char *failed = NULL; /* a failure past the records' check, raised as RuntimeError */
    unsigned char *raw = NULL, *o = NULL;
    int got = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t total = records_scan(records, &err);
    if (total > 0x7E000000) { /* LZ4's largest input */
        err.type = &PyExc_OverflowError;
        err.message = "lz4_log_frame: records too large for one frame";
    }
    else if (total >= 0) {
        int bound = lz4_bound((int)total);
        raw = malloc(total ? (size_t)total : 1);
        o = bound > 0 ? malloc(13 + (size_t)bound) : NULL;
        if (raw == NULL || o == NULL)
            failed = "memory";
        else {
            put_records(records, raw);
            got = total ? lz4_compress((const char *)raw, (char *)o + 13, (int)total, bound) : 0;
            if (got < 0 || (total > 0 && got == 0))
                failed = "LZ4 could not compress a log frame";
            else {
                uint32_t plen = (uint32_t)got + 4, crc;
                for (int b = 0; b < 4; b++)
                    o[9 + b] = (unsigned char)((uint32_t)total >> (8 * b));
                crc = (uint32_t)crc32(0L, o + 9, (uInt)plen);
                for (int b = 0; b < 4; b++) {
                    o[b] = (unsigned char)(plen >> (8 * b));
                    o[4 + b] = (unsigned char)(crc >> (8 * b));
                }
                o[8] = 2;
            }
        }
    }
    free(raw);
    Py_END_ALLOW_THREADS
    PyObject *out = NULL;
    if (err.type != NULL)
        PyErr_SetString(*err.type, err.message);
    else if (failed != NULL && strcmp(failed, "memory") == 0)
        PyErr_NoMemory();
    else if (failed != NULL)
        PyErr_SetString(PyExc_RuntimeError, failed);
    else
        out = PyBytes_FromStringAndSize((const char *)o, 13 + (Py_ssize_t)got);
    free(o);
    return out;
}

const char lz4_log_frame_doc[] = PyDoc_STR(
    "lz4_log_frame(records) -> bytes: a whole log frame of kind 2 (the records encoded as\n"
    "encode_records does, then compressed as one LZ4 block after their u32 length).");
