/*
 * A complete CoinMech validator plugin in C: accepts a US quarter, passes everything else.
 *
 *   cc -shared -fPIC -I<coinmech>/Sources/CoinMechPluginABI/include minimal.c -o libminimal.so
 */
#include <math.h>
#include <stdlib.h>
#include "coinmech_plugin.h"

static void *create(const char *config_json, char *error, size_t error_size) {
    (void)config_json; (void)error; (void)error_size;
    static int instance;  /* no per-instance state needed */
    return &instance;
}

static void validate(void *instance, const coinmech_reading *r, coinmech_decision *d) {
    (void)instance;
    const unsigned both = COINMECH_READING_HAS_DIAMETER | COINMECH_READING_HAS_WEIGHT;
    if ((r->flags & both) != both) return;                       /* not mine: pass */
    if (fabs(r->diameter_mm - 24.26) <= 1.2 && fabs(r->weight_g - 5.67) <= 0.28)
        coinmech_decision_accept(d, "USD", "quarter", 25);
}

static void destroy(void *instance) { (void)instance; }

int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    plugin->abi_version = COINMECH_PLUGIN_ABI_VERSION;
    plugin->size = sizeof *plugin;
    if (host_abi_version != COINMECH_PLUGIN_ABI_VERSION) return 1;
    plugin->name = "minimal";
    plugin->version = "1.0.0";
    plugin->create = create;
    plugin->validate = validate;
    plugin->destroy = destroy;
    plugin->describe = NULL;
    return 0;
}
