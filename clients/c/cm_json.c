/* cm_json.c — see cm_json.h. */
#include "cm_json.h"

#include <string.h>

static const char *ws(const char *s, const char *end) {
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++;
    return s;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* s at the opening quote; returns past the closing quote, or NULL. */
static const char *skip_string(const char *s, const char *end) {
    s++;
    while (s < end) {
        unsigned char c = (unsigned char)*s;
        if (c == '"') return s + 1;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            if (++s >= end) return NULL;
            switch (*s) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                s++;
                break;
            case 'u':
                if (end - s < 5) return NULL;
                for (int i = 1; i <= 4; i++)
                    if (hexval(s[i]) < 0) return NULL;
                s += 5;
                break;
            default:
                return NULL;
            }
        } else {
            s++;
        }
    }
    return NULL;
}

static const char *skip_number(const char *s, const char *end) {
    if (s < end && *s == '-') s++;
    if (s >= end) return NULL;
    if (*s == '0') {
        s++;
    } else if (*s >= '1' && *s <= '9') {
        while (s < end && *s >= '0' && *s <= '9') s++;
    } else {
        return NULL;
    }
    if (s < end && *s == '.') {
        s++;
        if (s >= end || *s < '0' || *s > '9') return NULL;
        while (s < end && *s >= '0' && *s <= '9') s++;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < end && (*s == '+' || *s == '-')) s++;
        if (s >= end || *s < '0' || *s > '9') return NULL;
        while (s < end && *s >= '0' && *s <= '9') s++;
    }
    return s;
}

static const char *literal(const char *s, const char *end, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(end - s) < n || memcmp(s, word, n) != 0) return NULL;
    return s + n;
}

/* s at a value (no leading whitespace); returns past it, or NULL. */
static const char *skip_value(const char *s, const char *end, int depth) {
    if (s >= end) return NULL;
    switch (*s) {
    case '"':
        return skip_string(s, end);
    case 't':
        return literal(s, end, "true");
    case 'f':
        return literal(s, end, "false");
    case 'n':
        return literal(s, end, "null");
    case '[':
    case '{': {
        char close = *s == '[' ? ']' : '}';
        int object = *s == '{';
        if (depth >= CMJ_MAX_DEPTH) return NULL;
        s = ws(s + 1, end);
        if (s < end && *s == close) return s + 1;
        for (;;) {
            if (object) {
                if (s >= end || *s != '"') return NULL;
                s = skip_string(s, end);
                if (!s) return NULL;
                s = ws(s, end);
                if (s >= end || *s != ':') return NULL;
                s = ws(s + 1, end);
            }
            s = skip_value(s, end, depth + 1);
            if (!s) return NULL;
            s = ws(s, end);
            if (s >= end) return NULL;
            if (*s == close) return s + 1;
            if (*s != ',') return NULL;
            s = ws(s + 1, end);
        }
    }
    default:
        return skip_number(s, end);
    }
}

int cmj_document(const char *text, size_t n, cmj_span *value) {
    const char *end = text + n;
    const char *s = ws(text, end);
    const char *v = skip_value(s, end, 0);
    if (!v || ws(v, end) != end) return -1;
    value->p = s;
    value->n = (size_t)(v - s);
    return 0;
}

int cmj_type(cmj_span v) {
    if (v.n == 0 || !v.p) return CMJ_INVALID;
    switch (v.p[0]) {
    case '"': return CMJ_STRING;
    case '{': return CMJ_OBJECT;
    case '[': return CMJ_ARRAY;
    case 't': return CMJ_TRUE;
    case 'f': return CMJ_FALSE;
    case 'n': return CMJ_NULL;
    default: return (v.p[0] == '-' || (v.p[0] >= '0' && v.p[0] <= '9')) ? CMJ_NUMBER : CMJ_INVALID;
    }
}

/* Compares a JSON string span (with quotes) to key, unescaping. */
static int key_equals(const char *s, const char *end, const char *key) {
    char buf[64];
    cmj_span k = {s, (size_t)(end - s)};
    if (cmj_string(k, buf, sizeof buf) != 0) return 0;
    return strcmp(buf, key) == 0;
}

int cmj_get(cmj_span object, const char *key, cmj_span *value) {
    if (cmj_type(object) != CMJ_OBJECT) return 0;
    const char *end = object.p + object.n;
    const char *s = ws(object.p + 1, end);
    while (s < end && *s == '"') {
        const char *k = s;
        s = skip_string(s, end);
        if (!s) return 0;
        int match = key_equals(k, s, key);
        s = ws(s, end);
        if (s >= end || *s != ':') return 0;
        s = ws(s + 1, end);
        const char *v = skip_value(s, end, 1);
        if (!v) return 0;
        if (match) {
            value->p = s;
            value->n = (size_t)(v - s);
            return 1;
        }
        s = ws(v, end);
        if (s < end && *s == ',') s = ws(s + 1, end);
    }
    return 0;
}

