/* A plugin built for another ABI, -DFOUND=<version word>: 1 (ABI 1, as a plugin of that ABI
   answers a host of another: its version, its size, and a refusal), 0x20007 (ABI 2.7, newer than
   any host here: otherwise complete) or 0x30000 (ABI 3). The host must refuse it and call nothing. */
#include <stdlib.h>
#include "coinmech_plugin.h"

#ifndef FOUND
#define FOUND 1u
#endif

static void *create(const coinmech_host *host, const char *config, char *error, size_t size) {
    (void)host; (void)config; (void)error; (void)size;
    abort();  /* never called */
}
static void validate(void *ctx, const coinmech_reading *r, coinmech_decision *d) { (void)ctx; (void)r; (void)d; abort(); }
static void destroy(void *ctx) { (void)ctx; abort(); }

int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    plugin->abi_version = FOUND;
    plugin->size = FOUND == 1u ? 64u : (uint32_t)sizeof *plugin;
    if (COINMECH_ABI_MAJOR_OF(host_abi_version) != COINMECH_ABI_MAJOR_OF(FOUND)) return 1;
    plugin->name = "abi-mismatch";
    plugin->version = "0";
    plugin->license = "MIT-0";
    plugin->description = "built for a newer ABI";
    plugin->reading_kinds = COINMECH_KINDS_MEASURED;
    plugin->create = create;
    plugin->validate = validate;
    plugin->destroy = destroy;
    return 0;
}
