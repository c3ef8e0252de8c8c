/*
 * coinmech_plugin.h — the whole contract between coinmechd and a validator plugin.
 *
 * A plugin is a shared object that exports one C symbol, COINMECH_PLUGIN_ENTRY_SYMBOL.
 * The host calls it with the ABI version it speaks and a zeroed struct it owns; the
 * plugin fills that struct and returns 0. Only C types cross this boundary, and the
 * host copies every string it keeps. See docs/PLUGINS.md.
 *
 * Threading: the host never calls validate() on one instance from two threads at
 * once, so an instance may keep state (the repeat guard does). create() and
 * destroy() may run on any thread.
 */
#ifndef COINMECH_PLUGIN_H
#define COINMECH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes. Bumped on any incompatible change. */
#define COINMECH_PLUGIN_ABI_VERSION 1u

/** The one symbol a plugin exports (type: coinmech_plugin_entry_fn). */
#define COINMECH_PLUGIN_ENTRY_SYMBOL "coinmech_plugin_entry"

/* ---- Reading: one coin's measurement, owned by the host. ---- */

/** Bits of coinmech_reading.flags: which measurements the mech delivered. */
enum {
    COINMECH_READING_HAS_DIAMETER = 1u << 0,
    COINMECH_READING_HAS_WEIGHT = 1u << 1,
    COINMECH_READING_HAS_THICKNESS = 1u << 2,
    COINMECH_READING_HAS_CHANNEL = 1u << 3,
};

typedef struct coinmech_reading {
    uint32_t size;          /**< sizeof(coinmech_reading) as the host built it; fields past it are absent. */
    uint32_t flags;         /**< COINMECH_READING_HAS_* */
    uint64_t device_seq;    /**< the mech's own sequence number */
    uint64_t timestamp_ns;  /**< CLOCK_MONOTONIC when the reading arrived */
    double diameter_mm;
    double weight_g;
    double thickness_mm;
    uint32_t channel;       /**< pulse count, for pulse mechs */
    uint32_t reserved;      /**< zero */
    const char *source;     /**< source name, NUL-terminated, valid during the call only */
} coinmech_reading;

/* ---- Decision: the plugin's verdict, written into a host-owned struct. ---- */

typedef enum coinmech_verdict {
    COINMECH_VERDICT_PASS = 0,   /**< not mine: ask the next link */
    COINMECH_VERDICT_ACCEPT = 1, /**< a genuine coin: currency, code and value_minor are set */
    COINMECH_VERDICT_REJECT = 2, /**< return the coin: reason and message are set */
} coinmech_verdict;

#define COINMECH_CURRENCY_SIZE 4u   /* ISO 4217 code + NUL */
#define COINMECH_CODE_SIZE 32u      /* denomination code ("quarter", "EUR_2") + NUL */
#define COINMECH_REASON_SIZE 32u    /* machine-readable reason ("out_of_range") + NUL */
#define COINMECH_MESSAGE_SIZE 128u  /* a sentence for people + NUL */

typedef struct coinmech_decision {
    uint32_t size;     /**< sizeof(coinmech_decision) as the host built it; write nothing past it. */
    uint32_t verdict;  /**< coinmech_verdict; the host zeroes the struct (PASS) before each call. */
    int64_t value_minor;                    /**< ACCEPT: value in minor units (cents) */
    char currency[COINMECH_CURRENCY_SIZE];  /**< ACCEPT: "USD" */
    char code[COINMECH_CODE_SIZE];          /**< ACCEPT: "quarter" */
    char reason[COINMECH_REASON_SIZE];      /**< REJECT: "not_a_number" */
    char message[COINMECH_MESSAGE_SIZE];    /**< REJECT: "diameter is NaN" */
} coinmech_decision;

/* ---- Plugin: filled by the plugin's entry function. ---- */

typedef struct coinmech_plugin {
    uint32_t abi_version; /**< the ABI the plugin was built for (COINMECH_PLUGIN_ABI_VERSION) */
    uint32_t size;        /**< sizeof(coinmech_plugin) as the plugin was built */
    const char *name;     /**< static string, e.g. "coin-table" */
    const char *version;  /**< static string, e.g. "1.0.0" */
    /**
     * Make one instance from its JSON configuration (an object; "{}" when the link has none).
     * On failure return NULL and write a NUL-terminated message of at most error_size bytes.
     */
    void *(*create)(const char *config_json, char *error, size_t error_size);
    /** Decide one reading. Must not block, allocate on every call, or keep the pointers. */
    void (*validate)(void *instance, const coinmech_reading *reading, coinmech_decision *decision);
    /** Free an instance. Called once, after the last validate() of that instance. */
    void (*destroy)(void *instance);
    /**
     * Optional (may be NULL): describe the instance as a JSON object into buf (NUL-terminated,
     * at most size bytes); returns the length it needed. A "warnings" array of strings is
     * logged by the host at load time (coin-table reports overlapping windows there).
     */
    size_t (*describe)(void *instance, char *buf, size_t size);
} coinmech_plugin;

/** Entry point: fill *plugin for host ABI host_abi_version; return 0, or non-zero to refuse. */
typedef int (*coinmech_plugin_entry_fn)(uint32_t host_abi_version, coinmech_plugin *plugin);

/* ---- Optional: explain a reading to a person (ABI 1, optional symbol). ---- */

/**
 * A plugin may export this symbol beside the entry symbol; the host looks it up with dlsym and
 * treats its absence as "no explanation" (older plugins and hosts are unaffected: nothing in
 * coinmech_plugin changes). `coinmechd --explain-reading` calls it, never the deciding path.
 *
 * explain(instance, reading, buf, size): instance is one this image's create() returned. Write
 * a JSON object NUL-terminated into buf (at most size bytes) and return the length it needed
 * without the NUL; the host calls again with a larger buffer if that did not fit. The object's
 * "lines" array of strings is shown to people as it is; any other keys are the plugin's own
 * (coin-table: "candidates" with each denomination's normalised distance). The same rules as
 * validate() hold: the host never calls it concurrently with validate() on one instance, and
 * the plugin keeps no pointer it was given.
 */
#define COINMECH_PLUGIN_EXPLAIN_SYMBOL "coinmech_plugin_explain"

typedef size_t (*coinmech_plugin_explain_fn)(void *instance, const coinmech_reading *reading, char *buf, size_t size);

/* ---- Helpers for C plugins (header-only, no allocation). ---- */

static inline void coinmech_copy_field(char *dst, size_t dst_size, const char *src) {
    size_t n = strlen(src);
    if (n >= dst_size) n = dst_size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static inline void coinmech_decision_reject(coinmech_decision *d, const char *reason, const char *message) {
    d->verdict = COINMECH_VERDICT_REJECT;
    coinmech_copy_field(d->reason, sizeof d->reason, reason);
    coinmech_copy_field(d->message, sizeof d->message, message);
}

static inline void coinmech_decision_accept(coinmech_decision *d, const char *currency, const char *code,
                                            int64_t value_minor) {
    d->verdict = COINMECH_VERDICT_ACCEPT;
    d->value_minor = value_minor;
    coinmech_copy_field(d->currency, sizeof d->currency, currency);
    coinmech_copy_field(d->code, sizeof d->code, code);
}

#ifdef __cplusplus
}
#endif

#endif /* COINMECH_PLUGIN_H */
