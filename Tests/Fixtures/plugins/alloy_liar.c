/*
 * A plugin that declares the alloy axis (COINMECH_KINDS_ALLOY) and breaks the promise, for
 * coinmech-pluginval's `alloy` check. It credits anything of a US quarter's size and weight.
 *     (default)    ignores the alloy: a quarter of no metal, or of impossible figures, is credited
 *     -DREADS_PAST reads the alloy fields without COINMECH_HAS_FIELD: past an ABI 2.0 host's
 *                  reading, and refuses a quarter whose low conductivity is below 1 % IACS
 */
#include <coinmech_plugin.h>
#include <stdlib.h>

static void *create(const coinmech_host *host, const char *config, char *error, size_t error_size) {
    (void)host; (void)config; (void)error; (void)error_size;
    return malloc(1);
}

static void validate(void *instance, const coinmech_reading *r, coinmech_decision *d) {
    (void)instance;
    if (!COINMECH_HAS_FIELD(r, coinmech_reading, weight_g)) return;
    if (!(r->flags & COINMECH_READING_HAS_DIAMETER) || !(r->flags & COINMECH_READING_HAS_WEIGHT)) return;
    if (!(r->diameter_mm > 24.0 && r->diameter_mm < 24.5 && r->weight_g > 5.4 && r->weight_g < 5.95)) return;
#ifdef READS_PAST
    volatile double low = r->conductivity_low_iacs;
    if ((r->flags & COINMECH_READING_HAS_ALLOY) && !(low >= 1)) {
        coinmech_decision_reject(d, "wrong_alloy", "not a quarter's metal");
        return;
    }
#endif
    coinmech_decision_accept(d, "USD", "quarter", 25);
}

static void destroy(void *instance) { free(instance); }

static const coinmech_plugin me = {
    .abi_version = COINMECH_PLUGIN_ABI_VERSION, .size = sizeof me, .name = "alloy-liar", .version = "1.0.0", .license = "MIT",
    .description = "declares the alloy axis and credits a US quarter's size and weight whatever its metal",
    .reading_kinds = COINMECH_KINDS_MEASURED | COINMECH_KINDS_ALLOY,
    .create = create, .validate = validate, .destroy = destroy,
};

__attribute__((visibility("default"))) int coinmech_plugin_entry(uint32_t host_abi, coinmech_plugin *out) {
    return coinmech_plugin_offer(host_abi, out, &me);
}
