/*
 * Sorting a memtable's entries for a flush: a byte-wise radix sort (sort.c says why).
 */
#ifndef LSM_SORT_H
#define LSM_SORT_H

#include "entry.h"

/* Sorts n entries of distinct keys (a memtable's) by key_cmp: nothing to do when they are
 * in order already (the profiles tree's memtable after an insert of increasing ids), else
 * the radix sort. */
void sort_entries(Entry *a, Py_ssize_t n);

#endif
