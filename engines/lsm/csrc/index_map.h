/*
 * IndexMap: a segment's block index mapped read-only, as a buffer (index_map.c says
 * what and why).
 */
#ifndef LSM_INDEX_MAP_H
#define LSM_INDEX_MAP_H

#include "entry.h"

extern PyTypeObject IndexMapType;

#endif
