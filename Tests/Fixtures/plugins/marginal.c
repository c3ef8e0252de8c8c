/* A quarter acceptor whose window is compiled in: -DTOLERANCE=0.05 (v1) or 0.01 (v2).
   A quarter measured 3 % off is accepted by one version and rejected by the other. */
#include <math.h>
#include "coinmech_plugin.h"

#ifndef TOLERANCE
#define TOLERANCE 0.05
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

static int instance;
static void *create(const coinmech_host *host, const char *config, char *error, size_t size) {
    (void)host; (void)config; (void)error; (void)size;
    return &instance;
}
static void destroy(void *ctx) { (void)ctx; }
static void validate(void *ctx, const coinmech_reading *r, coinmech_decision *d) {
    (void)ctx;
    if (fabs(r->diameter_mm - 24.26) <= 24.26 * TOLERANCE && fabs(r->weight_g - 5.67) <= 5.67 * TOLERANCE)
        coinmech_decision_accept(d, "USD", "quarter", 25);
    else
        coinmech_decision_reject(d, "outside_window", "outside the quarter window of " STR(TOLERANCE));
}

static const coinmech_plugin marginal = {
    .abi_version = COINMECH_PLUGIN_ABI_VERSION,
    .size = sizeof(coinmech_plugin),
    .name = "marginal",
    .version = "tolerance-" STR(TOLERANCE),
    .license = "MIT-0",
    .description = "a quarter window compiled in, for reload tests",
    .reading_kinds = COINMECH_KINDS_MEASURED,
    .create = create,
    .validate = validate,
    .destroy = destroy,
};

int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    return coinmech_plugin_offer(host_abi_version, plugin, &marginal);
}
