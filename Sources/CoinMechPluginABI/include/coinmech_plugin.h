/*
 * coinmech_plugin.h — the whole contract between coinmechd and a validator plugin (ABI 2).
 *
 * A plugin is a shared object that exports one C symbol, COINMECH_PLUGIN_ENTRY_SYMBOL. The host
 * calls it with the ABI version it speaks and a zeroed coinmech_plugin it owns, whose `size` says
 * how large the host's struct is; the plugin copies its own description into it (the
 * coinmech_plugin_offer() helper below does it right) and returns 0. Only C types cross this
 * boundary, and the host copies every string it keeps. docs/PLUGINS.md is the long version.
 *
 * ---- Versions ----
 * COINMECH_PLUGIN_ABI_VERSION is (major << 16) | minor. The major must match the host's: a change
 * of major breaks plugins. A minor adds to the end of the structs below and never moves a field,
 * so a host loads a plugin built for its own or a lower minor; a plugin built for a higher minor
 * than the host's is refused with a message naming both. (ABI 1 wrote a plain 1: its major is 1.)
 *
 * ---- Growable structs ----
 * Every struct starts with, or carries, its size. Each side reads and writes only the first
 * min(host size, plugin size) bytes: a field past the other side's size is absent (read it with
 * COINMECH_HAS_FIELD). The host zeroes every struct it hands over for output (coinmech_plugin
 * before the entry, coinmech_decision before each validate) and sets its size; the plugin writes
 * nothing past that size.
 *
 * ---- Threading contract ----
 * 1. The entry function may be called more than once, on any thread; it only fills the struct.
 * 2. create() may run on any thread, at the same time as validate(), describe() or destroy() of
 *    other instances of the same plugin on other threads: a reload creates the next generation's
 *    instances while the current one is still deciding. Keep nothing create() writes shared with
 *    other instances without a lock.
 * 3. validate() is never called on one instance from two threads at once, and each call on an
 *    instance happens after the previous one returned (an instance may keep state without locks,
 *    as the repeat guard does). Successive calls may come from different threads.
 * 4. Different instances are validated concurrently on different threads only if the plugin sets
 *    COINMECH_PLUGIN_CONCURRENT_INSTANCES (today's host decides on one thread; `coinmech-pluginval`
 *    checks the promise at strictness 7 and above).
 * 5. describe() and explain() are never called while validate() runs on the same instance.
 * 6. destroy() is called once, after the instance's last call returned, and usually on another
 *    thread than validate(): never on the deciding thread, so it may take its time, but a
 *    destroy() that never returns keeps a host thread.
 * 7. The host's services (coinmech_host) may be called from any thread, from create() until
 *    destroy() returns; the coinmech_host pointer and its strings stay valid until then.
 * 8. validate() must not block, and should not allocate on every call: the mech waits about 50 ms
 *    for an answer, for the whole chain. A link over its time budget is contained (the reading is
 *    returned and the link marked hung, or, with `isolation: process`, its process is killed).
 *
 * ---- Reading kinds ----
 * A reading is COINMECH_READING_MEASURED (a mech that measures coins and asks the host whether to
 * accept: diameter, weight, thickness, or a pulse mech's channel) or COINMECH_READING_COIN_ID (an
 * acceptor that classified the coin itself and already took it, such as a ccTalk validator: a
 * coin position, its id string such as "EU200A", and the sorter path). A plugin declares the kinds
 * it handles in `reading_kinds`; the host gives each link only those. What a verdict means per
 * kind is in docs/PLUGINS.md (on a coin id, a reject cannot return the coin: it is not credited).
 *
 * ---- The alloy axis (ABI 2.1) ----
 * A measured reading from a mech with an eddy-current sensor also carries the coin's apparent
 * conductivity at the mech's low and high frequency (% IACS) and, optionally, its apparent
 * permeability (COINMECH_READING_HAS_ALLOY, _HAS_PERMEABILITY). The fields lie past ABI 2.0's
 * struct: read them only when COINMECH_HAS_FIELD says the host's reading holds them (a 2.0 host's
 * does not). A plugin that judges them declares COINMECH_KINDS_ALLOY besides
 * COINMECH_KINDS_MEASURED; a plugin that does not still gets every measured reading and decides
 * on the rest, as before. `coinmech-pluginval` holds a plugin declaring it to what it promises.
 */
