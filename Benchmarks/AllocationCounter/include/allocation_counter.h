#ifndef COINMECH_ALLOCATION_COUNTER_H
#define COINMECH_ALLOCATION_COUNTER_H
#include <stdint.h>
/* Heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by
   this process so far, counted by interposing glibc's allocator. */
uint64_t coinmech_allocation_count(void);
#endif
