#ifndef COINMECH_ALLOCATION_COUNTER_H
#define COINMECH_ALLOCATION_COUNTER_H
#include <stdint.h>
/* Heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by
   this process so far, counted by interposing glibc's allocator. */
uint64_t coinmech_allocation_count(void);
#include <stddef.h>
/* Allocations made by `count` calls of call(instance, &arguments[i], output), output zeroed with
   its size in its first four bytes before each: a plugin's validate, counted with nothing of the
   caller's own code in the loop. */
uint64_t coinmech_allocations_in_calls(void (*call)(void *, const void *, void *), void *instance, const void *arguments,
                                       size_t argument_size, size_t count, void *output, size_t output_size);
#endif