#ifndef COINMECH_PLUGIN_H
#define COINMECH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI this header describes: major 2, minor 1 (2.1 added the alloy axis). */
#define COINMECH_PLUGIN_ABI_MAJOR 2u
#define COINMECH_PLUGIN_ABI_MINOR 1u
#define COINMECH_PLUGIN_ABI_VERSION 0x00020001u /* (MAJOR << 16) | MINOR */
/** Major and minor of a version word; ABI 1 wrote a plain 1 (major 1, minor 0). */
#define COINMECH_ABI_MAJOR_OF(version) ((version) < 0x10000u ? (version) : (version) >> 16)
#define COINMECH_ABI_MINOR_OF(version) ((version) < 0x10000u ? 0u : (version) & 0xFFFFu)

/** The one symbol a plugin exports (type: coinmech_plugin_entry_fn). */
#define COINMECH_PLUGIN_ENTRY_SYMBOL "coinmech_plugin_entry"

/** Whether the struct at `ptr` (which starts with or carries a `size`) holds `field` of `type`. */
#define COINMECH_HAS_FIELD(ptr, type, field) \
    ((size_t)(ptr)->size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* ---- Reading: one coin, owned by the host, valid during the call only. ---- */

/** Bits of coinmech_reading.flags: which fields the reading carries. */
enum {
    COINMECH_READING_HAS_DIAMETER = 1u << 0,
    COINMECH_READING_HAS_WEIGHT = 1u << 1,
    COINMECH_READING_HAS_THICKNESS = 1u << 2,
    COINMECH_READING_HAS_CHANNEL = 1u << 3,
    COINMECH_READING_HAS_COIN_ID = 1u << 4,
    COINMECH_READING_HAS_ALLOY = 1u << 5,        /**< ABI 2.1: conductivity_low_iacs and conductivity_high_iacs */
    COINMECH_READING_HAS_PERMEABILITY = 1u << 6, /**< ABI 2.1: permeability (only with HAS_ALLOY) */
};

/** coinmech_reading.kind. */
typedef enum coinmech_reading_kind {
    COINMECH_READING_MEASURED = 0, /**< figures the mech measured; the host answers accept or return */
    COINMECH_READING_COIN_ID = 1,  /**< an acceptor's own classification (ccTalk); the coin is already in */
} coinmech_reading_kind;

/** Bits of coinmech_plugin.reading_kinds: 1 << coinmech_reading_kind. */
#define COINMECH_KINDS_MEASURED 0x1u
#define COINMECH_KINDS_COIN_ID 0x2u
/**
 * ABI 2.1: the plugin judges the alloy axis of measured readings (with COINMECH_KINDS_MEASURED;
 * alone it is refused). It is a promise, not a filter: measured readings with and without the
 * axis reach every MEASURED link alike.
 */
#define COINMECH_KINDS_ALLOY 0x4u

#define COINMECH_COIN_ID_SIZE 16u   /* "EU200A" + NUL, with room */

typedef struct coinmech_reading {
    uint32_t size;          /**< sizeof(coinmech_reading) as the host built it */
    uint32_t flags;         /**< COINMECH_READING_HAS_* */
    uint64_t device_seq;    /**< the mech's own sequence number */
    uint64_t timestamp_ns;  /**< CLOCK_MONOTONIC when the reading arrived */
    double diameter_mm;     /**< MEASURED */
    double weight_g;        /**< MEASURED */
    double thickness_mm;    /**< MEASURED */
    uint32_t channel;       /**< MEASURED by a pulse mech: the pulse count */
    uint32_t kind;          /**< coinmech_reading_kind (ABI 1's reserved zero: MEASURED) */
    const char *source;     /**< source name, NUL-terminated */
    /* ABI 2.0 */
    uint32_t coin_position; /**< COIN_ID: the acceptor's coin position (ccTalk: 1–16) */
    uint32_t sorter_path;   /**< COIN_ID: where the acceptor sent the coin (0: unknown) */
    char coin_id[COINMECH_COIN_ID_SIZE]; /**< COIN_ID: the acceptor's id of the position, e.g. "EU200A" */
    /* ABI 2.1: the alloy axis (COINMECH_HAS_FIELD first: a 2.0 host's reading ends above) */
    double conductivity_low_iacs;  /**< HAS_ALLOY: apparent conductivity at the mech's low frequency, % IACS */
    double conductivity_high_iacs; /**< HAS_ALLOY: at its high frequency, % IACS */
    double permeability;           /**< HAS_PERMEABILITY: apparent relative permeability (1: not magnetic) */
} coinmech_reading;

/** Whether `reading` carries the alloy axis (and the host's struct holds it). */
static inline int coinmech_reading_has_alloy(const coinmech_reading *reading) {
    return COINMECH_HAS_FIELD(reading, coinmech_reading, conductivity_high_iacs) && (reading->flags & COINMECH_READING_HAS_ALLOY);
}

/* ---- Decision: the plugin's verdict, written into a host-owned, zeroed struct. ---- */

typedef enum coinmech_verdict {
    COINMECH_VERDICT_PASS = 0,   /**< not mine: ask the next link */
    COINMECH_VERDICT_ACCEPT = 1, /**< a genuine coin: currency, code and value_minor are set */
    COINMECH_VERDICT_REJECT = 2, /**< return it (COIN_ID: do not credit it): reason and message are set */
} coinmech_verdict;

#define COINMECH_CURRENCY_SIZE 4u   /* ISO 4217 code + NUL */
#define COINMECH_CODE_SIZE 32u      /* denomination code ("quarter", "EUR_2") + NUL */
#define COINMECH_REASON_SIZE 32u    /* machine-readable reason ("out_of_range") + NUL */
#define COINMECH_MESSAGE_SIZE 128u  /* a sentence for people + NUL */

typedef struct coinmech_decision {
    uint32_t size;     /**< sizeof(coinmech_decision) as the host built it; write nothing past it */
    uint32_t verdict;  /**< coinmech_verdict; zero (PASS) on entry */
    int64_t value_minor;                    /**< ACCEPT: value in minor units (cents) */
    char currency[COINMECH_CURRENCY_SIZE];  /**< ACCEPT: "USD" */
    char code[COINMECH_CODE_SIZE];          /**< ACCEPT: "quarter" */
    char reason[COINMECH_REASON_SIZE];      /**< REJECT: "not_a_number" */
    char message[COINMECH_MESSAGE_SIZE];    /**< REJECT: "diameter is NaN" */
} coinmech_decision;

/* ---- Host services, handed to create(). ---- */

typedef enum coinmech_log_level {
    COINMECH_LOG_ERROR = 0,
    COINMECH_LOG_WARNING = 1,
    COINMECH_LOG_INFO = 2,
    COINMECH_LOG_DEBUG = 3,
} coinmech_log_level;

typedef struct coinmech_host {
    uint32_t size;            /**< sizeof(coinmech_host) as the host built it */
    uint32_t abi_version;     /**< the host's COINMECH_PLUGIN_ABI_VERSION */
    const char *instance_name;/**< the link's name ("usd"), valid until destroy() returns */
    void *context;            /**< pass it back to the functions below */
    /** A line for the daemon's log, under the link's name. Thread-safe; rate-limited by the host. */
    void (*log)(void *context, uint32_t level, const char *message);
    /** CLOCK_MONOTONIC in nanoseconds: the clock of reading timestamps and deadlines. */
    uint64_t (*monotonic_ns)(void *context);
} coinmech_host;

/* ---- Plugin: described by the plugin, copied into the host's struct by the entry. ---- */

/** Bits of coinmech_plugin.flags. */
enum {
    /** Distinct instances may run validate() at the same time on different threads. */
    COINMECH_PLUGIN_CONCURRENT_INSTANCES = 1u << 0,
};

typedef struct coinmech_plugin {
    uint32_t abi_version;     /**< COINMECH_PLUGIN_ABI_VERSION the plugin was built with */
    uint32_t size;            /**< on entry: the host's sizeof; after: the bytes the plugin wrote */
    const char *name;         /**< static, e.g. "coin-table" */
    const char *version;      /**< static, e.g. "1.2.0" */
    const char *license;      /**< static SPDX identifier, e.g. "MIT" */
    const char *description;  /**< static, one sentence for people */
    uint32_t reading_kinds;   /**< COINMECH_KINDS_*: at least one */
    uint32_t flags;           /**< COINMECH_PLUGIN_* */
    /**
     * Make one instance from its JSON configuration (an object; "{}" when the link has none).
     * On failure return NULL and write a NUL-terminated message of at most error_size bytes.
     */
    void *(*create)(const coinmech_host *host, const char *config_json, char *error, size_t error_size);
    /** Decide one reading; the plugin keeps no pointer it is given. */
    void (*validate)(void *instance, const coinmech_reading *reading, coinmech_decision *decision);
    /** Free an instance. Called once, after its last other call returned. */
    void (*destroy)(void *instance);
    /**
     * Optional (NULL): describe the instance as a JSON object into buf (NUL-terminated, at most
     * size bytes); return the length it needs without the NUL (the host calls again with more room
     * if it did not fit). A "warnings" array of strings is logged when the chain is built.
     */
    size_t (*describe)(void *instance, char *buf, size_t size);
    /**
     * Optional (NULL): how the instance judges `reading`, for a person, as a JSON object written
     * like describe(); its "lines" array of strings is shown as it is by
     * `coinmechd --explain-reading`. Never called on the deciding path.
     */
    size_t (*explain)(void *instance, const coinmech_reading *reading, char *buf, size_t size);
} coinmech_plugin;

/** Entry point: fill *plugin for host ABI host_abi_version; return 0, or non-zero to refuse. */
typedef int (*coinmech_plugin_entry_fn)(uint32_t host_abi_version, coinmech_plugin *plugin);

/* ---- Helpers (header-only, no allocation). ---- */

/**
 * The whole body of an entry function: copies the plugin's own static description into the host's
 * struct, never past the host's size, and refuses a host of another major version.
 *
 *     static const coinmech_plugin me = { COINMECH_PLUGIN_ABI_VERSION, sizeof me, "name", ... };
 *     int coinmech_plugin_entry(uint32_t host_abi, coinmech_plugin *out) {
 *         return coinmech_plugin_offer(host_abi, out, &me);
 *     }
 */
static inline int coinmech_plugin_offer(uint32_t host_abi_version, coinmech_plugin *out, const coinmech_plugin *mine) {
    if (!out) return -1;
    /* Version and size come first in every ABI: always written, so any host can say what it found. */
    size_t room = out->size < 2 * sizeof(uint32_t) ? 2 * sizeof(uint32_t) : out->size;
    size_t count = mine->size < room ? mine->size : room;
    memcpy(out, mine, count);
    out->size = (uint32_t)count;
    return COINMECH_ABI_MAJOR_OF(host_abi_version) == COINMECH_PLUGIN_ABI_MAJOR ? 0 : 1;
}

/** Copies src into a fixed field of dst_size bytes, cut and NUL-terminated. */
static inline void coinmech_copy_field(char *dst, size_t dst_size, const char *src) {
    if (dst_size == 0) return;
    size_t n = src ? strlen(src) : 0;
    if (n >= dst_size) n = dst_size - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

/** REJECT with a reason and a message, never past decision->size. */
static inline void coinmech_decision_reject(coinmech_decision *d, const char *reason, const char *message) {
    d->verdict = COINMECH_VERDICT_REJECT;
    if (COINMECH_HAS_FIELD(d, coinmech_decision, reason)) coinmech_copy_field(d->reason, sizeof d->reason, reason);
    if (COINMECH_HAS_FIELD(d, coinmech_decision, message)) coinmech_copy_field(d->message, sizeof d->message, message);
}

/** ACCEPT as `code` of `currency` worth `value_minor`, never past decision->size. */
static inline void coinmech_decision_accept(coinmech_decision *d, const char *currency, const char *code,
                                            int64_t value_minor) {
    d->verdict = COINMECH_VERDICT_ACCEPT;
    d->value_minor = value_minor;
    if (COINMECH_HAS_FIELD(d, coinmech_decision, currency)) coinmech_copy_field(d->currency, sizeof d->currency, currency);
    if (COINMECH_HAS_FIELD(d, coinmech_decision, code)) coinmech_copy_field(d->code, sizeof d->code, code);
}

/** A line in the daemon's log, if the host gives a log service. */
static inline void coinmech_log(const coinmech_host *host, coinmech_log_level level, const char *message) {
    if (host && COINMECH_HAS_FIELD(host, coinmech_host, log) && host->log) host->log(host->context, (uint32_t)level, message);
}

#ifdef __cplusplus
}
#endif

#endif /* COINMECH_PLUGIN_H */
