/*
 * write_blocks: a flush or a merge in one call (write_blocks.c says what and why).
 */
#ifndef LSM_WRITE_BLOCKS_H
#define LSM_WRITE_BLOCKS_H

#include "entry.h"

/* BlockCorrupt(source_index, block_index, reason): a damaged source block; made by the
 * module's init. */
extern PyObject *BlockCorrupt;

PyObject *write_blocks(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
extern const char write_blocks_doc[];

#endif
