/*
 * The write-ahead log's frames (wal.py): a frame's payload of records (encode_records)
 * and a whole LZ4 frame (lz4_log_frame); log_frame.c says what and why.
 */
#ifndef LSM_LOG_FRAME_H
#define LSM_LOG_FRAME_H

#include "entry.h"

PyObject *encode_records(PyObject *module, PyObject *records);
extern const char encode_records_doc[];

PyObject *lz4_log_frame(PyObject *module, PyObject *records);
extern const char lz4_log_frame_doc[];

#endif
