/* A plugin built for a future ABI: the host must refuse it without calling it. */
#include "coinmech_plugin.h"
int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    (void)host_abi_version;
    plugin->abi_version = 99;
    plugin->size = sizeof *plugin;
    return 1;
}
