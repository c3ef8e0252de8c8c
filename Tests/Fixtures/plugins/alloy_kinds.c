/*
 * A plugin declaring the reading kinds and ABI version it is built with (-DKINDS=…, -DABI=…), to
 * show which declarations of the alloy axis the host refuses. It passes every reading.
 */
#include <coinmech_plugin.h>
#include <stdlib.h>

#ifndef KINDS
#define KINDS (COINMECH_KINDS_MEASURED | COINMECH_KINDS_ALLOY)
#endif
#ifndef ABI
#define ABI COINMECH_PLUGIN_ABI_VERSION
#endif

static void *create(const coinmech_host *host, const char *config, char *error, size_t error_size) {
    (void)host; (void)config; (void)error; (void)error_size;
    return malloc(1);
}

static void validate(void *instance, const coinmech_reading *r, coinmech_decision *d) { (void)instance; (void)r; (void)d; }

static void destroy(void *instance) { free(instance); }

static const coinmech_plugin me = {
    .abi_version = ABI, .size = sizeof me, .name = "alloy-kinds", .version = "1.0.0", .license = "MIT",
    .description = "declares the reading kinds it is built with", .reading_kinds = KINDS,
    .create = create, .validate = validate, .destroy = destroy,
};

__attribute__((visibility("default"))) int coinmech_plugin_entry(uint32_t host_abi, coinmech_plugin *out) {
    return coinmech_plugin_offer(host_abi, out, &me);
}