int cmj_next(cmj_span array, size_t *cursor, cmj_span *element) {
    if (cmj_type(array) != CMJ_ARRAY) return 0;
    const char *end = array.p + array.n;
    size_t at = *cursor == 0 ? 1 : *cursor;
    if (at >= array.n) return 0;
    const char *s = ws(array.p + at, end);
    if (s < end && *s == ',') s = ws(s + 1, end);
    if (s >= end || *s == ']') return 0;
    const char *v = skip_value(s, end, 1);
    if (!v) return 0;
    element->p = s;
    element->n = (size_t)(v - s);
    *cursor = (size_t)(v - array.p);
    return 1;
}

int cmj_int64(cmj_span v, int64_t *out) {
    if (cmj_type(v) != CMJ_NUMBER) return -1;
    const char *s = v.p, *end = v.p + v.n;
    int negative = 0;
    if (*s == '-') {
        negative = 1;
        s++;
    }
    if (s >= end) return -1;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t value = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9') return -1; /* a fraction or an exponent */
        unsigned d = (unsigned)(*s - '0');
        if (value > (limit - d) / 10) return -1;
        value = value * 10 + d;
    }
    *out = negative ? (value == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)value) : (int64_t)value;
    return 0;
}

/* Appends one code point's UTF-8 if it all fits (n bytes used of cap, one kept for NUL). */
static int put_utf8(char *buf, size_t cap, size_t *n, uint32_t cp) {
    char tmp[4];
    size_t k;
    if (cp < 0x80) {
        tmp[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        tmp[0] = (char)(0xC0 | (cp >> 6));
        tmp[1] = (char)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        tmp[0] = (char)(0xE0 | (cp >> 12));
        tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[2] = (char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        tmp[0] = (char)(0xF0 | (cp >> 18));
        tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[3] = (char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    if (*n + k + 1 > cap) return -1;
    memcpy(buf + *n, tmp, k);
    *n += k;
    return 0;
}

static uint32_t hex4(const char *s) {
    return (uint32_t)(hexval(s[0]) << 12 | hexval(s[1]) << 8 | hexval(s[2]) << 4 | hexval(s[3]));
}

int cmj_string(cmj_span v, char *buf, size_t cap) {
    if (cap == 0) return -1;
    buf[0] = '\0';
    if (cmj_type(v) != CMJ_STRING || v.n < 2 || v.p[v.n - 1] != '"') return -1;
    const char *s = v.p + 1, *end = v.p + v.n - 1;
    size_t n = 0;
    int cut = 0;
    while (s < end) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20) return -1;
        if (c != '\\') {
            /* A raw byte; a multi-byte UTF-8 sequence is copied whole or not at all. */
            size_t k = 1;
            if (c >= 0xC0) {
                while (s + k < end && k < 4 && ((unsigned char)s[k] & 0xC0) == 0x80) k++;
            }
            if (!cut && n + k + 1 <= cap) {
                memcpy(buf + n, s, k);
                n += k;
            } else {
                cut = 1;
            }
            s += k;
            continue;
        }
        if (end - s < 2) return -1;
        uint32_t cp;
        switch (s[1]) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (end - s < 6) return -1;
            for (int i = 2; i < 6; i++)
                if (hexval(s[i]) < 0) return -1;
            cp = hex4(s + 2);
            if (cp >= 0xD800 && cp <= 0xDBFF && end - s >= 12 && s[6] == '\\' && s[7] == 'u' &&
                hexval(s[8]) >= 0 && hexval(s[9]) >= 0 && hexval(s[10]) >= 0 && hexval(s[11]) >= 0) {
                uint32_t low = hex4(s + 8);
                if (low >= 0xDC00 && low <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    s += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD; /* a lone surrogate */
            if (cp == 0) return -1;
            s += 4;
            break;
        default:
            return -1;
        }
        s += 2;
        if (!cut && put_utf8(buf, cap, &n, cp) != 0) cut = 1;
    }
    buf[n] = '\0';
    return cut;
}

void cmj_init(cmj_writer *w, char *buf, size_t cap) {
    w->buf = buf;
    w->cap = cap;
    w->len = 0;
    w->overflow = cap == 0;
    if (cap) buf[0] = '\0';
}

void cmj_raw(cmj_writer *w, const char *text, size_t n) {
    if (w->overflow) return;
    if (n + 1 > w->cap - w->len) {
        w->overflow = 1;
        return;
    }
    memcpy(w->buf + w->len, text, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

void cmj_str(cmj_writer *w, const char *s) {
    static const char hex[] = "0123456789abcdef";
    cmj_raw(w, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[6];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            cmj_raw(w, esc, 2);
        } else if (c < 0x20 || c == 0x7F) {
            esc[0] = '\\';
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            cmj_raw(w, esc, 6);
        } else {
            cmj_raw(w, (const char *)&c, 1);
        }
    }
    cmj_raw(w, "\"", 1);
}

void cmj_int(cmj_writer *w, int64_t v) {
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[sizeof tmp - 1 - n++] = '-';
    cmj_raw(w, tmp + sizeof tmp - n, n);
}

void cmj_key(cmj_writer *w, const char *key) {
    if (w->len > 0 && w->buf[w->len - 1] != '{') cmj_raw(w, ",", 1);
    cmj_str(w, key);
    cmj_raw(w, ":", 1);
}
