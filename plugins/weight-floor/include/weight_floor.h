#ifndef COINMECH_WEIGHT_FLOOR_H
#define COINMECH_WEIGHT_FLOOR_H
#include "coinmech_plugin.h"

/* The weight-floor plugin's entry point (exported as COINMECH_PLUGIN_ENTRY_SYMBOL). */
int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin);

#endif
