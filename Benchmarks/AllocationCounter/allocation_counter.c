/* Interposes glibc's allocator in the bench executable to count allocations; forwards to
   glibc's own __libc_* functions. Used to show that deciding a reading allocates nothing. */
#include <stdatomic.h>
#include <stddef.h>
#include "allocation_counter.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic uint64_t allocations;

uint64_t coinmech_allocation_count(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }

static inline void count(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count(); return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    count();
    void *p = __libc_memalign(alignment, size);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}

uint64_t coinmech_allocations_in_calls(void (*call)(void *, const void *, void *), void *instance, const void *arguments,
                                       size_t argument_size, size_t count, void *output, size_t output_size) {
    uint64_t before = coinmech_allocation_count();
    for (size_t i = 0; i < count; i++) {
        /* The host zeroes the output before each call and says its size in its first 4 bytes. */
        unsigned char *bytes = output;
        for (size_t b = 0; b < output_size; b++) bytes[b] = 0;
        *(uint32_t *)output = (uint32_t)output_size;
        call(instance, (const unsigned char *)arguments + i * argument_size, output);
    }
    return coinmech_allocation_count() - before;
}
