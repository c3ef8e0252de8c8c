/*
 * A complete CoinMech validator plugin in C (plugin ABI 2): accepts a US quarter, passes
 * everything else on to the next link. The one file docs/PLUGINS.md walks through.
 *
 *   cc -shared -fPIC -O2 -Wall -I<coinmech>/Sources/CoinMechPluginABI/include \
 *      -fvisibility=hidden minimal.c -o libminimal.so -lm
 *   coinmech-pluginval libminimal.so --strictness 10
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "coinmech_plugin.h"

/* One instance per chain link; a reload creates new ones while the old ones still decide,
   so everything an instance needs lives in its own struct. */
typedef struct quarter {
    double tolerance;            /* relative, per axis */
} quarter;

static void *create(const coinmech_host *host, const char *config_json, char *error, size_t error_size) {
    /* This plugin reads one optional key; a real one parses its JSON and names bad keys. */
    double tolerance = 0.05;
    const char *key = config_json ? strstr(config_json, "\"tolerance\"") : NULL;
    if (key && sscanf(key, "\"tolerance\" : %lf", &tolerance) != 1) {
        coinmech_copy_field(error, error_size, "key 'tolerance' must be a number");
        return NULL;
    }
    if (!(tolerance > 0 && tolerance <= 0.2)) {
        coinmech_copy_field(error, error_size, "key 'tolerance' must be above 0 and at most 0.2");
        return NULL;
    }
    quarter *self = malloc(sizeof *self);
    if (!self) {
        coinmech_copy_field(error, error_size, "out of memory");
        return NULL;
    }
    self->tolerance = tolerance;
    char line[96];
    snprintf(line, sizeof line, "quarter window ±%.1f %%", tolerance * 100);
    coinmech_log(host, COINMECH_LOG_INFO, line);  /* in the daemon's log, under the link's name */
    return self;
}

static void validate(void *instance, const coinmech_reading *r, coinmech_decision *d) {
    const quarter *self = instance;
    const unsigned both = COINMECH_READING_HAS_DIAMETER | COINMECH_READING_HAS_WEIGHT;
    if ((r->flags & both) != both) return;                        /* not mine: pass */
    /* NaN fails both comparisons, so it passes too (a sanity link rejects it). */
    if (fabs(r->diameter_mm - 24.26) <= 24.26 * self->tolerance && fabs(r->weight_g - 5.67) <= 5.67 * self->tolerance)
        coinmech_decision_accept(d, "USD", "quarter", 25);
}

static void destroy(void *instance) { free(instance); }

/* The plugin's description: the host copies what fits its own struct. */
static const coinmech_plugin minimal_plugin = {
    .abi_version = COINMECH_PLUGIN_ABI_VERSION,
    .size = sizeof(coinmech_plugin),
    .name = "minimal",
    .version = "1.0.0",
    .license = "MIT-0",
    .description = "accepts a US quarter inside a window of its diameter and weight",
    .reading_kinds = COINMECH_KINDS_MEASURED,
    .flags = COINMECH_PLUGIN_CONCURRENT_INSTANCES,  /* instances share nothing */
    .create = create,
    .validate = validate,
    .destroy = destroy,
};

/* The only exported symbol. */
__attribute__((visibility("default")))
int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    return coinmech_plugin_offer(host_abi_version, plugin, &minimal_plugin);
}
