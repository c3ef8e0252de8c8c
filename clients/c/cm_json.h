/* cm_json.h — the library's own JSON reader and writer (internal; not installed).
 *
 * The reader never allocates and never copies: a value is a span of the line it came from.
 * cmj_document() validates a whole line first (RFC 8259 grammar, nesting at most
 * CMJ_MAX_DEPTH deep, so recursion is bounded); the accessors then walk validated text and
 * still check every bound. Every input gives a result or an error, never a read outside it.
 * The writer fills a caller's fixed buffer and records overflow instead of growing.
 */
#ifndef CM_JSON_H
#define CM_JSON_H

#include <stddef.h>
#include <stdint.h>

#define CMJ_MAX_DEPTH 32

typedef struct {
    const char *p;
    size_t n;
} cmj_span;

enum { CMJ_INVALID = 0, CMJ_NULL, CMJ_FALSE, CMJ_TRUE, CMJ_NUMBER, CMJ_STRING, CMJ_ARRAY, CMJ_OBJECT };

/* The whole text must be one JSON value, whitespace around it allowed: 0 and *value, or -1. */
int cmj_document(const char *text, size_t n, cmj_span *value);
int cmj_type(cmj_span v);
/* An object's member by key (unescaped comparison): 1 found, 0 not there or not an object. */
int cmj_get(cmj_span object, const char *key, cmj_span *value);
/* Iterates an array: *cursor starts at 0; 1 and *element while there is one, else 0. */
int cmj_next(cmj_span array, size_t *cursor, cmj_span *element);
/* An integer without fraction or exponent that fits int64: 0, else -1. */
int cmj_int64(cmj_span v, int64_t *out);
/* A string, unescaped, NUL-terminated in buf[cap]: 0; 1 when cut to fit (still a valid
 * C string, cut on a UTF-8 boundary); -1 when not a string or it holds \u0000. */
int cmj_string(cmj_span v, char *buf, size_t cap);

typedef struct {
    char *buf;
    size_t cap;
    size_t len;
    int overflow;
} cmj_writer;

void cmj_init(cmj_writer *w, char *buf, size_t cap);
void cmj_raw(cmj_writer *w, const char *text, size_t n);
void cmj_str(cmj_writer *w, const char *s); /* a quoted, escaped JSON string */
void cmj_int(cmj_writer *w, int64_t v);
void cmj_key(cmj_writer *w, const char *key); /* ,"key": (the comma when not first) */

#endif
